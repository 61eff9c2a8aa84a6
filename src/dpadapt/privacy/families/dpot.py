"""Guarantees of DPOT's per-row source release (LeTien, Habrard & Sebban 2019) and its measurements.

The calibration (σ, steps, the label budget) is done in :mod:`dpadapt.transport.dpot`; these
factories state what it supports. The source is the protected party; neighbours replace one row.

* :func:`rows_guarantee` — one analytic Gaussian release of the projected rows clipped to C
  (Balle & Wang 2018, Thm. 8; Δ = 2C‖M‖op), basic composition with the labels' randomized response.
* :func:`paper_rows_guarantee` — the published calibration (Kenthapadi et al. 2013, Thm. 1 with
  the max row norm of M); attribute-level and never valid.
* :func:`projection_error_guarantee` — the batches of the relative-error measurement (DPOT Fig. 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dp_accounting

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import PAPER_REASON, Guarantee


def _unit(labels: str) -> str:
    """Randomized-response labels are protected with the row; public labels leave only the features."""
    return "record" if labels == "rr" else "record_features"


def rows_guarantee(
    epsilon: float, delta: float, *, labels: str, feature_epsilon: float, events: Sequence[dp_accounting.DpEvent],
    label_words: str, sensitivity: float, details: dict[str, Any],
) -> Guarantee:
    """One analytic Gaussian release of the rows (at ``feature_epsilon``) with the labels' events."""
    return Guarantee(
        party="source",
        unit=_unit(labels),
        relation="replace_one",
        epsilon=epsilon if labels == "rr" else feature_epsilon,
        delta=delta,
        events=tuple(events),
        accounting="basic_composition" if len(events) > 1 else "analytic_gaussian",
        theorem=(
            "Analytic Gaussian mechanism (Balle & Wang 2018, Thm. 8) on rows clipped to C, "
            "Δ = 2C‖M‖op; " + label_words + "; basic composition"
        ),
        sensitivity=sensitivity,
        details=details,
    )


def paper_rows_guarantee(
    feature_epsilon: float, label_epsilon: float, delta: float, *, events: Sequence[dp_accounting.DpEvent],
    relation: accounting.Relation, how: str, reasons: Sequence[str], sensitivity: float, details: dict[str, Any],
) -> Guarantee:
    """The published guarantee (features + Laplace label histogram, composed basically); flagged invalid."""
    return Guarantee(
        party="source",
        unit="attribute",
        relation=relation,
        epsilon=feature_epsilon + label_epsilon,
        delta=delta,
        events=tuple(events),
        accounting=how,
        theorem="Kenthapadi et al. 2013 Thm. 1 with w = max row norm of M (LeTien et al. 2019 Thms. 2–3)",
        mode="paper",
        valid=False,
        reasons=(*reasons, PAPER_REASON),
        sensitivity=sensitivity,
        details=details,
    )


def projection_error_guarantee(
    noise_multiplier: float, n: int, batch_size: int, batches: int, delta: float, *, privacy_mode: str,
    sensitivity: float,
) -> Guarantee:
    """``batches`` Gaussian projections of batches of the source (features only; labels are not released).

    Sound: fixed-size batches without replacement, replace-one, RDP (WBK19). Paper: the published
    accounting (Poisson moments accountant, add/remove, attribute-level), flagged invalid.
    """
    if privacy_mode == "sound":
        return Guarantee.from_event(
            accounting.sampled_without_replacement_gaussian_event(noise_multiplier, n, batch_size, batches),
            party="source", unit="record", relation="replace_one", delta=delta,
            theorem="WBK19 RDP, features only (labels not released)", sensitivity=sensitivity,
        )
    return Guarantee.from_event(
        accounting.poisson_gaussian_event(noise_multiplier, batch_size / n, batches),
        party="source", unit="attribute", relation="add_remove", delta=delta, mode="paper",
        theorem="Kenthapadi et al. 2013 + Poisson moments accountant (paper)",
        reasons=("attribute-level unit; rows unbounded",), sensitivity=sensitivity,
    )
