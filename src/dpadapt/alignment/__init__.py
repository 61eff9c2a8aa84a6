"""Correlation / subspace alignment: CORAL, Subspace Alignment and PRIMA / PRISA (spec 04)."""

from dpadapt.alignment.coral import CORAL, coral_matrix
from dpadapt.alignment.estimators import PRIMA, PRISA
from dpadapt.alignment.prima import PrimaConfig, adapt, plan, predict_prima, release, release_target
from dpadapt.alignment.subspace import SubspaceAlignment, sa_bases

__all__ = [
    "CORAL",
    "PRIMA",
    "PRISA",
    "PrimaConfig",
    "SubspaceAlignment",
    "adapt",
    "coral_matrix",
    "plan",
    "predict_prima",
    "release",
    "release_target",
    "sa_bases",
]
