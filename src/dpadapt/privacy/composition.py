"""The one composition rule: what several releases of one party's data spend together.

Used by :func:`dpadapt.privacy.compose_guarantees` (reports) and by the budget ledger
(:mod:`dpadapt.privacy.ledger`) alike, so a set of releases has one ε.

Rule, for guarantees gᵢ each counted kᵢ times and a total δ (default Σ kᵢ δᵢ):

1. **One neighbouring relation.** All add/remove: add/remove. Otherwise replace-one, and each
   add/remove guarantee is converted soundly (the conversions are listed in the result):

   * its events, when every mechanism in them is a plain Gaussian or Laplace release or a
     Poisson-subsampled Gaussian (possibly composed): with Δ the add/remove sensitivity, the
     replace-one sensitivity is ≤ 2Δ (a replacement is a removal then an addition, triangle
     inequality), so a plain multiplier z under add/remove is a multiplier z/2 under replace-one; a
     Poisson-subsampled Gaussian keeps its event (σ/C, C one record's contribution bound), which
     dp-accounting's replace-one PLD accounts as such (:mod:`dpadapt.privacy.accounting`);
   * otherwise its (ε, δ) by group privacy over the two add/remove steps of a replacement:
     (2ε, (1 + e^ε)·δ) (Dwork & Roth, Thm. 2.2 applied twice with the δ terms kept).

   Replace-one guarantees are never converted to add/remove (a replace-one guarantee says nothing
   about a dataset of another size): asking for that is refused.
2. **Every term kept.** δ_extra (failure probabilities of high-probability bounds, see
   :class:`~dpadapt.privacy.Guarantee`) and the δ of closed-form parts are subtracted from the total
   δ and added back to the reported δ; the events of all other parts are composed with
   dp-accounting's ``DpEventBuilder`` and converted to ε at the δ that is left (RDP by default,
   PLD where RDP cannot account them — Poisson subsampling under replace-one; PLD when
   dp-accounting's ``supports()`` says so and it is asked for). Events that no accountant can take
   together (a Laplace release beside a replace-one Poisson-subsampled one) are read as closed-form
   parts instead. Closed-form parts add their ε (basic composition, Dwork & Roth Thm. 3.16).
3. **A second valid bound.** Basic composition of the guarantees as stated (after conversion),
   (Σ kᵢεᵢ, Σ kᵢδᵢ), holds whenever Σ kᵢδᵢ ≤ δ; the smaller ε of the two is reported (this matters
   for a few releases calibrated more tightly than RDP, e.g. by the analytic Gaussian).

The result is ε = ∞ when the closed-form parts and the extra δ already use up the total δ.

The guarantees composed here are :class:`~dpadapt.privacy.guarantee.Guarantee` objects (named in the
annotations only: that module builds on this one, not the other way round).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from dpadapt.privacy import accounting
from dpadapt.privacy.accounting import Accounting

if TYPE_CHECKING:  # dp-accounting is imported where an event is built or accounted (dpadapt.privacy.accounting)
    import dp_accounting

    from dpadapt.privacy.guarantee import Guarantee

#: For each unit, the units whose neighbouring datasets it includes (record-level neighbours
#: include the label- and attribute-level ones), so a guarantee for the key implies one for them.
_IMPLIES = {"record": {"record", "label", "attribute"}, "label": {"label"}, "attribute": {"attribute"},
            "patient": {"patient", "record", "label", "attribute"}}


@dataclasses.dataclass(frozen=True)
class Composition:
    """The composed spend of several guarantees (see the module docstring)."""

    epsilon: float
    delta: float
    relation: accounting.Relation
    accounting: Accounting
    events: tuple[dp_accounting.DpEvent, ...]  #: the joint event, or () when closed-form parts are in it
    delta_extra: float
    n: int
    conversions: tuple[str, ...] = ()

    def words(self) -> str:
        """How the ε was obtained, including any conversion of relation."""
        text = self.accounting.value.replace("_", " ")
        return text + "".join(f"; {c}" for c in self.conversions)


def common_unit(units: Iterable[str]) -> str:
    """The unit a composition of guarantees of ``units`` holds for; refuses incomparable units."""
    units = set(units)
    for candidate in ("patient", "record", "label", "attribute"):
        if candidate in units and all(candidate in _IMPLIES[u] for u in units):
            return candidate
    raise ValueError(f"guarantees of units {sorted(units)} hold for no common kind of neighbour; compose them separately")


def _as_replace_one_leaf(event: dp_accounting.DpEvent) -> dp_accounting.DpEvent | None:
    """One add/remove mechanism under replace-one: a plain Gaussian/Laplace multiplier halved, a Poisson-subsampled
    Gaussian kept (module docstring); None for anything else."""
    import dp_accounting

    if isinstance(event, dp_accounting.GaussianDpEvent):
        return dp_accounting.GaussianDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, dp_accounting.LaplaceDpEvent):
        return dp_accounting.LaplaceDpEvent(event.noise_multiplier / 2.0)
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return event
    if isinstance(event, dp_accounting.PoissonSampledDpEvent):
        return event if isinstance(event.event, dp_accounting.GaussianDpEvent) else None
    return None


def group_privacy_replace_one(epsilon: float, delta: float) -> tuple[float, float]:
    """An add/remove (ε, δ)-DP mechanism is replace-one (2ε, (1 + e^ε)δ)-DP (two steps of group privacy)."""
    if math.isinf(epsilon):
        return math.inf, 1.0
    return 2.0 * epsilon, min((1.0 + math.exp(epsilon)) * delta, 1.0)


@dataclasses.dataclass(frozen=True)
class _Part:
    """One guarantee under the target relation: its events (maybe none) and its stated bound."""

    events: tuple[dp_accounting.DpEvent, ...]
    epsilon: float
    delta: float
    delta_extra: float


def to_relation(g: Guarantee, relation: accounting.Relation) -> tuple[_Part, str | None]:
    """``g`` as a part of a composition under ``relation``, and how it was converted (None if unchanged)."""
    if g.relation == relation:
        return _Part(g.events, g.epsilon, g.delta, g.delta_extra), None
    if relation == "add_remove":
        raise ValueError("a replace-one guarantee cannot be read as an add/remove one; compose under replace_one")
    stated_eps, stated_delta = group_privacy_replace_one(g.epsilon, g.delta)
    converted = [accounting.map_leaves(e, _as_replace_one_leaf) for e in g.events]
    if g.events and all(h is not None for h in converted):
        part = _Part(tuple(converted), stated_eps, stated_delta, g.delta_extra)
        return part, ("add/remove Gaussian/Laplace events read as replace-one with half the noise multiplier "
                      "(Δ_replace ≤ 2Δ_add), Poisson-subsampled ones by dp-accounting's replace-one PLD")
    part = _Part((), stated_eps, stated_delta, 0.0)
    return part, f"add/remove (ε={g.epsilon:.4g}, δ={g.delta:.3g}) read as replace-one (2ε, (1+e^ε)δ) by group privacy"


def _accountable(events: Sequence[dp_accounting.DpEvent], relation: accounting.Relation) -> bool:
    """Whether one dp-accounting accountant takes ``events`` together under ``relation``."""
    joint = accounting.compose(list(events))
    return accounting.supports(joint, relation, "rdp") or accounting.supports(joint, relation, "pld")


def compose(
    guarantees: Sequence[Guarantee] | Sequence[tuple[Guarantee, int]],
    *,
    delta: float | None = None,
    relation: accounting.Relation | None = None,
    method: accounting.Method = "rdp",
) -> Composition:
    """Compose ``guarantees`` (optionally ``(guarantee, count)`` pairs) into one spend (module docstring).

    ``relation`` forces the relation of the result (default: add/remove if every part is
    add/remove, else replace-one). Party and unit are not checked here: the ledger composes one
    dataset's releases whatever their unit, :func:`~dpadapt.privacy.compose_guarantees` checks them.
    """
    weighted = [(g[0], int(g[1])) if isinstance(g, tuple) else (g, 1) for g in guarantees]
    if any(k < 1 for _, k in weighted):
        raise ValueError("counts must be ≥ 1")
    if relation is None:
        relation = "add_remove" if all(g.relation == "add_remove" for g, _ in weighted) else "replace_one"
    n = sum(k for _, k in weighted)
    if not weighted:
        return Composition(0.0, 0.0 if delta is None else float(delta), relation, Accounting.NONE, (), 0.0, 0)
    parts: list[tuple[_Part, int]] = []
    conversions: list[str] = []
    for g, k in weighted:
        part, note = to_relation(g, relation)
        parts.append((part, k))
        if note and note not in conversions:
            conversions.append(note)
    stated_eps = sum(p.epsilon * k for p, k in parts)
    stated_delta = sum(p.delta * k for p, k in parts)
    if delta is None:
        delta = min(stated_delta, 1.0)

    closed = [(p, k) for p, k in parts if not p.events]
    accounted = [(p, k) for p, k in parts if p.events]
    if accounted and not _accountable([e for p, _ in accounted for e in p.events], relation):
        closed, accounted = closed + accounted, []
    eps = sum(p.epsilon * k for p, k in closed)
    reserved = sum(p.delta * k for p, k in closed) + sum(p.delta_extra * k for p, k in accounted)
    events: tuple[dp_accounting.DpEvent, ...] = ()
    if accounted:
        joint = accounting.compose([e for p, _ in accounted for e in p.events], [k for p, k in accounted for _ in p.events])
        if not closed:  # the events then describe the whole composition and can be composed again
            events = (joint,)
        how = accounting.resolve_method(joint, relation, method)
        left = delta - reserved
        if left <= 0 or math.isinf(eps):
            eps = math.inf
        else:
            eps += accounting.epsilon(joint, min(left, 1.0 - 1e-12), relation, how)
        how_words = Accounting.COMPOSITION if closed else Accounting(how)
        total_delta = float(delta)
    else:
        how_words = Accounting.BASIC_COMPOSITION
        total_delta = float(reserved)
        if reserved > delta * (1 + 1e-9):
            eps = math.inf  # the closed-form parts alone exceed the δ asked for
    if accounted and stated_delta <= delta * (1 + 1e-9) and stated_eps < eps:
        eps, how_words = stated_eps, Accounting.BASIC_COMPOSITION
    return Composition(
        epsilon=float(eps),
        delta=min(total_delta, 1.0),
        relation=relation,
        accounting=how_words,
        events=events,
        delta_extra=float(sum(p.delta_extra * k for p, k in parts)),
        n=n,
        conversions=tuple(conversions),
    )
