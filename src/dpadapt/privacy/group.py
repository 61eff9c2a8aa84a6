"""Group privacy for a declared per-patient bound: the guarantee of a release when one patient has up to K rows.

A record-level guarantee protects one ROW. When a patient may have several rows (several stays or
visits), one patient changes up to K rows, and a release that is (ε, δ)-DP per row is only weaker per
patient. If every patient contributes at most K rows (contribution bounding: the data owner keeps at
most K rows per patient ID, a rule applied to each patient's own rows), one patient moves a sum of
per-row terms of sensitivity Δ by at most K·Δ (triangle inequality), so the same Gaussian noise σ is
a Gaussian mechanism of sensitivity K·Δ for that patient: its noise multiplier σ/(K·Δ) is the
per-row one divided by K (group privacy, Dwork & Roth 2014, §2.3; exact for Gaussian mechanisms,
whose privacy loss is Gaussian with mean and variance fixed by the multiplier: Dong, Roth & Su 2022).

:func:`group_guarantee` turns a per-row guarantee made of Gaussian mechanisms WITHOUT subsampling
(one analytic Gaussian, or full-batch composed Gaussians) into the per-patient one; releases with
subsampling (DP-SGD) or other mechanisms are refused, since their group loss does not follow from a
rescaled multiplier. :func:`per_row_epsilon` finds the per-row ε to plan at so that the per-patient
guarantee is the requested (ε, δ). Nothing here draws noise.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import dp_accounting

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import Accounting, Guarantee

THEOREM = ("group privacy: each patient contributes at most {k} row(s) (contribution bounding by patient ID), so one "
           "patient moves the released sums by at most {k}·Δ and the same noise is accounted at sensitivity {k}·Δ "
           "(Dwork & Roth 2014, §2.3; exact for Gaussian mechanisms)")


def scale_event(event: dp_accounting.DpEvent, k: int) -> dp_accounting.DpEvent | None:
    """``event`` with every Gaussian noise multiplier divided by ``k``; ``None`` if it holds anything else
    (subsampling, Laplace, randomized response ...), whose group loss this does not give."""

    def leaf(mechanism: dp_accounting.DpEvent) -> dp_accounting.DpEvent | None:
        if isinstance(mechanism, dp_accounting.GaussianDpEvent):
            return dp_accounting.GaussianDpEvent(mechanism.noise_multiplier / k)
        return mechanism if isinstance(mechanism, dp_accounting.NoOpDpEvent) else None

    return accounting.map_leaves(event, leaf)


def _single_gaussian_multiplier(events: tuple) -> float | None:
    """The effective multiplier z/√T of T composed Gaussians of multiplier z (one event), else ``None``."""
    if len(events) != 1:
        return None
    event = events[0]
    if isinstance(event, dp_accounting.GaussianDpEvent):
        return event.noise_multiplier
    if isinstance(event, dp_accounting.SelfComposedDpEvent) and isinstance(event.event, dp_accounting.GaussianDpEvent):
        return event.event.noise_multiplier / math.sqrt(event.count)
    return None


def group_guarantee(guarantee: Guarantee, rows_per_patient: int) -> Guarantee:
    """The per-patient guarantee of a per-row ``guarantee`` when each patient has at most ``rows_per_patient`` rows."""
    k = int(rows_per_patient)
    if k < 1:
        raise ValueError(f"the number of rows per patient must be ≥ 1, got {rows_per_patient}")
    if not guarantee.events:
        raise ValueError("this release records no accounting events, so its per-patient guarantee cannot be derived")
    scaled = tuple(scale_event(e, k) for e in guarantee.events)
    if any(e is None for e in scaled):
        raise ValueError("a per-patient bound (--rows-per-patient) is supported for releases made of Gaussian "
                         "mechanisms without subsampling (sound, dpot, classstats); this method's release uses "
                         "subsampling or another mechanism, whose per-patient loss does not follow from the bound")
    delta = guarantee.delta - guarantee.delta_extra
    z = _single_gaussian_multiplier(scaled)
    if z is not None and guarantee.accounting == Accounting.ANALYTIC_GAUSSIAN:
        epsilon = accounting.analytic_gaussian_epsilon(z, delta)
    else:
        epsilon = accounting.epsilon(accounting.compose(scaled), delta, guarantee.relation, "rdp")
        if guarantee.accounting == Accounting.ANALYTIC_GAUSSIAN:
            guarantee = dataclasses.replace(guarantee, accounting=Accounting.RDP)
    theorem = guarantee.theorem + "; " + THEOREM.format(k=k)
    details = {**guarantee.details, "rows_per_patient": k, "per_row_epsilon": guarantee.epsilon}
    if "noise_multiplier" in details:  # σ = z·Δ holds per patient too: z/k at sensitivity k·Δ (the per-row z kept beside)
        details.update(noise_multiplier=details["noise_multiplier"] / k, per_row_noise_multiplier=details["noise_multiplier"])
    return dataclasses.replace(
        guarantee, unit="patient", epsilon=float(epsilon), events=scaled, theorem=theorem, details=details,
        sensitivity=None if guarantee.sensitivity is None else k * guarantee.sensitivity,
    )


def per_row_epsilon(plan_at: Callable[[float], Guarantee], epsilon: float, rows_per_patient: int,
                    iterations: int = 60) -> float:
    """The largest per-row ε (to 1e-9 relative) whose plan has a per-patient ε ≤ ``epsilon``.

    ``plan_at(e)`` returns the per-row Guarantee the method plans at ε = e (its σ grows as e falls).
    """
    def fits(e: float) -> bool:
        return group_guarantee(plan_at(e), rows_per_patient).epsilon <= epsilon * (1 + 1e-12)

    if fits(epsilon):
        return epsilon
    lo, hi = math.log(epsilon) - 2 * math.log(rows_per_patient) - math.log(1e3), math.log(epsilon)
    if not fits(math.exp(lo)):
        raise ValueError(f"no per-row ε gives ε = {epsilon:g} per patient with {rows_per_patient} rows each")
    for _ in range(iterations):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(math.exp(mid)) else (lo, mid)
        if hi - lo < 1e-9:
            break
    return math.exp(lo)
