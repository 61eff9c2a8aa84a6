"""Non-private baselines: :class:`SourceOnly` (ours) and skada's own DA methods (:mod:`.skada_wrappers`).

skada is imported only when a skada baseline is asked for (``dpadapt.baselines.skada_baseline``).
"""

from __future__ import annotations

from typing import Any

from dpadapt.baselines.source_only import FlooredStandardScaler, SourceOnly

__all__ = ["FlooredStandardScaler", "SKADA_BASELINES", "SourceOnly", "skada_baseline"]

SKADA_BASELINES: tuple[str, ...] = ("coral", "subspace_alignment", "ot_mapping", "entropic_ot_mapping")


def skada_baseline(name: str, **kwargs: Any):
    """skada's non-private pipeline ``name`` (see :func:`dpadapt.baselines.skada_wrappers.make_baseline`)."""
    from dpadapt.baselines.skada_wrappers import make_baseline

    return make_baseline(name, **kwargs)
