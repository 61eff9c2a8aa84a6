"""Calibration and Guarantee of the sound sufficient-statistics design.

:func:`class_moments_plan` — σ of the ONE Gaussian release of per-class sums, counts and the pooled
second moment Σxxᵀ of unit-ball rows (:func:`dpadapt.privacy.mechanisms.class_moment_statistics`),
from dp-accounting's analytic Gaussian (Balle & Wang, ICML 2018, Thm. 8) at the plan's (ε, δ);
Δ = √6 replace-one, √3 add/remove (``CLASS_MOMENT_SENSITIVITY``, proved beside the constant). The
label set is public and part of the unit.
"""

from __future__ import annotations

from dpadapt.privacy.families.classstats import labelled_gaussian_plan
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import CLASS_MOMENT_SENSITIVITY

THEOREM = (
    "Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) on the joint vector of per-class sums, "
    "counts and the pooled second moment (upper triangle) of rows mapped by a public per-row map and clipped "
    "to the unit ball; ℓ2 sensitivity √6 (replace-one) / √3 (add/remove) whatever n; labels covered by the "
    "same release; the LDA / ridge classifier is post-processing (sufficient-statistics perturbation)"
)


def class_moments_plan(epsilon: float, delta: float, **options) -> tuple[float, Guarantee]:
    """σ and the Guarantee of one class-moment release at (ε, δ); ``options`` (``classes``, ``party``,
    ``relation``, ``extra_theorem``) as in :func:`~dpadapt.privacy.families.classstats.labelled_gaussian_plan`."""
    return labelled_gaussian_plan(epsilon, delta, sensitivities=CLASS_MOMENT_SENSITIVITY, theorem=THEOREM, **options)
