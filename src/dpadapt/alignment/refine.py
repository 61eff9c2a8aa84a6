"""PRIMA's target-side refinements live in :mod:`dpadapt.classstats.adapt` (shared with the
class-statistics family); this module only keeps the name list that ``dpadapt.cli.methods.prima`` imports."""

from dpadapt.classstats.adapt import REFINEMENTS

__all__ = ["REFINEMENTS"]
