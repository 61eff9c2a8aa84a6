"""Calibration and Guarantees of the class-statistics family (and of the target's basis disclosure).

* :func:`class_statistics_plan` — σ of the ONE Gaussian release of per-class sums and counts of
  unit-ball rows (:func:`dpadapt.privacy.mechanisms.class_statistics`), from dp-accounting's
  analytic Gaussian (Balle & Wang, ICML 2018, Thm. 8) at the plan's (ε, δ); Δ = 2 replace-one,
  √2 add/remove (``CLASS_STATISTICS_SENSITIVITY``). The label set is public and part of the unit.
* :func:`adassp_plan` — σ of the ONE Gaussian release of per-class sums, counts and the pooled second
  moment (Δ = √6 replace-one) behind DP least squares, and of the optional second Gaussian on
  λ_min(Σxxᵀ) (Δ = 1) that sets AdaSSP's ridge; the two compose exactly into one Gaussian at (ε, δ).
* :func:`basis_disclosure` — the honest record of a release from a party that is *not protected*
  in the setting (DPOT's target): ε = ∞, ``valid=False``, the reason stated. It is not a DP claim.
"""

from __future__ import annotations

import dataclasses
import math

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import ADD_REMOVE_N_PRIVATE, Guarantee, analytic_gaussian_guarantee, closed_form_guarantee
from dpadapt.privacy.mechanisms import (
    CLASS_MOMENT_SENSITIVITY,
    CLASS_STATISTICS_SENSITIVITY,
    FAST_SAMPLER_WORDS,
    MIN_EIGENVALUE_SENSITIVITY,
)

THEOREM = (
    "Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) on the joint vector of per-class "
    "sums and counts of rows mapped by a public per-row map and clipped to the unit ball; "
    "ℓ2 sensitivity 2 (replace-one) / √2 (add/remove) whatever n; labels covered by the same release"
)

#: Why the target's basis costs the target nothing *in DPOT's setting*.
BASIS_REASON = (
    "disclosed by the target, which is not protected in DPOT's setting (only the labelled source is): "
    "the mean and top-k principal directions of the target's own rows are sent in the clear; they do "
    "not depend on source data, so for the source they are a fixed public per-row map"
)


def class_statistics_plan(epsilon: float, delta: float, **options) -> tuple[float, Guarantee]:
    """σ and the Guarantee of one class-statistics release at (ε, δ); ``options`` (``classes``, ``party``,
    ``relation``, ``extra_theorem``) as in :func:`labelled_gaussian_plan`."""
    return labelled_gaussian_plan(epsilon, delta, sensitivities=CLASS_STATISTICS_SENSITIVITY, theorem=THEOREM, **options)


def labelled_gaussian_plan(
    epsilon: float,
    delta: float,
    *,
    sensitivities: dict,
    theorem: str,
    classes: tuple,
    party: str = "source",
    relation: accounting.Relation = "replace_one",
    extra_theorem: str = "",
) -> tuple[float, Guarantee]:
    """σ and Guarantee of ONE analytic Gaussian on labelled sums of Δ = ``sensitivities[relation]``.

    The record is a row with its label, from a public label set ``classes``; shared by the
    class-statistics and the class-moment (:mod:`dpadapt.privacy.families.sound`) releases.
    """
    if relation not in sensitivities:
        raise ValueError(f"relation must be one of {tuple(sensitivities)}")
    sensitivity = sensitivities[relation]
    sigma = accounting.analytic_gaussian_sigma(epsilon, delta, sensitivity)
    guarantee = analytic_gaussian_guarantee(
        epsilon,
        delta,
        sigma / sensitivity,
        party=party,
        unit="record",
        relation=relation,
        theorem=theorem + (f"; {extra_theorem}" if extra_theorem else ""),
        sensitivity=sensitivity,
        details={
            "sigma": sigma,
            "noise_multiplier": sigma / sensitivity,
            "labels": f"protected (record = row and label); public label set of {len(classes)} classes",
            "classes": list(classes),
            **({"dataset_size": ADD_REMOVE_N_PRIVATE} if relation == "add_remove" else {}),
        },
    )
    return sigma, guarantee


def basis_disclosure(party: str = "target") -> Guarantee:
    """The record of the unprotected target's basis: ε = ∞, not a DP claim, and why that is acceptable."""
    return dataclasses.replace(Guarantee.non_private(party, BASIS_REASON), details={"disclosed": "its basis"})


def is_disclosure(guarantee: Guarantee) -> bool:
    """Whether a guarantee is a non-private disclosure (ε = ∞)."""
    return math.isinf(guarantee.epsilon)


GD_THEOREM = (
    "full-batch noisy gradient descent: T Gaussian releases of the sum of per-example gradients, each "
    "clipped to ℓ2 norm C (Δ = 2C replace-one, C add/remove); T Gaussians of noise multiplier z compose "
    "exactly into one Gaussian of multiplier z/√T (Dong, Roth & Su 2022, Cor. 3.3), calibrated with the "
    "analytic Gaussian (Balle & Wang 2018, Thm. 8); " + FAST_SAMPLER_WORDS
)


def noisy_gd_plan(
    epsilon: float,
    delta: float,
    *,
    steps: int,
    clip: float,
    classes: tuple,
    relation: accounting.Relation = "replace_one",
    party: str = "source",
) -> tuple[float, Guarantee]:
    """σ per step and the Guarantee of ``steps`` full-batch noisy gradient sums at (ε, δ) in total."""
    if steps < 1:
        raise ValueError("steps must be ≥ 1")
    sensitivity = (2.0 if relation == "replace_one" else 1.0) * clip
    z_single = accounting.analytic_gaussian_sigma(epsilon, delta, 1.0)
    z = z_single * math.sqrt(steps)
    guarantee = analytic_gaussian_guarantee(
        epsilon,
        delta,
        z,
        steps=steps,
        party=party,
        unit="record",
        relation=relation,
        theorem=GD_THEOREM,
        sensitivity=sensitivity,
        details={"sigma": z * sensitivity, "noise_multiplier": z, "steps": steps, "clip": clip,
                 "labels": f"protected; public label set of {len(classes)} classes", "classes": list(classes)},
    )
    return z * sensitivity, guarantee


ADASSP_THEOREM = (
    "AdaSSP (Wang, NeurIPS 2018, Alg. 2) with exact composition: ONE analytic Gaussian on the joint vector of "
    "per-class sums, counts and the pooled second moment Σxxᵀ (upper triangle) of rows mapped by a public per-row map "
    "and clipped to the unit ball (ℓ2 sensitivity √6 replace-one / √3 add/remove, whatever n), and, when a share of "
    "the budget goes to it, a second Gaussian on λ_min(Σxxᵀ) (sensitivity 1, Weyl's inequality); Gaussians of noise "
    "multipliers z₁, z₂ compose exactly into one Gaussian of multiplier (z₁⁻² + z₂⁻²)^(−1/2) (Gaussian DP; Dong, "
    "Roth & Su 2022, Cor. 3.3), calibrated with the analytic Gaussian (Balle & Wang 2018, Thm. 8); labels covered "
    "by the same release; the ridge classifier is post-processing"
)


def adassp_plan(
    epsilon: float,
    delta: float,
    *,
    classes: tuple,
    eigen_share: float = 0.0,
    relation: accounting.Relation = "replace_one",
    party: str = "source",
    extra_theorem: str = "",
) -> tuple[float, float | None, Guarantee]:
    """σ of the class-moment release, σ of the λ_min release (``None`` without one) and their Guarantee at (ε, δ).

    The one-release multiplier z = σ/Δ of the analytic Gaussian at (ε, δ) is split in Gaussian DP's currency
    μ² = 1/z²: the λ_min release gets ``eigen_share`` of it (z/√share), the moments the rest (z/√(1 − share)),
    so the pair is exactly one Gaussian of multiplier z — (ε, δ)-DP, as the composed dp-accounting events
    (PLD) confirm. ``eigen_share = 0``: no λ_min release, every bit of the budget on the moments.
    """
    if not 0.0 <= eigen_share < 1.0:
        raise ValueError(f"eigen_share must be in [0, 1), got {eigen_share!r}")
    if relation not in CLASS_MOMENT_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(CLASS_MOMENT_SENSITIVITY)}")
    z = accounting.analytic_gaussian_sigma(epsilon, delta, 1.0)
    z_moments = z / math.sqrt(1.0 - eigen_share)
    sensitivity = CLASS_MOMENT_SENSITIVITY[relation]
    events = [accounting.gaussian_event(z_moments)]
    details = {"sigma": z_moments * sensitivity, "noise_multiplier": z, "moments_noise_multiplier": z_moments,
               "eigen_share": eigen_share, "labels": f"protected (record = row and label); public label set of "
               f"{len(classes)} classes", "classes": list(classes)}
    sigma_eigen = None
    if eigen_share > 0.0:
        z_eigen = z / math.sqrt(eigen_share)
        sigma_eigen = z_eigen * MIN_EIGENVALUE_SENSITIVITY[relation]
        events.append(accounting.gaussian_event(z_eigen))
        details.update(sigma_min_eigenvalue=sigma_eigen, min_eigenvalue_noise_multiplier=z_eigen)
    guarantee = closed_form_guarantee(
        float(epsilon), float(delta), events=tuple(events), accounting="analytic_gaussian", party=party, unit="record",
        relation=relation, theorem=ADASSP_THEOREM + (f"; {extra_theorem}" if extra_theorem else ""),
        sensitivity=sensitivity, details=details,
    )
    return z_moments * sensitivity, sigma_eigen, guarantee
