"""Privacy accounting on top of Google's ``dp-accounting``.

Every ε reported by dpadapt and every σ it calibrates goes through this module, which
delegates the mathematics to ``dp_accounting`` (RDP by default, PLD where every event supports
it). Nothing here re-derives an RDP formula.

Conventions
-----------
* A :class:`~dp_accounting.GaussianDpEvent` carries the *noise multiplier* σ/Δ, where Δ is the
  ℓ2 sensitivity of the released quantity **under the neighbouring relation declared for it**
  (``"add_remove"`` or ``"replace_one"``). A Laplace event likewise carries b/Δ₁.
* ``"replace_one"`` goes with fixed-size sampling without replacement (row-wise releases), with
  randomized response on labels (one record's label is replaced) and with Poisson subsampling
  (DP-SGD); ``"add_remove"`` with Poisson subsampling too.
* For ``replace_one``, RDP is computed with ``NeighboringRelation.REPLACE_ONE`` (Gaussian and
  Laplace RDP curves do not depend on the relation once Δ is expressed for it; the
  sampled-without-replacement bound of Wang, Balle & Kasiviswanathan, AISTATS 2019, and
  randomized response need it). PLD is used for ``replace_one`` when every event is a plain
  Gaussian/Laplace event (then the relation is already folded into Δ and the add/remove PLD of
  the same multiplier applies).
* **Poisson subsampling under ``replace_one``** (DP-SGD): dp-accounting's RDP
  accountant has no replace-one analysis of it, its PLD accountant has (``REPLACE_ONE``: the
  record's contribution v to the sampled sum is replaced by v′, ‖v‖, ‖v′‖ ≤ C, each sampled
  with probability q — the mixtures q·N(C, σ²) + (1−q)·N(0, σ²) against q·N(−C, σ²) + (1−q)·N(0, σ²)).
  Such an event carries σ/C, C the bound on one record's contribution (DP-SGD's clip), exactly
  as under add/remove; the plain Gaussian events composed with it keep σ/Δ_replace and are handed
  to the ``REPLACE_ONE`` PLD with their multiplier doubled (that accountant reads a plain Gaussian
  as a shift of ±1, i.e. Δ_replace = 2). ``method="rdp"`` falls back to this PLD, since RDP cannot
  account the event (:func:`resolve_method`).
* PLD searches (σ, steps) run on coarser discretisations first (:data:`PLD_SEARCH_INTERVALS`; the
  pessimistic PLD bounds ε from above at every discretisation); the ε stated is the one at
  :data:`PLD_INTERVAL`, checked against the budget.
"""

from __future__ import annotations

import collections
import enum
import logging
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from dpadapt.validation import check_delta, check_epsilon

if TYPE_CHECKING:  # dp-accounting (with SciPy ~1.5 s of start-up) is imported where an event is built or accounted
    import dp_accounting


class Accounting(enum.StrEnum):
    """How the ε of a :class:`~dpadapt.privacy.guarantee.Guarantee` was obtained (a ``str``, so ``g.accounting == "rdp"`` works)."""

    RDP = "rdp"  #: dp-accounting's RDP accountant (Mironov 2017) on the events
    PLD = "pld"  #: dp-accounting's privacy-loss-distribution accountant on the events
    ANALYTIC_GAUSSIAN = "analytic_gaussian"  #: exact single Gaussian release (Balle & Wang 2018, Thm. 8)
    KKMM = "kkmm"  #: Gaussian calibration of Kenthapadi et al. 2013, Thm. 1
    PURE = "pure"  #: a pure ε-DP mechanism (Laplace, randomized response, report-noisy-min)
    BASIC_COMPOSITION = "basic_composition"  #: Σε, Σδ (Dwork & Roth, Thm. 3.16)
    ADVANCED_COMPOSITION = "advanced_composition"  #: Dwork, Rothblum & Vadhan 2010
    GROUP_PRIVACY = "group_privacy"  #: add/remove (ε, δ) read as replace-one (2ε, (1+e^ε)δ)
    COMPOSITION = "composition"  #: an accountant on the events plus basic composition of closed-form parts
    NONE = "none"  #: no guarantee (non-private)


Relation = Literal["add_remove", "replace_one"]
Method = Literal["rdp", "pld", "auto"]

RELATIONS: tuple[str, ...] = ("add_remove", "replace_one")

#: RDP orders: dp-accounting's defaults extended to very large orders so that tiny ε
#: (strong noise) and huge step counts both convert tightly.
RDP_ORDERS: tuple[float, ...] = tuple(
    [1.0 + x / 20.0 for x in range(1, 100)] + list(range(6, 64)) + [64, 80, 96, 128, 192, 256, 512, 1024]
)


def _check_relation(relation: str) -> None:
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")


#: A subset of :data:`RDP_ORDERS` on which σ calibration first locates the optimal order cheaply
#: (quarter steps below 6, a geometric-ish subset of the integers up to 64, every order from 64):
#: the fractional orders below 2 cost most to evaluate.
COARSE_ORDERS: tuple[float, ...] = tuple(
    o for o in RDP_ORDERS
    if (o < 6 and float(o * 4).is_integer()) or o in (6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 56) or o >= 64
)


#: The PLD discretisation of every ε this module states (dp-accounting's default).
PLD_INTERVAL = 1e-4


#: The coarser PLD discretisations a σ or step search runs on, in turn (each from the previous answer): dp-accounting's
#: pessimistic PLD bounds ε from above at any discretisation, so each stage's answer is valid; the last is then checked
#: at :data:`PLD_INTERVAL`. A DP-SGD replace-one ε at q = 0.016, T = 1 260 (δ = 1e-5, ε ≈ 9.66) is 0.03 too high at
#: 1e-2 (~0.03 s), 3e-4 at 1e-3 (~0.2 s), against ~3 s at 1e-4.
PLD_SEARCH_INTERVALS: tuple[float, ...] = (1e-2, 1e-3)


def _drop_dp_accounting_records(record: logging.LogRecord) -> bool:
    return "dp_accounting" not in (record.pathname or "")


def _quiet_dp_accounting() -> None:
    """Drop dp-accounting's absl records (e.g. one ``_compute_log_a_frac failed to converge`` warning per RDP order it
    drops, hundreds per fit) before an accountant is built, for library users as for the CLI; other absl logging is
    left alone."""
    import absl.logging

    logger = absl.logging.get_absl_logger()
    if _drop_dp_accounting_records not in logger.filters:
        logger.addFilter(_drop_dp_accounting_records)


def _neighbours(relation: str):
    """dp-accounting's ``NeighboringRelation`` for our ``relation``."""
    import dp_accounting

    return {"add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
            "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE}[relation]


def _subsampled(event: dp_accounting.DpEvent) -> bool:
    """Whether ``event`` holds a Poisson-subsampled event."""
    import dp_accounting

    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        return True
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        return _subsampled(event.event)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return any(_subsampled(e) for e in event.events)
    return False


def map_leaves(event: dp_accounting.DpEvent,
               leaf: Callable[[dp_accounting.DpEvent], dp_accounting.DpEvent | None]) -> dp_accounting.DpEvent | None:
    """``event`` with every mechanism below its (self-)compositions replaced by ``leaf(mechanism)``; None if ``leaf``
    gives None for any of them."""
    import dp_accounting

    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = map_leaves(event.event, leaf)
        return None if inner is None else dp_accounting.SelfComposedDpEvent(inner, event.count)
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [map_leaves(e, leaf) for e in event.events]
        return None if any(p is None for p in parts) else dp_accounting.ComposedDpEvent(parts)
    return leaf(event)


def _replace_one_leaf(event: dp_accounting.DpEvent) -> dp_accounting.DpEvent | None:
    """One mechanism as dp-accounting's ``REPLACE_ONE`` PLD reads it (module docstring), or None if it cannot.

    A plain Gaussian of multiplier σ/Δ_replace becomes one of 2σ/Δ_replace (that accountant shifts a plain Gaussian
    by ±1); Poisson-subsampled events (σ/C) and randomized response are read as they are.
    """
    import dp_accounting

    if isinstance(event, dp_accounting.GaussianDpEvent):
        return dp_accounting.GaussianDpEvent(2.0 * event.noise_multiplier)
    if isinstance(event, (dp_accounting.PoissonSampledDpEvent, dp_accounting.RandomizedResponseDpEvent,
                          dp_accounting.NoOpDpEvent)):
        return event
    return None


def _prepared(event: dp_accounting.DpEvent, relation: str, method: str, orders: tuple[float, ...] = RDP_ORDERS,
              interval: float = PLD_INTERVAL) -> tuple[dp_accounting.PrivacyAccountant, dp_accounting.DpEvent] | None:
    """A fresh dp-accounting accountant for ``event`` under our ``relation`` and the event to give it, or None
    when it cannot account the event (see the module docstring and :func:`supports`)."""
    from dp_accounting import pld, rdp

    _quiet_dp_accounting()
    if method == "rdp":
        acc = rdp.RdpAccountant(orders=orders, neighboring_relation=_neighbours(relation))
        return (acc, event) if acc.supports(event) else None
    if method != "pld":
        raise ValueError(f"method must be 'rdp' or 'pld', got {method!r}")
    if relation == "replace_one" and _subsampled(event):
        view = map_leaves(event, _replace_one_leaf)
        acc = pld.PLDAccountant(neighboring_relation=_neighbours("replace_one"), value_discretization_interval=interval)
        return (acc, view) if view is not None and acc.supports(view) else None
    # add/remove; or replace-one with Δ already expressed under it: the add/remove PLD of the same multiplier
    acc = pld.PLDAccountant(neighboring_relation=_neighbours("add_remove"), value_discretization_interval=interval)
    if not acc.supports(event):
        return None
    if relation == "replace_one" and not rdp.RdpAccountant(neighboring_relation=_neighbours("replace_one")).supports(event):
        return None
    return acc, event


def supports(event: dp_accounting.DpEvent, relation: Relation, method: str) -> bool:
    """Whether dp-accounting's ``method`` accountant can account ``event`` under our ``relation``.

    This is dp-accounting's own ``PrivacyAccountant.supports``. For ``replace_one`` and PLD, an event
    without Poisson subsampling is given to the add/remove PLD of the same multiplier (Δ is already
    expressed under replace-one), which is sound only for events whose privacy loss does not depend on
    the relation beyond Δ: the event must be supported both by the add/remove PLD accountant and by the
    replace-one RDP accountant (that excludes sampling without replacement and randomized response,
    whose replace-one analysis differs). An event with Poisson subsampling goes to the ``REPLACE_ONE``
    PLD accountant (module docstring).
    """
    _check_relation(relation)
    return _prepared(event, relation, method) is not None


def resolve_method(event: dp_accounting.DpEvent, relation: Relation, method: Method) -> str:
    """Return ``"rdp"`` or ``"pld"`` for ``method``.

    ``"auto"`` prefers PLD when :func:`supports` it; ``"rdp"`` is RDP wherever dp-accounting's RDP accountant can
    account the event under ``relation`` and PLD where only PLD can (Poisson subsampling under replace-one);
    ``"pld"`` is PLD or an error.
    """
    _check_relation(relation)
    if method == "rdp":
        return "pld" if not supports(event, relation, "rdp") and supports(event, relation, "pld") else "rdp"
    if method not in ("pld", "auto"):
        raise ValueError(f"method must be 'rdp', 'pld' or 'auto', got {method!r}")
    supported = supports(event, relation, "pld")
    if method == "pld" and not supported:
        raise ValueError(f"PLD accounting does not support this event under {relation!r}; use method='rdp'")
    return "pld" if supported else "rdp"


def compose(
    events: Sequence[dp_accounting.DpEvent], counts: Sequence[int] | None = None
) -> dp_accounting.DpEvent:
    """Compose ``events`` (each ``counts[i]`` times) with dp-accounting's ``DpEventBuilder``.

    Identical events are gathered first, so repeated releases become one self-composition (the
    same ε, computed faster); no-op events vanish and a single event is returned as is.
    """
    import dp_accounting

    counts = [1] * len(events) if counts is None else list(counts)
    if len(counts) != len(events):
        raise ValueError("one count per event")
    distinct: list[list] = []
    for event, count in zip(events, counts):
        for entry in distinct:
            if entry[0] == event:
                entry[1] += int(count)
                break
        else:
            distinct.append([event, int(count)])
    builder = dp_accounting.DpEventBuilder()
    for event, count in distinct:
        builder.compose(event, count)
    return builder.build()


def _composed(event: dp_accounting.DpEvent, relation: Relation, method: str, orders: tuple[float, ...] = RDP_ORDERS,
              interval: float = PLD_INTERVAL):
    """A fresh accountant (``method`` already resolved: ``"rdp"`` or ``"pld"``) that has composed ``event``."""
    prepared = _prepared(event, relation, method, orders, interval)
    if prepared is None:
        raise ValueError(f"dp-accounting cannot account this event under {relation!r}: {event}")
    acc, accounted = prepared
    acc.compose(accounted)
    return acc


def epsilon(event: dp_accounting.DpEvent, delta: float, relation: Relation = "add_remove", method: Method = "rdp") -> float:
    """ε of ``event`` at ``delta`` under ``relation`` (RDP or PLD via dp-accounting; :func:`resolve_method`).

    Memoised on the event's ``repr`` (events are plain values; a Poisson-subsampled RDP curve costs about a second,
    and a fit, its plan and its ledger entry ask for the same ε several times).
    """
    import dp_accounting

    check_delta(delta)
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    key = (repr(event), float(delta), relation, method)
    if key not in _EPSILONS:
        if len(_EPSILONS) >= 4096:
            _EPSILONS.clear()
        _EPSILONS[key] = float(_composed(event, relation, resolve_method(event, relation, method)).get_epsilon(delta))
    return _EPSILONS[key]


_EPSILONS: dict[tuple, float] = {}


def delta_for_epsilon(event: dp_accounting.DpEvent, eps: float, relation: Relation = "add_remove", method: Method = "rdp") -> float:
    """δ of ``event`` at ``eps``."""
    check_epsilon(eps)
    return float(_composed(event, relation, resolve_method(event, relation, method)).get_delta(eps))


def calibrate_noise_multiplier(
    make_event: Callable[[float], dp_accounting.DpEvent],
    target_epsilon: float,
    target_delta: float,
    relation: Relation = "add_remove",
    method: Method = "rdp",
    tol: float = 1e-4,
) -> float:
    """Smallest noise multiplier z such that ``make_event(z)`` is (ε, δ)-DP.

    Uses :func:`dp_accounting.calibrate_dp_mechanism` (Brent's method over the accountant) on a
    bracket [z/2, z] found by doubling/halving from z = 1, so the accountant is never asked about
    a tiny multiplier (PLD discretisation of z ≈ 1e-3 would need tens of GiB).

    RDP in two stages: first on
    :data:`COARSE_ORDERS` to a loose tolerance, then on the orders of :data:`RDP_ORDERS` within
    0.25 (α < 6) or α/4 of the optimal order α found there — α included, so the first result is
    within the budget there too — bracketed just below the first result. Any subset of the orders
    gives a valid (upper-bound) ε, so the returned z is (ε, δ)-DP under the full accountant too; it
    equals the all-orders calibration (to ``tol``) whenever the optimal order lies in that window.

    PLD likewise: on each of :data:`PLD_SEARCH_INTERVALS` in turn, the first to a loose tolerance (the
    pessimistic PLD is an upper bound at every discretisation), then checked at :data:`PLD_INTERVAL`, the
    accountant every stated ε comes from (raised by ``tol`` until within the budget there, which the finer
    discretisation almost always is).
    """
    check_epsilon(target_epsilon)
    check_delta(target_delta)
    resolved = resolve_method(make_event(1.0), relation, method)
    if resolved == "pld":
        z = 1.0
        for interval in PLD_SEARCH_INTERVALS:
            last = interval == PLD_SEARCH_INTERVALS[-1]
            z = _calibrate(make_event, target_epsilon, target_delta, relation, "pld", tol if last else max(tol, 1e-2),
                           RDP_ORDERS, z, interval)
        while epsilon(make_event(z), target_delta, relation, "pld") > target_epsilon:
            z *= 1.0 + tol
        return z
    z = _calibrate(make_event, target_epsilon, target_delta, relation, "rdp", max(tol, 1e-2), COARSE_ORDERS, 1.0)
    acc = _composed(make_event(z), relation, "rdp", COARSE_ORDERS)
    best = float(acc.get_epsilon_and_optimal_order(target_delta)[1])
    near = tuple(o for o in RDP_ORDERS if abs(o - best) <= (0.25 if best < 6 else best / 4))
    return _calibrate(make_event, target_epsilon, target_delta, relation, "rdp", tol, near, z)


def _calibrate(make_event, target_epsilon: float, target_delta: float, relation: Relation, resolved: str, tol: float,
               orders: tuple[float, ...], start: float, interval: float = PLD_INTERVAL) -> float:
    """Brent's method on a bracket [lo, hi] ∋ z found from ``start`` (the accountant restricted to ``orders``, or
    the PLD at discretisation ``interval``)."""
    import dp_accounting

    def prepared(z: float):
        out = _prepared(make_event(z), relation, resolved, orders, interval)
        if out is None:
            raise ValueError(f"dp-accounting cannot account this event under {relation!r}: {make_event(z)}")
        return out

    def within(z: float) -> bool:
        acc, event = prepared(z)
        acc.compose(event)
        return float(acc.get_epsilon(target_delta)) <= target_epsilon

    hi = float(start)
    if within(hi):
        if start != 1.0 and not within(hi * 0.9):  # a refinement just below an earlier result
            lo = hi * 0.9
        else:
            while hi > 1e-3 and within(hi / 2):
                hi /= 2
            if hi <= 1e-3:
                return hi
            lo = hi / 2
    else:
        while not within(hi):
            hi *= 2
            if hi > 1e6:
                raise ValueError(f"no noise multiplier ≤ 1e6 reaches ε = {target_epsilon} at δ = {target_delta}")
        lo = hi / 2
    z = dp_accounting.calibrate_dp_mechanism(
        lambda: prepared(hi)[0],
        lambda z_: prepared(z_)[1],
        target_epsilon,
        target_delta,
        bracket_interval=dp_accounting.ExplicitBracketInterval(lo, hi),
        tol=tol,
    )
    return float(z)


def max_steps(
    make_event: Callable[[int], dp_accounting.DpEvent],
    target_epsilon: float,
    target_delta: float,
    relation: Relation = "add_remove",
    method: Method = "rdp",
    upper: int = 10**7,
) -> int:
    """Largest number of steps T ≤ ``upper`` with ``make_event(T)`` within (ε, δ) (0 if even one step is not).

    Under PLD the search runs on each of :data:`PLD_SEARCH_INTERVALS` in turn (each from the last answer), and
    the result is checked at :data:`PLD_INTERVAL` (lowered until within the budget there): T is then the largest
    within the budget at the last search discretisation, and within it at the stated one.
    """
    check_epsilon(target_epsilon)
    check_delta(target_delta)
    resolved = resolve_method(make_event(1), relation, method)
    if resolved == "rdp":
        return _largest_steps(lambda t: epsilon(make_event(t), target_delta, relation, "rdp") <= target_epsilon, upper)
    steps = 1
    for interval in PLD_SEARCH_INTERVALS:
        steps = _largest_steps(
            lambda t, interval=interval: _composed(make_event(t), relation, "pld", interval=interval).get_epsilon(
                target_delta) <= target_epsilon, upper, max(steps, 1))
    while steps > 0 and epsilon(make_event(steps), target_delta, relation, "pld") > target_epsilon:
        steps -= 1
    return steps


def _largest_steps(within: Callable[[int], bool], upper: int, start: int = 1) -> int:
    """The largest T in [0, ``upper``] with ``within(T)`` (monotone; T = 0 always within), from ``start`` (an earlier,
    coarser answer): steps up that double from 1 (down to a bisection over [0, start] if ``start`` is not within),
    then a bisection."""
    if not within(start):
        lo, hi = 0, start
    else:
        lo, step = start, 1
        while lo + step <= upper and within(lo + step):
            lo, step = lo + step, step * 2
        hi = min(lo + step, upper + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if within(mid):
            lo = mid
        else:
            hi = mid
    return lo


# --- event builders -------------------------------------------------------------------------


def gaussian_event(noise_multiplier: float, steps: int = 1) -> dp_accounting.DpEvent:
    """``steps`` releases of the Gaussian mechanism with σ = noise_multiplier · Δ."""
    import dp_accounting

    ev = dp_accounting.GaussianDpEvent(noise_multiplier)
    return ev if steps == 1 else dp_accounting.SelfComposedDpEvent(ev, steps)


def laplace_event(noise_multiplier: float, steps: int = 1) -> dp_accounting.DpEvent:
    """``steps`` releases of the Laplace mechanism with scale b = noise_multiplier · Δ₁ (pure ε = 1/multiplier)."""
    import dp_accounting

    ev = dp_accounting.LaplaceDpEvent(noise_multiplier)
    return ev if steps == 1 else dp_accounting.SelfComposedDpEvent(ev, steps)


def randomized_response_event(eps: float, num_classes: int) -> dp_accounting.DpEvent:
    """k-ary randomized response that keeps the true label with probability e^ε/(e^ε+k−1).

    In dp-accounting's parametrisation the output is uniform with probability p = k/(e^ε+k−1).
    """
    import dp_accounting

    check_epsilon(eps)
    p = num_classes / (math.exp(eps) + num_classes - 1)
    return dp_accounting.RandomizedResponseDpEvent(noise_parameter=p, num_buckets=num_classes)


def poisson_gaussian_event(noise_multiplier: float, sample_rate: float, steps: int) -> dp_accounting.DpEvent:
    """DP-SGD: ``steps`` Poisson-subsampled (rate q) Gaussian sums, σ = ``noise_multiplier``·C with C the bound on one
    record's contribution (the clip); accounted under either relation (replace-one: PLD only, module docstring)."""
    import dp_accounting

    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate}")
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(sample_rate, dp_accounting.GaussianDpEvent(noise_multiplier)), steps
    )


def sampled_without_replacement_gaussian_event(
    noise_multiplier: float, dataset_size: int, batch_size: int, steps: int
) -> dp_accounting.DpEvent:
    """``steps`` fixed-size batches (B of n, without replacement) each released with Gaussian noise.

    Relation ``replace_one`` (WBK19 RDP bound).
    """
    import dp_accounting

    if not 0 < batch_size <= dataset_size:
        raise ValueError(f"batch_size must be in [1, {dataset_size}], got {batch_size}")
    inner = dp_accounting.GaussianDpEvent(noise_multiplier)
    ev = (
        inner
        if batch_size == dataset_size
        else dp_accounting.SampledWithoutReplacementDpEvent(dataset_size, batch_size, inner)
    )
    return ev if steps == 1 else dp_accounting.SelfComposedDpEvent(ev, steps)


# --- single-release Gaussian calibrations ---------------------------------------------------


def analytic_gaussian_sigma(eps: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ of the analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8), valid for every ε > 0."""
    import dp_accounting

    check_epsilon(eps)
    check_delta(delta)
    try:
        with np.errstate(all="ignore"):
            sigma = float(dp_accounting.get_sigma_gaussian(eps, delta))
    except (ValueError, ArithmeticError, RuntimeError):
        sigma = math.nan
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"ε = {eps:g} at δ = {delta:g} is beyond the range where Gaussian noise can be calibrated "
                         "(the noise would vanish); use a smaller ε")
    return sigma * sensitivity


def analytic_gaussian_epsilon(sigma: float, delta: float, sensitivity: float = 1.0) -> float:
    """Exact ε of one Gaussian release with noise σ and ℓ2 sensitivity Δ (Balle & Wang 2018)."""
    import dp_accounting

    check_delta(delta)
    if sigma <= 0:
        raise ValueError(f"sigma must be > 0, got {sigma}")
    return float(dp_accounting.get_epsilon_gaussian(sigma / sensitivity, delta))


def kkmm_sigma(eps: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ ≥ Δ·sqrt(2(ln(1/(2δ)) + ε))/ε (Kenthapadi et al. 2013, Thm. 1): sufficient for every ε > 0."""
    check_epsilon(eps)
    check_delta(delta)
    return sensitivity * math.sqrt(2.0 * (math.log(1.0 / (2.0 * delta)) + eps)) / eps


def dpot_paper_noise_ratio(eps: float, delta: float) -> float:
    """The noise ratio σ/w printed in LeTien et al. 2019: sqrt(2(ln(1/δ) + ε))/ε (slightly above KKMM)."""
    check_epsilon(eps)
    check_delta(delta)
    return math.sqrt(2.0 * (math.log(1.0 / delta) + eps)) / eps


def classic_gaussian_sigma(eps: float, delta: float, sensitivity: float = 1.0) -> float:
    """σ = Δ·sqrt(2 ln(1.25/δ))/ε (Dwork & Roth Thm. A.1). Proven only for ε < 1."""
    check_epsilon(eps)
    check_delta(delta)
    if eps >= 1:
        raise ValueError("the classic Gaussian calibration is only proven for ε < 1; use analytic_gaussian_sigma")
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / eps


def advanced_composition(eps0: float, delta0: float, k: int, delta_prime: float) -> tuple[float, float]:
    """k-fold adaptive composition of (ε0, δ0)-DP mechanisms (Dwork, Rothblum, Vadhan 2010).

    Returns (ε0·sqrt(2k ln(1/δ')) + k·ε0·(e^ε0 − 1), k·δ0 + δ').
    """
    check_delta(delta_prime)
    eps = eps0 * math.sqrt(2.0 * k * math.log(1.0 / delta_prime)) + k * eps0 * math.expm1(eps0)
    return eps, k * delta0 + delta_prime


# --- (de)serialisation of events -------------------------------------------------------------

_EVENT_MODULE = "dp_accounting.dp_event"


def event_to_dict(event: dp_accounting.DpEvent) -> dict:
    """JSON-compatible form of an event tree: dp-accounting's ``to_named_tuple`` as nested dicts."""
    from dp_accounting import dp_event

    def plain(value):
        if isinstance(value, dp_event.DpEventNamedTuple):
            return {k: plain(v) for k, v in value._asdict().items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return plain(event.to_named_tuple())


def event_from_dict(data: dict) -> dp_accounting.DpEvent:
    """Inverse of :func:`event_to_dict`, through dp-accounting's ``DpEvent.from_named_tuple``.

    Only event classes of ``dp_accounting.dp_event`` are accepted (``from_named_tuple`` would
    otherwise import whatever module a file names). Files written before the named-tuple form
    (``{"type": name, ...}``) are read too.
    """
    import dp_accounting

    return dp_accounting.DpEvent.from_named_tuple(_named_tuple(data))


def _named_tuple(data: dict):
    import dp_accounting
    from dp_accounting import dp_event

    data = dict(data)
    if "type" in data and "class_name" not in data:  # the earlier {"type": ...} form
        data = {"module_name": _EVENT_MODULE, "class_name": data.pop("type"), **data}
    name = data.get("class_name")
    cls = getattr(dp_event, str(name), None)
    if data.get("module_name") != _EVENT_MODULE or not (isinstance(cls, type) and issubclass(cls, dp_accounting.DpEvent)):
        raise ValueError(f"unknown dp-accounting event type {name!r}")
    fields = {}
    for key, value in data.items():
        if isinstance(value, dict):
            value = _named_tuple(value)
        elif isinstance(value, list):
            value = [_named_tuple(v) if isinstance(v, dict) else v for v in value]
        fields[key] = value
    return collections.namedtuple(f"_{name}Fields", list(fields))(**fields)
