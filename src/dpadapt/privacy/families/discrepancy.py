"""Guarantees of the private discrepancy-minimisation family (Bassily, Mohri & Suresh, AISTATS 2023).

The calibration (τ*, ε₀, the Laplace or Gaussian scale) is done in
:mod:`dpadapt.discrepancy.private`; these factories state what it supports. The target is the
protected party, one target row is the unit, neighbours replace one row (n public).

* :func:`rnm_steps_guarantee` — K report-noisy-min steps, each ε₀-DP and accounted as binary
  randomized response RR(ε₀) (Kairouz, Oh & Viswanath 2015) by dp-accounting's RDP accountant.
* :func:`rnm_steps_paper_guarantee` — the published procedure: advanced composition of the K
  steps (Dwork, Rothblum & Vadhan 2010); never valid.
* :func:`gaussian_steps_guarantee` — K full-gradient Gaussian releases (Alg. 3), RDP.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dp_accounting

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import PAPER_REASON, Guarantee

#: What the K steps of report-noisy-min protect.
_TARGET = {"party": "target", "unit": "record", "relation": "replace_one"}


def rnm_steps_guarantee(
    event: dp_accounting.DpEvent, delta: float, *, theorem: str, sensitivity: float,
    reasons: Sequence[str] = (), details: dict[str, Any],
) -> Guarantee:
    """Sound K-step report-noisy-min: ε of ``event`` (K RR(ε₀) events) at ``delta`` by RDP."""
    return Guarantee.from_event(
        event, **_TARGET, delta=delta, theorem=theorem, method="rdp", reasons=tuple(reasons),
        sensitivity=sensitivity, details=details,
    )


def rnm_steps_paper_guarantee(
    event: dp_accounting.DpEvent, epsilon0: float, steps: int, delta: float, *, theorem: str, sensitivity: float,
    monotone: bool, reasons: Sequence[str] = (), details: dict[str, Any],
) -> Guarantee:
    """The published K-step procedure: advanced composition of K ε₀-DP steps; flagged invalid."""
    eps_total, delta_total = accounting.advanced_composition(epsilon0, 0.0, steps, delta)
    return Guarantee(
        **_TARGET, epsilon=eps_total, delta=delta_total, events=(event,), accounting="advanced_composition",
        theorem=theorem, mode="paper", valid=False,
        reasons=(
            PAPER_REASON,
            *(("per-step privacy argued for report-noisy-max of monotone queries; ∇F̃ is not monotone in T",)
              if monotone else ()),
            *reasons,
        ),
        sensitivity=sensitivity, details=details,
    )


def gaussian_steps_guarantee(
    noise_multiplier: float, steps: int, delta: float, *, theorem: str, privacy_mode: str, sensitivity: float,
    details: dict[str, Any],
) -> Guarantee:
    """K Gaussian gradient releases of noise multiplier z, accounted by RDP (paper mode: flagged)."""
    return Guarantee.from_event(
        accounting.gaussian_event(noise_multiplier, steps), **_TARGET, delta=delta, theorem=theorem, method="rdp",
        mode=privacy_mode, sensitivity=sensitivity, details=details,
    )
