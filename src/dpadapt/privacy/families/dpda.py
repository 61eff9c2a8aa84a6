"""Planning of DP-SGD training for DPDA / G-DPDA: σ, rate, steps and the Guarantee, before training.

Theorem: DP-SGD (Abadi et al., CCS 2016) — per step a Poisson-subsampled Gaussian mechanism on
per-example gradients jointly clipped to C; replace-one neighbours, one record per party, the dataset
size n public (the sampling rate q = B/n and the step count are computed from it and stated): the
privacy-loss distribution of the sampled Gaussian under replacement (dp-accounting's ``REPLACE_ONE``
PLD) composed over the steps. an add/remove guarantee computed at q = B/n of the
private n would be broken by its own statement (D and D minus a record give different Guarantees).
Paper mode keeps the paper's add/remove moments accountant for its choices (T) and is charged under
replace-one like sound mode.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Literal

from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import PAPER_ADD_REMOVE_REASON, Guarantee
from dpadapt.validation import check_delta, check_epsilon, check_privacy_mode

THEOREM = (
    "DP-SGD (Abadi et al., CCS 2016): Poisson-subsampled Gaussian mechanism on per-example gradients "
    "clipped to C; replace-one neighbours with the dataset size n public (q = B/n and the steps are stated): a "
    "record's clipped gradient v replaced by v', |v|, |v'| <= C, each in the Poisson sample with probability q; "
    "privacy-loss distribution of that sampled Gaussian composed over the steps by dp-accounting (REPLACE_ONE PLD); "
    "noise from torch's float32 Gaussian sampler (not floating-point vetted: OpenDP's sampler would cost minutes per "
    "epoch for the per-step noise of every parameter)"
)


Grouping = Literal["joint", "per_group"]
#: The network parts each block's loss reaches (the clipping groups of paper mode).
BLOCK_PARTS: dict[str, tuple[str, str]] = {"label": ("feature", "label"), "domain": ("feature", "domain")}


@dataclasses.dataclass(frozen=True)
class PrivacySpec:
    """Clipping and noise of one private stream.

    Attributes
    ----------
    clip : float
        ℓ2 bound C on each example's (joint or per-group) gradient.
    noise_multiplier : float
        σ: the noise added to each clipped sum is N(0, σ²C²I).
    grouping : {"joint", "per_group"}
        ``"joint"`` (sound) or the published separate clipping per parameter group (paper mode).
    """

    clip: float
    noise_multiplier: float
    grouping: Grouping = "joint"

    def __post_init__(self) -> None:
        if not (self.clip > 0 and math.isfinite(self.clip)):
            raise ValueError(f"clipping bound C must be a finite number > 0, got {self.clip}")
        if not (self.noise_multiplier >= 0 and math.isfinite(self.noise_multiplier)):
            raise ValueError(f"noise multiplier must be a finite number ≥ 0, got {self.noise_multiplier}")
        if self.grouping not in ("joint", "per_group"):
            raise ValueError(f"grouping must be 'joint' or 'per_group', got {self.grouping!r}")


def stream_groups(blocks: Sequence[str], grouping: Grouping) -> list[tuple[str, str]]:
    """The clipping groups of a stream: one ``("*", "*")`` group, or one per (block, part)."""
    if grouping == "joint":
        return [("*", "*")]
    return [(b, part) for b in blocks for part in BLOCK_PARTS[b]]


def stream_noise_multiplier(spec: PrivacySpec, blocks: Sequence[str]) -> float:
    """Noise multiplier to charge per step: σ for joint clipping, σ/√G for G separately clipped groups."""
    return spec.noise_multiplier / math.sqrt(len(stream_groups(blocks, spec.grouping)))


@dataclasses.dataclass(frozen=True)
class PrivatePlan:
    """The a-priori privacy plan of one protected party: noise, rate, streams and step budget.

    ``phases`` are the private streams of the party (their block tuples); each runs every step
    on its own Poisson sample. ``charged`` multipliers are what the accountant is given;
    ``decision_multiplier`` and ``decision_split`` describe the accountant used to choose T
    (equal to the charged one in sound mode; the paper's in paper mode).
    """

    party: str
    epsilon: float
    delta: float
    rate: float
    spec: PrivacySpec
    phases: tuple[tuple[str, ...], ...]
    max_steps: int
    mode: str

    @property
    def charged_multipliers(self) -> tuple[float, ...]:
        return tuple(stream_noise_multiplier(self.spec, blocks) for blocks in self.phases)

    def event(self, steps: int):
        """dp-accounting event of ``steps`` steps of every phase (what is charged)."""
        return accounting.compose([accounting.poisson_gaussian_event(z, self.rate, steps) for z in self.charged_multipliers])

    def guarantee(self, steps: int) -> Guarantee:
        """The party's guarantee after ``steps`` steps (computed without touching data or noise)."""
        reasons = []
        details = {
            "steps": int(steps),
            "sample_rate": self.rate,
            "noise_multiplier": self.spec.noise_multiplier,
            "clip": self.spec.clip,
            "grouping": self.spec.grouping,
            "charged_multipliers": list(self.charged_multipliers),
            "budget_epsilon": self.epsilon,
            "max_steps_allowed": self.max_steps,
        }
        if self.mode == "paper":
            reasons.append(PAPER_ADD_REMOVE_REASON)
            n_groups = [len(stream_groups(b, self.spec.grouping)) for b in self.phases]
            reasons.append(
                "per-parameter-group clipping with separate noise (Wang et al. 2020, Eqs. 14-15/19-22): "
                f"joint sensitivity sqrt(G)*C with G = {n_groups}; charged here at multiplier sigma/sqrt(G), "
                "whereas the paper's accountant charges sigma"
            )
            details["paper_claimed_epsilon"] = _paper_epsilon(self.spec.noise_multiplier, self.rate, steps, self.delta, len(self.phases))
        return Guarantee.from_event(
            self.event(steps),
            party=self.party,
            unit="record",
            relation="replace_one",
            delta=self.delta,
            theorem=THEOREM,
            method="pld",
            mode=self.mode,
            reasons=reasons,
            sensitivity=self.spec.clip,
            details=details,
        )


def _paper_epsilon(sigma: float, rate: float, steps: int, delta: float, n_phases: int) -> float:
    """What the paper's accountant reports: one SGM at multiplier σ per phase (add/remove RDP), phases by basic
    composition."""
    if steps == 0:
        return 0.0
    return n_phases * accounting.epsilon(accounting.poisson_gaussian_event(sigma, rate, steps), delta / n_phases)


@functools.lru_cache(maxsize=256)
def _sigma_and_steps(mode: str, phases: tuple[tuple[str, ...], ...], rate: float, clip: float, epsilon: float,
                     delta: float, noise_multiplier: float | None, cap_steps: int) -> tuple[float, int]:
    """(σ, T) of one party (see :func:`plan_party`); memoised, as a calibration under replace-one PLD costs ~1–2 s and
    every fit (seeds, benchmark rows) of one configuration asks for the same."""
    grouping = "joint" if mode == "sound" else "per_group"

    def decision_event(sigma: float, steps: int):
        if mode == "sound":
            spec = PrivacySpec(clip, sigma, grouping)
            return accounting.compose(
                [accounting.poisson_gaussian_event(stream_noise_multiplier(spec, b), rate, steps) for b in phases]
            )
        return accounting.poisson_gaussian_event(sigma, rate, steps)

    # sound: the charged accountant (replace-one PLD); paper: the paper's (add/remove RDP, phases by basic composition)
    decision_eps, decision_delta = (epsilon, delta) if mode == "sound" else (epsilon / len(phases), delta / len(phases))
    relation, method = ("replace_one", "pld") if mode == "sound" else ("add_remove", "rdp")
    if noise_multiplier is None:
        sigma = accounting.calibrate_noise_multiplier(lambda z: decision_event(z, cap_steps), decision_eps, decision_delta,
                                                      relation, method)
        return sigma, cap_steps
    if accounting.epsilon(decision_event(noise_multiplier, cap_steps), decision_delta, relation, method) <= decision_eps:
        return noise_multiplier, cap_steps
    return noise_multiplier, accounting.max_steps(lambda t: decision_event(noise_multiplier, t), decision_eps,
                                                  decision_delta, relation, method, upper=cap_steps)


def plan_party(
    party: str,
    n_rows: int,
    batch_size: int,
    epsilon: float,
    delta: float,
    noise_multiplier: float | None,
    clip: float,
    mode: str,
    phases_sound: tuple[tuple[str, ...], ...],
    phases_paper: tuple[tuple[str, ...], ...],
    cap_steps: int,
) -> PrivatePlan:
    """Choose σ (if not given) and the step budget of one protected party, before any training.

    With σ given, ``max_steps`` is the largest T ≤ ``cap_steps`` within (ε, δ) (by the charged
    accountant in sound mode — replace-one PLD —, by the paper's in paper mode — add/remove RDP).
    With σ = None, σ is calibrated so that ``cap_steps`` steps meet (ε, δ) exactly.
    """
    epsilon = check_epsilon(epsilon, f"{party} epsilon")
    mode = check_privacy_mode(mode)
    delta = check_delta(delta, n_rows, f"{party} delta", sound=mode == "sound")
    if batch_size > n_rows:
        raise ValueError(f"batch_size {batch_size} exceeds the {n_rows} {party} rows")
    rate = batch_size / n_rows
    phases = phases_sound if mode == "sound" else phases_paper
    grouping = "joint" if mode == "sound" else "per_group"
    if noise_multiplier is not None:
        noise_multiplier = float(noise_multiplier)
        if not (noise_multiplier > 0 and math.isfinite(noise_multiplier)):
            raise ValueError(f"noise_multiplier must be a finite number > 0 (or None to calibrate), got {noise_multiplier}")
    sigma, steps = _sigma_and_steps(mode, phases, rate, float(clip), float(epsilon), float(delta), noise_multiplier,
                                    int(cap_steps))
    if steps < 1:
        raise ValueError(
            f"the {party} budget (ε={epsilon:g}, δ={delta:g}) does not allow a single step at noise multiplier "
            f"{sigma:g} and rate {rate:.4g}; raise ε or the noise multiplier"
        )
    return PrivatePlan(party, epsilon, delta, rate, PrivacySpec(clip, sigma, grouping), phases, int(steps), mode)


