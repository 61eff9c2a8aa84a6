"""Correlation / subspace alignment: CORAL, Subspace Alignment and PRIMA / PRISA (spec 04)."""

from dpadapt.alignment.coral import CORAL, coral_matrix
from dpadapt.alignment.estimators import PRIMA, PRISA
from dpadapt.alignment.prima import (
    adapt_prima_source,
    predict_prima,
    release_prima_target,
)
from dpadapt.alignment.subspace import SubspaceAlignment, sa_bases

__all__ = [
    "CORAL",
    "PRIMA",
    "PRISA",
    "SubspaceAlignment",
    "adapt_prima_source",
    "coral_matrix",
    "predict_prima",
    "release_prima_target",
    "sa_bases",
]
