"""Guarantees of the private discrepancy-minimisation family (Bassily, Mohri & Suresh, AISTATS 2023).

The calibration (τ*, ε₀, the Laplace or Gaussian scale) is done in
:mod:`dpadapt.discrepancy.private`; these factories state what it supports. The target is the
protected party, one target row is the unit, neighbours replace one row (n public).

* :func:`rnm_steps_guarantee` — K report-noisy-min steps, each ε₀-DP and accounted as binary
  randomized response RR(ε₀) (Kairouz, Oh & Viswanath 2015) by dp-accounting's RDP accountant.
* :func:`rnm_steps_paper_guarantee` — the published procedure, marked by what the code does: the
  published Laplace scale on the clipped rows is ε₀ = 2τ*/scale per step, K steps by RDP (the paper's
  advanced-composition figure kept beside it); valid unless the published selection or δ say otherwise.
* :func:`gaussian_steps_guarantee` — K full-gradient Gaussian releases (Alg. 3), RDP (either mode's σ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import dp_accounting

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import Guarantee

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
    scale: float, true_sensitivity: float, paper_epsilon0: float, steps: int, delta: float, *, n: int, theorem: str,
    reasons: Sequence[str] = (), details: dict[str, Any],
) -> Guarantee:
    """The published K-step procedure, marked by what the code does.

    Paper mode draws Laplace noise of the published ``scale`` on scores whose true ℓ∞ sensitivity is τ*
    (the target rows are clipped to r in both modes), so each step is ε₀-DP with ε₀ = 2τ*/scale
    (report-noisy-min on non-monotone scores, Dwork & Roth Claim 3.9) and the K steps are accounted,
    like the sound mode's, as K RR(ε₀) events by RDP. The result is valid unless ``reasons`` (e.g. the
    published argmin-of-gap selection) or δ ≥ 1/n say otherwise; the paper's own advanced-composition
    figure is kept in ``details["published_epsilon"]``.
    """
    eps0 = 2.0 * true_sensitivity / scale
    event = dp_accounting.SelfComposedDpEvent(accounting.randomized_response_event(eps0, 2), steps)
    published, published_delta = accounting.advanced_composition(paper_epsilon0, 0.0, steps, delta)
    return Guarantee.from_event(
        event, **_TARGET, delta=delta, theorem=theorem, method="rdp", reasons=tuple(reasons) + _large_delta(delta, n),
        sensitivity=true_sensitivity,
        details={**details, "privacy_mode": "paper", "epsilon0": eps0, "paper_epsilon0": paper_epsilon0,
                 "published_epsilon": published, "published_delta": published_delta,
                 "as_run": "the published noise scale on the clipped rows, each step ε₀ = 2τ*/scale, K steps by RDP"},
    )


def _large_delta(delta: float, n: int) -> tuple[str, ...]:
    return (f"δ = {delta:g} ≥ 1/n = {1.0 / n:g}: allows publishing a whole record",) if delta * n >= 1.0 else ()


def gaussian_steps_guarantee(
    noise_multiplier: float, steps: int, delta: float, *, n: int, theorem: str, privacy_mode: str, sensitivity: float,
    details: dict[str, Any],
) -> Guarantee:
    """K Gaussian gradient releases of noise multiplier z (σ over the tight ℓ2 sensitivity √m·τ* of the
    clipped rows), accounted by RDP. In paper mode σ is the published one and the ε is what RDP gives for
    it: the code clips the rows and draws that σ, so the guarantee is marked by what it does —
    valid unless δ ≥ 1/n."""
    paper = privacy_mode == "paper"
    return Guarantee.from_event(
        accounting.gaussian_event(noise_multiplier, steps), **_TARGET, delta=delta, theorem=theorem, method="rdp",
        sensitivity=sensitivity, reasons=_large_delta(delta, n) if paper else (),
        details={**details, **({"privacy_mode": "paper", "as_run": "the published σ on the clipped rows, accounted by RDP"}
                              if paper else {})},
    )
