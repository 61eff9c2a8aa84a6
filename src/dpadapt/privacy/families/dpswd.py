"""Planning of DP-SWD releases: noise calibration and the Guarantee, before any data or noise.

Used by :mod:`dpadapt.transport.swd` (the one-shot and per-step projection releases), the
DP-SWD domain adaptation (:mod:`dpadapt.deep.swd_da`) and the DP-SWD generator. The sensitivity
bounds themselves (spectral ‖U‖op, the Beta-law bounds of the paper's Lemmas 1–2) are in
:mod:`dpadapt.privacy.families.projection_sensitivity`; the theorems are in :mod:`dpadapt.transport.swd`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpadapt.privacy import accounting
from dpadapt.privacy.families import projection_sensitivity as bounds
from dpadapt.privacy.guarantee import Guarantee, analytic_gaussian_guarantee
from dpadapt.privacy.mechanisms import FAST_SAMPLER_WORDS
from dpadapt.validation import check_delta, check_epsilon, check_positive

THEOREM_SPECTRAL = (
    "Gaussian mechanism on clip(X)U with Frobenius sensitivity 2R‖U‖op (exact given the public U), "
    "fixed-size sampling without replacement (Wang, Balle & Kasiviswanathan, AISTATS 2019), RDP composition; "
    + FAST_SAMPLER_WORDS
)
THEOREM_BETA = (
    "Gaussian mechanism on clip(X)U with sensitivity 2R·sqrt(w) where w bounds Σ_j (zᵀu_j)² except with "
    "probability δ_fail/T per release (Rakotomamonjy & Ralaivola 2021, Lemma 1; {bound}); union bound over "
    "the T releases; sampling without replacement (WBK19); RDP composition; " + FAST_SAMPLER_WORDS
)
PAPER_REASONS = {
    "failure": "the probabilistic sensitivity bound fails with probability δ/2 at every one of the T releases "
    "but the failure is budgeted once (spec 02, soundness 3)",
    "clt": "the CLT sensitivity 'bound' is a heuristic, not a bound (spec 02, soundness 3)",
}



# --- calibration ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DPSWDPlan:
    """Noise calibration of T private projection releases and the Guarantee they cost.

    ``sigma(U)`` gives the noise std for a release with directions U (for ``spectral`` it
    scales with ‖U‖op; for the Beta-based methods it is fixed). ``clip_norm`` R is the public
    row-norm bound; the replace-one diameter is 2R.
    """

    epsilon: float
    delta: float
    method: str
    mode: str
    n: int
    batch_size: int
    steps: int
    k: int
    d: int
    clip_norm: float
    noise_multiplier: float
    unit_squared_sensitivity: float | None
    failure_per_step: float
    guarantee: Guarantee

    @property
    def diameter(self) -> float:
        return 2.0 * self.clip_norm

    def sensitivity(self, U: np.ndarray | None = None) -> float:
        """ℓ2 sensitivity Δ of one release (2R·‖U‖op for spectral, 2R·sqrt(w) otherwise)."""
        if self.method == "spectral":
            if U is None:
                raise ValueError("spectral sensitivity depends on U")
            return self.diameter * bounds.operator_norm(U)
        return self.diameter * math.sqrt(self.unit_squared_sensitivity)

    def sigma(self, U: np.ndarray | None = None, *, foreign: bool = False) -> float:
        """Noise std σ = z · Δ for the release with directions ``U``.

        ``foreign=True`` says the protected party did not draw U itself: the Beta-based bounds
        assume U uniformly random and do not hold for a U chosen by someone else (all-equal
        columns give Σ_j (zᵀu_j)² = k), so the spectral sensitivity 2R‖U‖op is enforced as well:
        σ = z · 2R · max(sqrt(w), ‖U‖op), which keeps the multiplier ≥ z for the actual U.
        """
        s = self.noise_multiplier * self.sensitivity(U)
        if foreign and self.method != "spectral":
            if U is None:
                raise ValueError("a foreign U must be given to enforce its spectral sensitivity")
            s = max(s, self.noise_multiplier * self.diameter * bounds.operator_norm(U))
        return s


def steps_event(noise_multiplier: float, n: int, batch_size: int, steps: int):
    """dp-accounting event of T fixed-size-B releases sampled without replacement from n rows."""
    return accounting.sampled_without_replacement_gaussian_event(noise_multiplier, n, batch_size, steps)


def _calibrate(make, epsilon: float, delta: float) -> float:
    """Smallest noise multiplier (to 1e-3) of the RDP-accounted event ``make(z)`` within (ε, δ)."""
    return accounting.calibrate_noise_multiplier(make, epsilon, delta, "replace_one", "rdp", tol=1e-3)


def plan_releases(
    epsilon: float,
    delta: float,
    *,
    n: int,
    batch_size: int,
    steps: int,
    k: int,
    d: int,
    clip_norm: float,
    method: str = "spectral",
    mode: str = "sound",
    failure_fraction: float = 0.5,
    charged_steps: int | None = None,
    extra_reasons: tuple[str, ...] = (),
) -> DPSWDPlan:
    """Calibrate the noise of ``steps`` projection releases to (ε, δ) and build their Guarantee.

    Sound mode (``spectral``, ``chernoff_beta``, ``bernstein``): z is the smallest noise
    multiplier with the T-fold subsampled Gaussian (ε_RDP, δ_RDP)-DP, where for the Beta-based
    methods δ_fail = failure_fraction·δ is reserved for the union bound over the T releases
    (per release δ_fail/T), δ_RDP = δ − δ_fail and ε_RDP = ε − ln(1/(1 − δ_fail)).

    Paper mode reproduces the published calibration: per-release failure δ/2, RDP converted at
    δ/2, rows of norm ≤ 1/2 (``clip_norm`` is the published normalisation 1/2 unless given),
    ``charged_steps`` (the steps the paper's accountant charges, default ``steps``). The
    Guarantee is marked invalid with reasons.
    """
    check_epsilon(epsilon)
    if mode not in ("sound", "paper"):
        raise ValueError(f"mode must be 'sound' or 'paper', got {mode!r}")
    check_delta(delta, n, sound=mode == "sound")
    check_positive(clip_norm, "clip_norm")
    if method not in bounds.SENSITIVITY_METHODS:
        raise ValueError(f"method must be one of {bounds.SENSITIVITY_METHODS}, got {method!r}")
    if mode == "sound" and method not in bounds.SOUND_METHODS:
        raise ValueError(f"sensitivity method {method!r} is not a valid bound; use it only with mode='paper'")
    if mode == "paper" and method == "spectral":
        raise ValueError("paper mode uses the published Beta-based sensitivity ('bernstein', 'bernstein_code', 'clt')")
    n, batch_size, steps, k, d = int(n), int(batch_size), int(steps), int(k), int(d)
    if not 1 <= batch_size <= n:
        raise ValueError(f"batch_size must be in [1, n={n}], got {batch_size}")
    if steps < 1:
        raise ValueError(f"steps must be ≥ 1, got {steps}")
    common = {"party": "target", "unit": "record", "relation": "replace_one"}
    details = {"n": n, "batch_size": batch_size, "steps": steps, "k": k, "d": d, "clip_norm": clip_norm, "method": method}

    if mode == "paper":
        charged = int(charged_steps or steps)
        fail = delta / 2.0
        w = bounds.projection_sensitivity(method, k=k, d=d, failure=fail).squared
        make = lambda z: steps_event(z, n, batch_size, charged)
        z = _calibrate(make, epsilon, delta / 2.0)
        event = make(z)
        eps = accounting.epsilon(event, delta / 2.0, "replace_one", "rdp")
        reasons = [PAPER_REASONS["failure"]] + ([PAPER_REASONS["clt"]] if method == "clt" else [])
        if charged != steps:
            reasons.append(f"the accountant charges {charged} releases but {steps} target batches are released "
                           "(spec 02, soundness 5)")
        g = Guarantee(
            **common, epsilon=eps, delta=delta, events=(event,), accounting="rdp", mode="paper", valid=False,
            reasons=tuple(reasons) + tuple(extra_reasons) + ("published procedure reproduced for comparison (paper mode)",),
            theorem="Rakotomamonjy & Ralaivola 2021, Proposition 2 with the published calibration",
            sensitivity=2 * clip_norm * math.sqrt(w),
            details={**details, "noise_multiplier": z, "squared_sensitivity_unit": w, "charged_steps": charged},
        )
        return DPSWDPlan(epsilon, delta, method, mode, n, batch_size, steps, k, d, clip_norm, z, w, fail, g)

    make = lambda z: steps_event(z, n, batch_size, steps)
    if method == "spectral":
        spectral_details = {**details, "sensitivity": "2R·‖U_t‖op per release"}
        if steps == 1 and batch_size == n:  # one release of all rows: exact analytic Gaussian calibration
            z = accounting.analytic_gaussian_sigma(epsilon, delta, 1.0)
            g = Guarantee(
                **common, epsilon=epsilon, delta=delta, events=(accounting.gaussian_event(z),),
                accounting="analytic_gaussian", valid=not extra_reasons, reasons=tuple(extra_reasons),
                theorem="Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) on clip(X)U, sensitivity 2R‖U‖op; "
                + FAST_SAMPLER_WORDS,
                details={**spectral_details, "noise_multiplier": z},
            )
        else:
            z = _calibrate(make, epsilon, delta)
            g = Guarantee.from_event(
                make(z), delta=delta, method="rdp", theorem=THEOREM_SPECTRAL, reasons=extra_reasons,
                details={**spectral_details, "noise_multiplier": z}, **common,
            )
        return DPSWDPlan(epsilon, delta, method, mode, n, batch_size, steps, k, d, clip_norm, z, None, 0.0, g)

    if not 0 < failure_fraction < 1:
        raise ValueError(f"failure_fraction must be in (0, 1), got {failure_fraction}")
    delta_fail = failure_fraction * delta
    per_step = delta_fail / steps
    w = bounds.projection_sensitivity(method, k=k, d=d, failure=per_step).squared
    eps_cond = math.log(1.0 / (1.0 - delta_fail))
    if epsilon <= eps_cond:
        raise ValueError("epsilon too small for the failure budget")
    z = _calibrate(make, epsilon - eps_cond, delta - delta_fail)
    event = make(z)
    eps_total = accounting.epsilon(event, delta - delta_fail, "replace_one", "rdp") + eps_cond
    bound = "Chernoff bound with the Beta MGF" if method == "chernoff_beta" else "Lemma 2 (Bernstein)"
    g = Guarantee(
        **common, epsilon=eps_total, delta=delta, events=(event,), accounting="rdp",
        theorem=THEOREM_BETA.format(bound=bound), valid=not extra_reasons, reasons=tuple(extra_reasons),
        sensitivity=2 * clip_norm * math.sqrt(w),
        details={**details, "noise_multiplier": z, "squared_sensitivity_unit": w, "delta_fail": delta_fail,
                 "failure_per_step": per_step, "epsilon_conditioning": eps_cond},
        # the events hold at δ − δ_fail whenever the bound holds; composition reserves δ_fail (Guarantee.delta_extra)
        # and, by the fixed-U argument there, needs no conditioning term (the stated ε keeps the spec's ln(1/(1−δ_fail)))
        delta_extra=delta_fail,
    )
    return DPSWDPlan(epsilon, delta, method, mode, n, batch_size, steps, k, d, clip_norm, z, w, per_step, g)


def paper_epsilon(
    sigma: float, *, delta: float, n: int, batch_size: int, epochs: int, k: int, d: int, method: str = "bernstein_code"
) -> float:
    """ε the paper's pipeline (spec 02 §4) assigns to noise std σ.

    z = σ / sqrt(w(k, δ/2)), T = (n // B + 1)·epochs subsampled releases, ε at δ/2 (rows of
    norm ≤ 1/2, so the diameter is 1). Not a valid guarantee — for reproducing Table 4 only.
    """
    w = bounds.projection_sensitivity(method, k=k, d=d, failure=delta / 2.0).squared
    steps = (int(n) // int(batch_size) + 1) * int(epochs)
    event = steps_event(sigma / math.sqrt(w), n, batch_size, steps)
    return accounting.epsilon(event, delta / 2.0, "replace_one", "rdp")




# --- one release of sliced marginals (the DP generator's data release) ------------------------------

THEOREM_SLICED_MARGINALS = (
    "Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) on the k×b histogram of the rows' "
    "projections on k public directions with fixed public bins: a record moves one count per direction, "
    "so the ℓ2 sensitivity is sqrt(2k) under replace-one, whatever n is; everything trained on it is post-processing"
)


def plan_sliced_marginals(epsilon: float, delta: float, *, n: int, k: int, bins: int, party: str = "target"):
    """σ and the Guarantee of ONE Gaussian release of k sliced histograms (replace-one, sqrt(2k) sensitivity)."""
    check_epsilon(epsilon)
    check_delta(delta, n, sound=True)
    if int(k) < 1 or int(bins) < 2:
        raise ValueError(f"need k ≥ 1 directions and ≥ 2 bins, got k={k}, bins={bins}")
    sensitivity = math.sqrt(2.0 * int(k))
    z = accounting.analytic_gaussian_sigma(epsilon, delta, 1.0)
    g = analytic_gaussian_guarantee(
        epsilon, delta, z, party=party, unit="record", relation="replace_one", theorem=THEOREM_SLICED_MARGINALS,
        sensitivity=sensitivity, details={"n": int(n), "k": int(k), "bins": int(bins), "noise_multiplier": z,
                                          "sigma": z * sensitivity, "releases": 1},
    )
    return z * sensitivity, g


def rounds_guarantee(plan: DPSWDPlan, rounds: int) -> Guarantee:
    """The Guarantee of ``rounds`` releases made under ``plan`` (spectral: the subsampled events of those
    rounds alone; the Beta-bound methods: the plan's whole guarantee, whose δ_fail covers every round)."""
    if plan.method != "spectral":
        return plan.guarantee
    return Guarantee.from_event(
        steps_event(plan.noise_multiplier, plan.n, plan.batch_size, rounds),
        party="target", unit="record", relation="replace_one", delta=plan.delta, theorem=plan.guarantee.theorem,
        details={"rounds": rounds, "noise_multiplier": plan.noise_multiplier},
    )


def projections_guarantee(epsilon: float, delta: float, *, sigma: float, clip_norm: float, k: int) -> Guarantee:
    """One analytic Gaussian release of clip(X)U (Balle & Wang 2018, Thm. 8) whose ε, for the given σ and
    sensitivity 2R‖U‖op, was computed by the caller (:func:`dpadapt.privacy.accounting.analytic_gaussian_epsilon`)."""
    return Guarantee(
        party="target", unit="record", relation="replace_one", epsilon=epsilon, delta=delta,
        accounting="analytic_gaussian",
        theorem="Analytic Gaussian mechanism on clip(X)U, sensitivity 2R‖U‖op; " + FAST_SAMPLER_WORDS,
        sensitivity=None, details={"sigma": sigma, "clip_norm": clip_norm, "k": k},
    )


# --- the source's public map (first message of the marginals protocol) -----------------------------

PUBLIC_MAP_REASON = (
    "the source is public in DP-SWD: its source-only extractor g, head h, standardisation, centre, "
    "directions and bins are functions of the source's own rows and of public randomness, sent in the "
    "clear; only the target is protected (by its one sliced-marginals release)"
)


def public_map_disclosure() -> Guarantee:
    """The record of the source's public map: ε = ∞ (a disclosure, not a DP claim), with the reason."""
    return Guarantee.non_private("source", PUBLIC_MAP_REASON)
