"""Private discrepancy minimisation from a public source (Bassily, Mohri & Suresh, AISTATS 2023)."""

from dpadapt.discrepancy.core import (
    default_mu,
    discrepancy_matrix,
    gradient_sensitivity,
    pnorm_value_grad,
    second_moment,
    smoothing_gap,
    softmax_value,
    softmax_value_grad,
    source_radius,
    spectral_norm,
)
from dpadapt.discrepancy.estimator import DiscrepancyClassifier, DiscrepancyConfig, DiscrepancyRegressor
from dpadapt.discrepancy.family import adapt, plan, release
from dpadapt.discrepancy.nonprivate import minimize_discrepancy, project_simplex
from dpadapt.discrepancy.private import (
    PrivateResult,
    noisy_frank_wolfe,
    noisy_mirror_descent,
    single_stage_frank_wolfe,
)
from dpadapt.discrepancy.stage2 import weighted_regression

__all__ = [
    "DiscrepancyClassifier",
    "DiscrepancyConfig",
    "DiscrepancyRegressor",
    "PrivateResult",
    "default_mu",
    "discrepancy_matrix",
    "gradient_sensitivity",
    "minimize_discrepancy",
    "noisy_frank_wolfe",
    "noisy_mirror_descent",
    "pnorm_value_grad",
    "project_simplex",
    "second_moment",
    "single_stage_frank_wolfe",
    "smoothing_gap",
    "softmax_value",
    "softmax_value_grad",
    "source_radius",
    "spectral_norm",
    "weighted_regression",
]
