"""Calibration and Guarantee of the sound sufficient-statistics design (issue 23).

:func:`class_moments_plan` — σ of the ONE Gaussian release of per-class sums, counts and the pooled
second moment Σxxᵀ of unit-ball rows (:func:`dpadapt.privacy.mechanisms.class_moment_statistics`),
from dp-accounting's analytic Gaussian (Balle & Wang, ICML 2018, Thm. 8) at the plan's (ε, δ);
Δ = √6 replace-one, √3 add/remove (``CLASS_MOMENT_SENSITIVITY``, proved beside the constant). The
label set is public and part of the unit.
"""

from __future__ import annotations

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import Guarantee, analytic_gaussian_guarantee
from dpadapt.privacy.mechanisms import CLASS_MOMENT_SENSITIVITY

THEOREM = (
    "Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) on the joint vector of per-class sums, "
    "counts and the pooled second moment (upper triangle) of rows mapped by a public per-row map and clipped "
    "to the unit ball; ℓ2 sensitivity √6 (replace-one) / √3 (add/remove) whatever n; labels covered by the "
    "same release; the LDA / ridge classifier is post-processing (sufficient-statistics perturbation)"
)


def class_moments_plan(
    epsilon: float,
    delta: float,
    *,
    classes: tuple,
    party: str = "source",
    relation: accounting.Relation = "replace_one",
    extra_theorem: str = "",
) -> tuple[float, Guarantee]:
    """σ and the Guarantee of one class-moment release at (ε, δ) under ``relation``."""
    if relation not in CLASS_MOMENT_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(CLASS_MOMENT_SENSITIVITY)}")
    sensitivity = CLASS_MOMENT_SENSITIVITY[relation]
    sigma = accounting.analytic_gaussian_sigma(epsilon, delta, sensitivity)
    guarantee = analytic_gaussian_guarantee(
        epsilon, delta, sigma / sensitivity, party=party, unit="record", relation=relation,
        theorem=THEOREM + (f"; {extra_theorem}" if extra_theorem else ""), sensitivity=sensitivity,
        details={"sigma": sigma, "noise_multiplier": sigma / sensitivity,
                 "labels": f"protected (record = row and label); public label set of {len(classes)} classes",
                 "classes": list(classes)},
    )
    return sigma, guarantee
