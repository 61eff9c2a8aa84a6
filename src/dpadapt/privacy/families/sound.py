"""Calibration and Guarantee of the sound sufficient-statistics design.

:func:`class_moments_plan` — σ of the ONE Gaussian release of per-class sums, counts and the pooled
second moment Σxxᵀ of unit-ball rows (:func:`dpadapt.privacy.mechanisms.class_moment_statistics`),
from dp-accounting's analytic Gaussian (Balle & Wang, ICML 2018, Thm. 8) at the plan's (ε, δ);
Δ = √6 replace-one, √3 add/remove (``CLASS_MOMENT_SENSITIVITY``, proved beside the constant). The
label set is public and part of the unit.

:func:`score_histogram_plan` — σ of the second, calibrating release (per-class histograms of the receiver's fitted
model's scores on the source's rows, :func:`dpadapt.privacy.mechanisms.release_score_histogram`); Δ = √2 replace-one,
1 add/remove. :func:`split_budget` splits one (ε, δ) between the two releases so that they compose exactly into it
(:func:`composed_guarantee`).
"""

from __future__ import annotations

import math

from dpadapt.privacy import accounting
from dpadapt.privacy.families.classstats import labelled_gaussian_plan
from dpadapt.privacy.guarantee import ADD_REMOVE_N_PRIVATE, Guarantee, closed_form_guarantee
from dpadapt.privacy.mechanisms import CANDIDATE_HISTOGRAM_SENSITIVITY, CLASS_MOMENT_SENSITIVITY, SCORE_HISTOGRAM_SENSITIVITY
from dpadapt.validation import check_epsilon

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


SCORE_THEOREM = (
    "Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) with vetted discrete Gaussian noise on the (K, B) "
    "table of counts of the source's rows by (label, bin of a public score): the receiver's fitted model — "
    "post-processing of the first release and of the receiver's own rows — scored on each row and binned at public "
    "edges; every row adds one count to one cell whatever its values, so the ℓ2 sensitivity is √2 (replace-one) / 1 "
    "(add/remove) whatever n and whatever the model; labels covered by the same release"
)
SPLIT_THEOREM = (
    "two Gaussian releases of the same rows — the class statistics (multiplier z₁) and the per-class score "
    "histograms (multiplier z₂) — compose exactly into one Gaussian of multiplier (z₁⁻² + z₂⁻²)^(−1/2) (Dong, Roth & "
    "Su 2022, Cor. 3.3), whose (ε, δ) is the analytic Gaussian's (Balle & Wang 2018, Thm. 8)"
)


def score_histogram_plan(epsilon: float, delta: float, *, classes: tuple, num_bins: int,
                         relation: accounting.Relation = "replace_one", layout: str | None = None) -> tuple[float, Guarantee]:
    """σ and the Guarantee of one release of the (K, ``num_bins``) per-class score histograms at (ε, δ), Δ =
    :data:`~dpadapt.privacy.mechanisms.SCORE_HISTOGRAM_SENSITIVITY` under ``relation`` (the label set ``classes`` public;
    ``layout``: the request's words for its cells, e.g. predicted class × confidence bins — any layout in which a row
    adds one count to one cell has that Δ)."""
    what = layout or f"{num_bins} bins"
    return labelled_gaussian_plan(epsilon, delta, sensitivities=SCORE_HISTOGRAM_SENSITIVITY, theorem=SCORE_THEOREM,
                                  classes=classes, relation=relation, extra_theorem=f"the receiver's score request: {what}")


def split_budget(epsilon: float, delta: float, share: float) -> tuple[float, float]:
    """(ε₁, ε₂) at δ of the two releases when a total (ε, δ) is split in Gaussian DP's currency μ² = 1/z²: the score
    histograms get ``share`` of it (multiplier z/√share), the class statistics the rest (z/√(1 − share)), z the
    analytic Gaussian's multiplier at (ε, δ). The two compose exactly into one Gaussian of multiplier z
    (:data:`SPLIT_THEOREM`), i.e. (ε, δ)."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"the score histograms' share of the budget must be in (0, 1), got {share!r}")
    z = accounting.analytic_gaussian_sigma(epsilon, delta, 1.0)
    return (accounting.analytic_gaussian_epsilon(z / math.sqrt(1.0 - share), delta),
            accounting.analytic_gaussian_epsilon(z / math.sqrt(share), delta))


def composed_guarantee(first: Guarantee, second: Guarantee) -> Guarantee:
    """The source's guarantee for both releases (each one analytic Gaussian at the same δ): one Gaussian of multiplier
    (z₁⁻² + z₂⁻²)^(−1/2), its ε computed from the multipliers actually used (:data:`SPLIT_THEOREM`); the two
    dp-accounting events are kept, so a ledger composes them with anything else."""
    z1, z2 = float(first.details["noise_multiplier"]), float(second.details["noise_multiplier"])
    if first.delta != second.delta or first.relation != second.relation:
        raise ValueError("the two releases must share δ and the neighbouring relation")
    z = (z1**-2 + z2**-2) ** -0.5
    return closed_form_guarantee(
        accounting.analytic_gaussian_epsilon(z, first.delta), first.delta, party=first.party, unit=first.unit,
        relation=first.relation, accounting="analytic_gaussian", theorem=f"{SPLIT_THEOREM}: {first.theorem} + {second.theorem}",
        events=(*first.events, *second.events), details={"noise_multiplier": z, "statistics_noise_multiplier": z1,
                                                         "score_noise_multiplier": z2, "composed_of": 2},
    )


SELECTION_THEOREM = (
    "Laplace mechanism (Dwork, McSherry, Nissim & Smith 2006) with vetted discrete Laplace noise (Canonne, Kamath & "
    "Steinke 2020) on the (K, M) table of counts of the source's rows by (label, nearest of the receiver's M public "
    "candidates): every row adds one count to one cell whatever its values, so the ℓ1 sensitivity is 2 (replace-one) / "
    "1 (add/remove) whatever n and d; ε-DP with δ = 0; labels covered by the same release; report-noisy-max per class "
    "(Dwork & Roth 2014, Claim 3.9) and the receiver's matching of classes to candidates are post-processing"
)


def candidate_histogram_plan(epsilon: float, *, classes: tuple, num_candidates: int,
                             relation: accounting.Relation = "replace_one", extra_theorem: str = "") -> tuple[float, Guarantee]:
    """The Laplace scale b = Δ₁/ε and the pure ε-DP Guarantee of one release of the (K, ``num_candidates``) table of
    counts by (label, nearest candidate) (:func:`dpadapt.privacy.mechanisms.release_candidate_histogram`); Δ₁ =
    :data:`~dpadapt.privacy.mechanisms.CANDIDATE_HISTOGRAM_SENSITIVITY` under ``relation``, the label set public."""
    if relation not in CANDIDATE_HISTOGRAM_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(CANDIDATE_HISTOGRAM_SENSITIVITY)}")
    check_epsilon(epsilon)
    sensitivity = CANDIDATE_HISTOGRAM_SENSITIVITY[relation]
    scale = sensitivity / float(epsilon)
    theorem = SELECTION_THEOREM + f"; {num_candidates} candidates" + (f"; {extra_theorem}" if extra_theorem else "")
    guarantee = closed_form_guarantee(
        float(epsilon), 0.0, party="source", unit="record", relation=relation, accounting="pure",
        events=(accounting.laplace_event(1.0 / float(epsilon)),), theorem=theorem, sensitivity=sensitivity,
        details={"scale": scale, "num_candidates": int(num_candidates),
                 "labels": f"protected (record = row and label); public label set of {len(classes)} classes",
                 "classes": list(classes), **({"dataset_size": ADD_REMOVE_N_PRIVATE} if relation == "add_remove" else {})},
    )
    return scale, guarantee
