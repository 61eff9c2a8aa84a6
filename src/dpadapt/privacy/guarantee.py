"""The :class:`Guarantee`: the privacy record carried by every released object."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import Any, Literal

import dp_accounting

from dpadapt.jsonutil import to_jsonable
from dpadapt.privacy import accounting

Party = Literal["source", "target"]
Unit = Literal["record", "label", "attribute", "record_features"]
Mode = Literal["sound", "paper"]

PARTIES = ("source", "target")
UNITS = ("record", "label", "attribute", "record_features")

_UNIT_WORDS = {
    "record": "one whole record (all features and the label) of",
    "label": "the label of one record of",
    "attribute": "one attribute (one feature value, changed by at most 1) of one record of",
    "record_features": "the features of one record (its label declared public and released in the clear) of",
}
_RELATION_WORDS = {
    "replace_one": "replacing one record by another (dataset size public)",
    "add_remove": "adding or removing one record",
}


@dataclasses.dataclass(frozen=True)
class Guarantee:
    """(ε, δ)-differential-privacy record of one released object.

    Attributes
    ----------
    party : {"source", "target"}
        Whose data the guarantee protects.
    unit : {"record", "label", "attribute"}
        What one "individual" is: a whole record, only a record's label, or one attribute
        (DPOT's published JL guarantee is attribute-level, not record-level).
    relation : {"replace_one", "add_remove"}
        Neighbouring relation.
    epsilon, delta : float
        The guarantee. ``epsilon`` may be ``inf`` for a non-private release.
    events : tuple of dp_accounting.DpEvent
        The dp-accounting events it was computed from (empty for closed-form calibrations).
    accounting : str
        How ε was obtained: ``"rdp"``, ``"pld"``, ``"analytic_gaussian"``, ``"kkmm"``, ``"pure"``,
        ``"basic_composition"``, ``"advanced_composition"`` or ``"none"``.
    theorem : str
        The theorem the guarantee rests on.
    mode : {"sound", "paper"}
        ``"paper"`` guarantees reproduce a publication and are never valid record-level claims.
    valid : bool
        Whether this is a valid DP guarantee for the stated unit and relation.
    reasons : tuple of str
        Why it is not valid (empty when valid).
    sensitivity : float or None
        ℓ2 (or ℓ1) sensitivity the noise was calibrated to, under ``relation``.
    details : dict
        Free-form calibration parameters (σ, clipping bound, steps, ...).
    """

    party: Party
    unit: Unit
    relation: accounting.Relation
    epsilon: float
    delta: float
    events: tuple[dp_accounting.DpEvent, ...] = ()
    accounting: str = "rdp"
    theorem: str = ""
    mode: Mode = "sound"
    valid: bool = True
    reasons: tuple[str, ...] = ()
    sensitivity: float | None = None
    details: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.party not in PARTIES:
            raise ValueError(f"party must be one of {PARTIES}, got {self.party!r}")
        if self.unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {self.unit!r}")
        if self.relation not in accounting.RELATIONS:
            raise ValueError(f"relation must be one of {accounting.RELATIONS}, got {self.relation!r}")
        if self.mode not in ("sound", "paper"):
            raise ValueError(f"mode must be 'sound' or 'paper', got {self.mode!r}")
        if not (self.epsilon >= 0):
            raise ValueError(f"epsilon must be ≥ 0, got {self.epsilon}")
        if not (0 <= self.delta <= 1):
            raise ValueError(f"delta must be in [0, 1], got {self.delta}")
        if self.mode == "paper" and self.valid:
            raise ValueError("a paper-mode guarantee cannot be marked valid; give the reasons instead")
        if not self.valid and not self.reasons:
            raise ValueError("an invalid guarantee needs at least one reason")
        object.__setattr__(self, "events", tuple(self.events))
        object.__setattr__(self, "reasons", tuple(self.reasons))

    # -- construction ---------------------------------------------------------------------

    @classmethod
    def from_event(
        cls,
        event: dp_accounting.DpEvent,
        *,
        party: Party,
        unit: Unit,
        relation: accounting.Relation,
        delta: float,
        theorem: str,
        method: accounting.Method = "rdp",
        mode: Mode = "sound",
        reasons: Sequence[str] = (),
        sensitivity: float | None = None,
        details: dict[str, Any] | None = None,
    ) -> Guarantee:
        """ε computed by dp-accounting for ``event`` at ``delta``."""
        resolved = accounting.resolve_method(event, relation, method)
        eps = accounting.epsilon(event, delta, relation, resolved)
        return cls(
            party=party,
            unit=unit,
            relation=relation,
            epsilon=eps,
            delta=delta,
            events=(event,),
            accounting=resolved,
            theorem=theorem,
            mode=mode,
            valid=mode == "sound" and not reasons,
            reasons=tuple(reasons) + (("published procedure reproduced for comparison (paper mode)",) if mode == "paper" else ()),
            sensitivity=sensitivity,
            details=dict(details or {}),
        )

    @classmethod
    def non_private(cls, party: Party, reason: str = "released without noise") -> Guarantee:
        """The record of a release that protects nothing (ε = ∞)."""
        return cls(
            party=party,
            unit="record",
            relation="replace_one",
            epsilon=math.inf,
            delta=1.0,
            accounting="none",
            theorem="none",
            mode="sound",
            valid=False,
            reasons=(reason,),
        )

    # -- composition ----------------------------------------------------------------------

    def compose(self, *others: Guarantee, delta: float | None = None, method: accounting.Method = "rdp") -> Guarantee:
        """Sequential composition with other guarantees of the same party, unit and relation.

        When every part carries dp-accounting events, the composed ε is recomputed from the
        joint event at ``delta`` (default: the sum of the parts' δ) with RDP/PLD; otherwise the
        basic composition theorem (sum of ε, sum of δ) is used.
        """
        return compose_guarantees((self, *others), delta=delta, method=method)

    # -- reporting ------------------------------------------------------------------------

    @property
    def event(self) -> dp_accounting.DpEvent:
        """All events of this guarantee composed into one."""
        return accounting.compose(self.events)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["events"] = [accounting.event_to_dict(e) for e in self.events]
        out["reasons"] = list(self.reasons)
        out["epsilon"] = _json_float(self.epsilon)
        out["details"] = to_jsonable(self.details)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Guarantee:
        data = dict(data)
        data["events"] = tuple(accounting.event_from_dict(e) for e in data.get("events", ()))
        data["reasons"] = tuple(data.get("reasons", ()))
        data["epsilon"] = float(data["epsilon"])
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown Guarantee fields {sorted(unknown)}")
        return cls(**data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def summary(self) -> str:
        """One line: who, (ε, δ), unit/relation, valid or not."""
        eps = "∞" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        status = "valid" if self.valid else "NOT a valid DP guarantee"
        return f"{self.party}: ({eps}, {self.delta:.3g})-DP, {self.unit}-level, {self.relation}, {self.mode} mode — {status}"

    def report(self) -> str:
        """A short human-readable report of what is protected and how."""
        eps = "∞ (no privacy)" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        lines = [
            f"Protected party : {self.party}",
            f"Privacy unit    : {_UNIT_WORDS[self.unit]} the {self.party} data",
            f"Neighbours      : {_RELATION_WORDS[self.relation]}",
            f"Guarantee       : (ε = {eps}, δ = {self.delta:.3g})",
            f"Accounting      : {self.accounting}",
            f"Theorem         : {self.theorem or '—'}",
            f"Mode            : {self.mode}",
        ]
        if self.sensitivity is not None:
            lines.append(f"Sensitivity     : {self.sensitivity:.6g}")
        for key, value in sorted(self.details.items()):
            lines.append(f"  {key:<14}: {value}")
        if self.valid:
            lines.append("Status          : valid differential-privacy guarantee")
        else:
            lines.append("Status          : NOT a valid differential-privacy guarantee, because")
            lines.extend(f"  - {r}" for r in self.reasons)
        return "\n".join(lines)

    __str__ = summary


def _json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) else x


def compose_guarantees(
    guarantees: Sequence[Guarantee], delta: float | None = None, method: accounting.Method = "rdp"
) -> Guarantee:
    """Compose guarantees of one party/unit/relation (see :meth:`Guarantee.compose`)."""
    if not guarantees:
        raise ValueError("nothing to compose")
    first = guarantees[0]
    for g in guarantees[1:]:
        if (g.party, g.unit, g.relation) != (first.party, first.unit, first.relation):
            raise ValueError(
                "can only compose guarantees of the same party, unit and relation: "
                f"{(first.party, first.unit, first.relation)} vs {(g.party, g.unit, g.relation)}"
            )
    total_delta = sum(g.delta for g in guarantees) if delta is None else delta
    total_delta = min(total_delta, 1.0)
    valid = all(g.valid for g in guarantees)
    reasons = tuple(dict.fromkeys(r for g in guarantees for r in g.reasons))
    mode = "paper" if any(g.mode == "paper" for g in guarantees) else "sound"
    theorems = " + ".join(dict.fromkeys(g.theorem for g in guarantees if g.theorem))
    events = tuple(e for g in guarantees for e in g.events)
    basic_eps, basic_delta = sum(g.epsilon for g in guarantees), sum(g.delta for g in guarantees)
    if all(g.events for g in guarantees) and 0 < total_delta < 1:
        joint = accounting.compose(events)
        resolved = accounting.resolve_method(joint, first.relation, method)
        eps = accounting.epsilon(joint, total_delta, first.relation, resolved)
        how = resolved
        if basic_delta <= total_delta and basic_eps < eps:
            # Both bounds hold; RDP conversion can lose to the sum for a few tightly calibrated parts.
            eps, how = basic_eps, "basic_composition"
    else:
        eps = sum(g.epsilon for g in guarantees)
        total_delta = min(sum(g.delta for g in guarantees), 1.0)
        how = "basic_composition"
    return Guarantee(
        party=first.party,
        unit=first.unit,
        relation=first.relation,
        epsilon=eps,
        delta=total_delta,
        events=events,
        accounting=how,
        theorem=theorems,
        mode=mode,
        valid=valid,
        reasons=reasons,
        details={"composed_of": len(guarantees)},
    )
