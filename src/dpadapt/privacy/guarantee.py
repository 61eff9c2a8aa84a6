"""The :class:`Guarantee`: the privacy record carried by every released object."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from dpadapt.jsonutil import to_jsonable
from dpadapt.privacy import accounting, composition
from dpadapt.privacy.accounting import Accounting

if TYPE_CHECKING:  # dp-accounting is imported where an event is built or accounted (dpadapt.privacy.accounting)
    import dp_accounting

Party = Literal["source", "target"]
Unit = Literal["record", "label", "attribute", "record_features", "patient"]
Mode = Literal["sound", "paper"]

PARTIES = ("source", "target")
UNITS = ("record", "label", "attribute", "record_features", "patient")

PAPER_REASON = "published procedure reproduced for comparison (paper mode)"


_UNIT_WORDS = {
    "record": "one whole record (all features and the label) of",
    "label": "the label of one record of",
    "attribute": "one attribute (one feature value, changed by at most 1) of one record of",
    "record_features": "the features of one record (its label declared public and released in the clear) of",
    "patient": "all rows (at most {rows_per_patient}, by patient ID) of one patient of",
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
    unit : {"record", "label", "attribute", "record_features", "patient"}
        What one "individual" is: a whole record, only a record's label, or one attribute
        (DPOT's published JL guarantee is attribute-level, not record-level); ``"patient"``: all rows
        of one patient, at most ``details["rows_per_patient"]`` (:mod:`dpadapt.privacy.group`).
    relation : {"replace_one", "add_remove"}
        Neighbouring relation.
    epsilon, delta : float
        The guarantee. ``epsilon`` may be ``inf`` for a non-private release. ``delta`` is the
        whole δ, ``delta_extra`` included.
    events : tuple of dp_accounting.DpEvent
        The dp-accounting events it was computed from (empty for closed-form calibrations).
        Composition (:mod:`dpadapt.privacy.composition`) accounts them at δ − ``delta_extra``.
    accounting : Accounting
        How ε was obtained (:class:`Accounting`; its string values are accepted, others refused).
    delta_extra : float
        The part of ``delta`` that the events do not cover: the failure probability β of a
        high-probability bound the calibration assumes (e.g. DP-SWD's Beta-based sensitivity
        bounds), over randomness independent of the data. If the mechanism is (ε, δ₀)-DP whenever
        the bound holds and the bound fails with probability ≤ β, it is (ε, δ₀ + β)-DP:
        P[M(D) ∈ S] ≤ P[M(D) ∈ S, bound holds] + β ≤ e^ε P[M(D') ∈ S] + δ₀ + β. Composition
        adds it to the total δ (it is never dropped).
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
    accounting: Accounting = Accounting.RDP
    theorem: str = ""
    mode: Mode = "sound"
    valid: bool = True
    reasons: tuple[str, ...] = ()
    sensitivity: float | None = None
    details: dict[str, Any] = dataclasses.field(default_factory=dict)
    delta_extra: float = 0.0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "accounting", Accounting(self.accounting))
        except ValueError:
            raise ValueError(
                f"accounting must be one of {[a.value for a in Accounting]}, got {self.accounting!r}"
            ) from None
        if not (0 <= self.delta_extra <= self.delta):
            raise ValueError(f"delta_extra must be in [0, delta={self.delta}], got {self.delta_extra}")
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

    def invalidated(self, reason: str) -> Guarantee:
        """This guarantee marked invalid with one more ``reason`` (unchanged if it already gives it)."""
        if reason in self.reasons:
            return self
        return dataclasses.replace(self, valid=False, reasons=(*self.reasons, reason))

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
        delta_extra: float = 0.0,
    ) -> Guarantee:
        """ε computed by dp-accounting for ``event`` at ``delta − delta_extra`` (reported δ: ``delta``)."""
        resolved = accounting.resolve_method(event, relation, method)
        eps = accounting.epsilon(event, delta - delta_extra, relation, resolved)
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
            reasons=tuple(reasons) + ((PAPER_REASON,) if mode == "paper" else ()),
            sensitivity=sensitivity,
            details=dict(details or {}),
            delta_extra=delta_extra,
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
        """Sequential composition with other guarantees of the same party (see :func:`compose_guarantees`)."""
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
        if math.isinf(self.epsilon) and self.details.get("disclosed"):
            # a disclosure by a party that is not protected in this setting is not an alarm
            return f"{self.party}: not protected in this setting; it disclosed {self.details['disclosed']}"
        if math.isinf(self.epsilon) and self.details.get("kept"):
            # the receiver's own rows, used on its own machine: nothing of them was released
            return f"{self.party}: not protected in this setting; it kept {self.details['kept']}"
        eps = "∞" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        status = "valid" if self.valid else "NOT a valid DP guarantee"
        unit = f"{self.unit}-level" + (f" (≤ {self.details.get('rows_per_patient')} rows each)" if self.unit == "patient" else "")
        return f"{self.party}: ({eps}, {self.delta:.3g})-DP, {unit}, {self.relation}, {self.mode} mode — {status}"

    def report(self) -> str:
        """A short human-readable report of what is protected and how."""
        eps = "∞ (no privacy)" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        lines = [
            f"Protected party : {self.party}",
            f"Privacy unit    : {_UNIT_WORDS[self.unit].format(rows_per_patient=self.details.get('rows_per_patient', 'K'))} the {self.party} data",
            f"Neighbours      : {_RELATION_WORDS[self.relation]}",
            f"Guarantee       : (ε = {eps}, δ = {self.delta:.3g})",
            f"Accounting      : {self.accounting}",
            f"Theorem         : {self.theorem or '—'}",
            f"Mode            : {self.mode}",
        ]
        if self.delta_extra:
            lines.append(f"  of which δ    : {self.delta_extra:.3g} for the failure of a high-probability bound")
        if self.relation == "add_remove":
            lines.append(f"Dataset size    : {self.details.get('dataset_size', ADD_REMOVE_N_PUBLIC)}")
        if self.valid and self.epsilon > LARGE_EPSILON:
            lines.append(f"Warning         : {LARGE_EPSILON_WORDS}")
        if self.sensitivity is not None:
            lines.append(f"Sensitivity     : {self.sensitivity:.6g}")
        for key, value in sorted(self.details.items()):
            lines.append(f"  {key:<14}: {value}")
        if self.valid:
            lines.append("Status          : valid differential-privacy guarantee")
        elif math.isinf(self.epsilon) and self.details.get("disclosed"):
            lines.append(f"Status          : not protected in this setting; it disclosed {self.details['disclosed']}, because")
            lines.extend(f"  - {r}" for r in self.reasons)
        elif math.isinf(self.epsilon) and self.details.get("kept"):
            lines.append(f"Status          : not protected in this setting; it kept {self.details['kept']}")
            lines.extend(f"  - {r}" for r in self.reasons)
        else:
            lines.append("Status          : NOT a valid differential-privacy guarantee, because")
            lines.extend(f"  - {r}" for r in self.reasons)
        lines.append(f"Threat model    : {THREAT_MODEL_WORDS}")
        return "\n".join(lines)

    __str__ = summary


#: What an add/remove guarantee of this library assumes of the dataset size.
ADD_REMOVE_N_PUBLIC = (
    "n is treated as public: σ, the default δ = 1/(10 n), step sizes divided by n and DP-SGD's sampling rate B/n "
    "are computed from the true n, so n itself (and a record's presence, as far as n reveals it) is not protected; "
    "use replace-one (the default) when the size of the dataset must stay secret"
)

#: A paper's DP-SGD σ or step count chosen by an add/remove accountant at the sampling rate B/n.
PAPER_ADD_REMOVE_REASON = (
    "the paper's accountant (moments accountant, add/remove neighbours) chose σ and the steps at the sampling rate "
    "B/n of the true n, which an add/remove guarantee cannot state without revealing n; this library states DP-SGD "
    "under replace-one (n public), where the same σ costs more"
)

#: Every Guarantee's report points to the one description of who is protected and what the receiver sees.
THREAT_MODEL_WORDS = (
    "docs/threat-model.md — who is protected, the neighbouring relation, what is public, and what the receiver "
    "sees (a release, or its refusal, is itself an output)"
)

#: What a genuine add/remove guarantee (``details["dataset_size"]``) does with n.
ADD_REMOVE_N_PRIVATE = (
    "n is private: it is not released, δ was given (not derived from n), σ follows from ε, δ and Δ alone, "
    "and the receiver uses the noisy counts, so adding or removing a record changes nothing but the noisy statistics"
)

#: Above this ε a "valid" guarantee is reported as no meaningful protection.
LARGE_EPSILON = 10.0
LARGE_EPSILON_WORDS = (
    f"ε > {LARGE_EPSILON:g}: the odds of any outcome may change by a factor above e^{LARGE_EPSILON:g} ≈ 22 000 "
    "with one record, so this guarantee is no meaningful protection (the noise may be negligible)"
)

#: Why a release with ``reproducible_noise=True`` is not private.
REPRODUCIBLE_NOISE_REASON = (
    "reproducible_noise=True: the noise was derived from the integer random_state, so anyone who finds the seed "
    "(a brute force over small seeds recovers it from the release alone) subtracts the noise and gets the exact values"
)


#: Why a public mechanism called with a caller's ``numpy.random.Generator`` is not private.
CALLER_GENERATOR_REASON = (
    "noise drawn from a caller's numpy.random.Generator: anyone who knows or guesses its seed replays the noise, "
    "and numpy's floating-point sampler leaves support gaps that differ between neighbouring values (Mironov, "
    "CCS 2012); pass a dpadapt.privacy.mechanisms.NoiseSource() for the vetted sampler"
)


def _json_float(x: float) -> float | str:
    return "inf" if math.isinf(x) else x


def compose_guarantees(
    guarantees: Sequence[Guarantee],
    delta: float | None = None,
    method: accounting.Method = "rdp",
    relation: accounting.Relation | None = None,
) -> Guarantee:
    """Sequential composition of one party's guarantees (see :func:`dpadapt.privacy.composition.compose`).

    Relations are converted soundly to a common one (replace-one when they differ) and the
    conversions are listed in ``details["conversions"]``. Units must be comparable: the result is
    stated for the finest unit present (record-level neighbours include label- and
    attribute-level ones); label- with attribute-level guarantees are refused.
    """
    if not guarantees:
        raise ValueError("nothing to compose")
    parties = {g.party for g in guarantees}
    if len(parties) > 1:
        raise ValueError(f"can only compose guarantees of one party, got {sorted(parties)}")
    unit = composition.common_unit(g.unit for g in guarantees)
    result = composition.compose(guarantees, delta=delta, relation=relation, method=method)
    valid = all(g.valid for g in guarantees)
    reasons = tuple(dict.fromkeys(r for g in guarantees for r in g.reasons))
    mode = "paper" if any(g.mode == "paper" for g in guarantees) else "sound"
    theorems = " + ".join(dict.fromkeys(g.theorem for g in guarantees if g.theorem))
    details: dict[str, Any] = {"composed_of": len(guarantees)}
    if result.conversions:
        details["conversions"] = list(result.conversions)
    return Guarantee(
        party=guarantees[0].party,
        unit=unit,
        relation=result.relation,
        epsilon=result.epsilon,
        delta=result.delta,
        events=result.events,
        accounting=result.accounting,
        theorem=theorems,
        mode=mode,
        valid=valid,
        reasons=reasons,
        details=details,
        delta_extra=min(result.delta_extra, result.delta),
    )


# --- factories: every Guarantee is built here or in privacy/families/ ------------------------


def gaussian_guarantee(
    noise_multiplier: float, *, steps: int = 1, details: dict[str, Any] | None = None, **fields: Any
) -> Guarantee:
    """``steps`` Gaussian releases with σ = ``noise_multiplier``·Δ (Δ under ``relation``), accounted by
    dp-accounting (``fields``: those of :meth:`Guarantee.from_event`)."""
    return Guarantee.from_event(
        accounting.gaussian_event(noise_multiplier, steps),
        details={"noise_multiplier": noise_multiplier, "steps": steps, **(details or {})},
        **fields,
    )


def closed_form_guarantee(
    epsilon: float,
    delta: float,
    *,
    party: Party,
    unit: Unit,
    relation: accounting.Relation,
    accounting: Accounting | str,
    theorem: str,
    events: Sequence[dp_accounting.DpEvent] = (),
    reasons: Sequence[str] = (),
    sensitivity: float | None = None,
    details: dict[str, Any] | None = None,
    delta_extra: float = 0.0,
    mode: Mode = "sound",
) -> Guarantee:
    """A guarantee whose (ε, δ) comes from a closed-form calibration (analytic Gaussian, KKMM, pure).

    ``events`` (optional) describe the same mechanism for composition with later releases. In
    ``"paper"`` mode it is the record of a published procedure, never valid (see :func:`paper_guarantee`).
    """
    if mode == "paper":
        reasons = tuple(dict.fromkeys((*reasons, PAPER_REASON)))
    return Guarantee(
        party=party, unit=unit, relation=relation, epsilon=epsilon, delta=delta, events=tuple(events),
        accounting=accounting, theorem=theorem, mode=mode, valid=mode == "sound" and not reasons,
        reasons=tuple(reasons), sensitivity=sensitivity, details=dict(details or {}), delta_extra=delta_extra,
    )


def analytic_gaussian_guarantee(
    epsilon: float, delta: float, noise_multiplier: float, *, steps: int = 1, **fields: Any
) -> Guarantee:
    """``steps`` Gaussian releases whose composition is (ε, δ)-DP by the analytic Gaussian (Balle & Wang
    2018, Thm. 8) — for ``steps`` > 1 through the exact composition of Gaussians (one Gaussian of multiplier
    z/√steps; Dong, Roth & Su 2022, Cor. 3.3). ``fields``: those of :func:`closed_form_guarantee`."""
    return closed_form_guarantee(
        float(epsilon), float(delta), events=(accounting.gaussian_event(noise_multiplier, steps),),
        accounting="analytic_gaussian", **fields,
    )


def paper_guarantee(epsilon: float, delta: float, *, reasons: Sequence[str], **fields: Any) -> Guarantee:
    """The (invalid) record of a published procedure reproduced in paper mode, with why it is not DP
    (the fields of :func:`closed_form_guarantee`)."""
    return closed_form_guarantee(epsilon, delta, reasons=reasons, mode="paper", **fields)
