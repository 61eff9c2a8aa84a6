"""Private first stage (and the single-stage algorithm) of Bassily, Mohri & Suresh (AISTATS 2023).

The target party holds T (n unlabelled rows); the public source S is hard-wired. Everything the
target releases is the weight vector q̂ ∈ Δ_m over source points (and, single-stage, ŵ); the
second-stage regression on the public source is post-processing. Neighbouring datasets replace
one target row (n public); rows are clipped to a public norm r, so every guarantee below is a
record-level (ε, δ)-DP guarantee for the target under ``replace_one``.

Sound calibrations (spec 03 §7):

* **Noisy Frank–Wolfe** (Algorithm 2 / arXiv Thm 4, AISTATS Thm 5): each step is report-noisy-min
  over the m simplex vertices with Laplace scale 2τ*/ε₀ (non-monotone scores, Dwork & Roth
  Claim 3.9), τ* = μr²r̂²/n the tight ℓ∞ sensitivity of ∇F̃ (Soundness 1–2). An ε₀-DP step is a
  post-processing of binary randomized response (Kairouz, Oh & Viswanath 2015), so the K steps
  are accounted as K RR(ε₀) events in RDP with dp-accounting, and ε₀ is the largest value whose
  composition is within (ε, δ). Paper mode uses the printed σ; its Guarantee is what that σ gives on
  the clipped rows, accounted the same way.
* **Noisy mirror descent** (Algorithm 3 / arXiv Thm 5, AISTATS Thm 6): Gaussian noise on the
  full gradient, ℓ2 sensitivity √m·τ*, K full-batch Gaussian steps accounted in RDP.
* **Single-stage Frank–Wolfe** (Algorithm 1 / arXiv Thm 6, AISTATS Thm 4) over (q, w): only the
  q-step touches T (τ_q = 4Λ²τ*); the w-step needs no noise. Output: the last iterate or a
  uniformly drawn iterate (Soundness 4); the published argmin-of-gap selection reads
  un-noised functions of T and is available only in paper mode, flagged invalid.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Literal

import dp_accounting
import numpy as np
from scipy import optimize, special

from dpadapt.discrepancy.core import (
    default_mu,
    gradient_sensitivity,
    second_moment,
    softmax_value_grad,
    source_radius,
)
from dpadapt.discrepancy.stage2 import weighted_regression
from dpadapt.privacy import accounting
from dpadapt.privacy.families import discrepancy as families
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import (
    NoiseSource,
    gaussian,
    random_streams,
    recorded,
    report_noisy_min,
)
from dpadapt.validation import (
    check_delta,
    check_epsilon,
    check_features,
    check_positive,
    check_privacy_mode,
    check_same_features,
)

Selection = Literal["last", "uniform", "paper_argmin"]

THEOREM_FW = (
    "Noisy Frank-Wolfe (Bassily, Mohri & Suresh, AISTATS 2023, Alg. 2 / Thm 5): report-noisy-min with "
    "Laplace scale 2τ/ε₀ is ε₀-DP (Dwork & Roth 2014, Claim 3.9); K steps composed as randomized "
    "response in RDP (Kairouz, Oh & Viswanath 2015; Mironov 2017)"
)
THEOREM_MD = (
    "Noisy mirror descent (Bassily, Mohri & Suresh, AISTATS 2023, Alg. 3 / Thm 6): K Gaussian "
    "mechanisms on the gradient, ℓ2 sensitivity √m·τ, RDP composition (Mironov 2017); each step's noise from the "
    "vetted discrete Gaussian sampler on a public lattice (Canonne, Kamath & Steinke 2020)"
)
THEOREM_SS = (
    "Single-stage private Frank-Wolfe (Bassily, Mohri & Suresh, AISTATS 2023, Alg. 1 / Thm 4): K "
    "report-noisy-min steps on ∇_q (w-step data-independent), composed as randomized response in RDP"
)


@dataclasses.dataclass(frozen=True)
class Problem:
    """Public constants of one run and the private second moment M₀ (never released)."""

    M0: np.ndarray
    X_source: np.ndarray
    n: int
    mu: float
    r: float
    r_hat: float
    lam: float
    K: int

    @property
    def m(self) -> int:
        return self.X_source.shape[0]

    def tau(self, tight: bool = True) -> float:
        """ℓ∞ sensitivity of ∇F̃_T (see :func:`~dpadapt.discrepancy.core.gradient_sensitivity`)."""
        return gradient_sensitivity(self.mu, self.r, self.r_hat, self.n, tight=tight)


@dataclasses.dataclass(frozen=True)
class PrivateResult:
    """Output of a private algorithm: q̂ (and ŵ), the target's guarantee and the public constants."""

    q: np.ndarray
    w: np.ndarray | None
    guarantee: Guarantee
    details: dict

    @property
    def epsilon(self) -> float:
        return self.guarantee.epsilon

    @property
    def delta(self) -> float:
        return self.guarantee.delta


@dataclasses.dataclass(frozen=True)
class Plan:
    """Noise calibration and its guarantee, computed before any noise is drawn."""

    guarantee: Guarantee
    noisy: bool
    sensitivity: float  # what the noise is calibrated to (ℓ∞ for RNM, ℓ2 for Gaussian)
    epsilon0: float  # per-step ε₀ for report-noisy-min (nan for Gaussian)
    monotone: bool  # report_noisy_min scale Δ/ε₀ (paper mode only) instead of 2Δ/ε₀
    sigma: float  # Laplace scale (RNM) or Gaussian std (MD); 0 when not noisy


def make_problem(
    X_target,
    X_source,
    *,
    K: int,
    lam: float,
    r: float,
    mu: float | None = None,
    r_hat: float | None = None,
) -> Problem:
    """Validate inputs, clip target rows to r and compute M₀; r̂ and μ default to public rules."""
    Xt = check_features(X_target, "X_target")
    Xs = check_features(X_source, "X_source")
    check_same_features(Xs, Xt)
    if int(K) != K or K < 1:
        raise ValueError(f"K (iterations) must be a positive integer, got {K}")
    if lam < 0:
        raise ValueError(f"lam must be ≥ 0, got {lam}")
    check_positive(r, "r")
    r_hat = source_radius(Xs) if r_hat is None else check_positive(r_hat, "r_hat")
    if np.sqrt((Xs**2).sum(axis=1)).max() > r_hat * (1 + 1e-9):
        raise ValueError("r_hat must bound every public source row norm")
    n, m = Xt.shape[0], Xs.shape[0]
    mu = default_mu(int(K), m, n, r_hat) if mu is None else check_positive(mu, "mu")
    return Problem(second_moment(Xt, r), Xs, n, float(mu), float(r), float(r_hat), float(lam), int(K))


# -- calibration ---------------------------------------------------------------------------


def _rr_steps_event(eps0: float, steps: int) -> dp_accounting.DpEvent:
    return dp_accounting.SelfComposedDpEvent(accounting.randomized_response_event(eps0, 2), steps)


@functools.lru_cache(maxsize=256)
def per_step_epsilon(epsilon: float, delta: float, K: int) -> float:
    """Largest ε₀ such that K adaptive ε₀-DP steps are (ε, δ)-DP by RDP accounting (bisection)."""
    def gap(log_eps0: float) -> float:
        return accounting.epsilon(_rr_steps_event(math.exp(log_eps0), K), delta, "replace_one") - epsilon

    lo, hi = math.log(epsilon / (10.0 * K)), math.log(min(epsilon, 30.0))
    if gap(lo) > 0:
        raise ValueError(f"(ε={epsilon}, δ={delta}) is unattainable with K={K} steps")
    if gap(hi) <= 0:
        return math.exp(hi)
    root = optimize.brentq(gap, lo, hi, xtol=1e-6)
    eps0 = math.exp(root)
    while gap(math.log(eps0)) > 0:  # land on the feasible side
        eps0 *= 1 - 1e-6
    return eps0


def _non_private_plan() -> Plan:
    return Plan(Guarantee.non_private("target", "ε = ∞: exact gradients, no noise"), False, 0.0, math.nan, False, 0.0)


def plan_rnm_steps(
    problem: Problem,
    epsilon: float,
    delta: float,
    privacy_mode: str,
    *,
    score_scale: float = 1.0,
    paper_monotone: bool = True,
    theorem: str = THEOREM_FW,
    extra_reasons: tuple[str, ...] = (),
) -> Plan:
    """Calibrate K report-noisy-min steps over scores ``score_scale·∇F̃_T + (T-independent terms)``.

    Sound: sensitivity τ = score_scale·μr²r̂²/n, scale 2τ/ε₀, ε₀ from :func:`per_step_epsilon`.
    Paper: the published scale (Alg. 2: 4μr²r̂²√(2K log(1/δ))/(nε) = loose-τ RNM treated as
    monotone with ε₀ = ε/√(8K log(1/δ)); Alg. 1: 4τ_q√(2K log(1/δ))/ε with the loose τ_q). Its Guarantee
    is what that scale gives on the clipped rows (:func:`~dpadapt.privacy.families.discrepancy.rnm_steps_paper_guarantee`;
    the paper's advanced-composition ε kept beside it), invalid only for the published argmin selection.
    """
    check_privacy_mode(privacy_mode)
    epsilon = check_epsilon(epsilon, allow_inf=True)
    if math.isinf(epsilon):
        return _non_private_plan()
    delta = check_delta(delta, problem.n, sound=privacy_mode == "sound")
    K = problem.K
    details = {"K": K, "mu": problem.mu, "r": problem.r, "r_hat": problem.r_hat, "n": problem.n, "m": problem.m}
    if privacy_mode == "sound":
        tau = score_scale * problem.tau(tight=True)
        eps0 = per_step_epsilon(epsilon, delta, K)
        event = _rr_steps_event(eps0, K)
        scale = 2.0 * tau / eps0
        g = families.rnm_steps_guarantee(
            event, delta, theorem=theorem, reasons=extra_reasons, sensitivity=tau,
            details={**details, "epsilon0": eps0, "laplace_scale": scale, "sensitivity": "linf, tight μr²r̂²/n"},
        )
        return Plan(g, True, tau, eps0, False, scale)
    tau = score_scale * problem.tau(tight=False)
    eps0 = epsilon / math.sqrt(8.0 * K * math.log(1.0 / delta))
    monotone = paper_monotone  # Alg. 2's printed σ is the monotone-RNM scale for the loose τ; Alg. 1's is 2τ/ε₀
    scale = (1.0 if monotone else 2.0) * tau / eps0
    g = families.rnm_steps_paper_guarantee(
        scale, score_scale * problem.tau(tight=True), eps0, K, delta, n=problem.n,
        theorem=theorem + "; paper-mode calibration: the published scale "
        + ("τ/ε₀ (τ = 2τ*, monotone report-noisy-max)" if monotone else "2τ/ε₀ (τ = 2τ*)") + " with ε₀ = ε/√(8K ln(1/δ))",
        reasons=extra_reasons, details={**details, "laplace_scale": scale},
    )
    return Plan(g, True, tau, eps0, monotone, scale)


def plan_gaussian_steps(problem: Problem, epsilon: float, delta: float, privacy_mode: str) -> Plan:
    """Calibrate K Gaussian gradient releases (Alg. 3): ℓ2 sensitivity √m·τ*, RDP accounting.

    Sound: the smallest σ whose K-fold composition is (ε, δ)-DP by RDP. Paper: the printed
    σ = 4μr²r̂²√(2Km log(1/δ))/(nε) with the ε the accountant gives for it on the clipped rows.
    """
    check_privacy_mode(privacy_mode)
    epsilon = check_epsilon(epsilon, allow_inf=True)
    if math.isinf(epsilon):
        return _non_private_plan()
    delta = check_delta(delta, problem.n, sound=privacy_mode == "sound")
    K, m = problem.K, problem.m
    l2 = math.sqrt(m) * problem.tau(tight=True)
    if privacy_mode == "sound":
        z = accounting.calibrate_noise_multiplier(
            lambda z: accounting.gaussian_event(z, K), epsilon, delta, "replace_one", "rdp"
        )
    else:
        sigma_paper = 4.0 * problem.mu * problem.r**2 * problem.r_hat**2 * math.sqrt(2.0 * K * m * math.log(1.0 / delta)) / (problem.n * epsilon)
        z = sigma_paper / l2
    sigma = z * l2
    g = families.gaussian_steps_guarantee(
        z, K, delta, n=problem.n, privacy_mode=privacy_mode, sensitivity=l2,
        theorem=THEOREM_MD + ("; paper-mode calibration: the published σ = 4μr²r̂²√(2Km ln(1/δ))/(nε)" if privacy_mode == "paper" else ""),
        details={"K": K, "mu": problem.mu, "r": problem.r, "r_hat": problem.r_hat, "n": problem.n, "m": m,
                 "noise_multiplier": z, "sigma": sigma, "sensitivity": "l2, √m·μr²r̂²/n"},
    )
    return Plan(g, True, l2, math.nan, False, sigma)


# -- algorithms ----------------------------------------------------------------------------


def _select(plan: Plan, scores: np.ndarray, noise: NoiseSource) -> int:
    if not plan.noisy:
        return int(np.argmin(scores))
    j, _ = report_noisy_min(scores, plan.sensitivity, plan.epsilon0, noise, monotone=plan.monotone)
    return j


def run_noisy_frank_wolfe(problem: Problem, plan: Plan, noise: NoiseSource) -> np.ndarray:
    """Algorithm 2 with a pre-computed plan: q_{k+1} = (1 − η_k)q_k + η_k e_{j_k}, η_k = 3/(k + 2).

    q₁ is uniform (data-independent); returns q_{K+1}, the last computed iterate.
    """
    m = problem.m
    q = np.full(m, 1.0 / m)
    for k in range(1, problem.K + 1):
        _, grad = softmax_value_grad(q, problem.M0, problem.X_source, problem.mu)
        j = _select(plan, grad + problem.lam * q, noise)
        eta = 3.0 / (k + 2.0)
        q *= 1.0 - eta
        q[j] += eta
    return q


def first_stage(
    X_target,
    X_source,
    epsilon: float,
    delta: float,
    *,
    algorithm: str = "frank_wolfe",
    r: float,
    K: int = 1000,
    lam: float = 1e-3,
    mu: float | None = None,
    r_hat: float | None = None,
    variant: str = "entropic",
    y_source=None,
    Lambda: float | None = None,
    random_state=None,
    privacy_mode: str = "sound",
    reproducible_noise: bool = False,
) -> PrivateResult:
    """The private first stage: q̂ by noisy Frank–Wolfe (Alg. 2, ``algorithm="frank_wolfe"``) or noisy
    mirror descent (Alg. 3, ``"mirror_descent"``, ``variant`` of :func:`run_noisy_mirror_descent`).

    Privacy: (ε, δ)-DP for the target, record level, replace-one (rows clipped to ‖x̃‖ ≤ r); see
    the module docstring. ``epsilon=inf`` runs the same iterations without noise (no privacy).
    With ``y_source`` the q̂-weighted, ‖w‖ ≤ Λ regression on the public source is also returned.
    """
    _, noise = random_streams(random_state, reproducible_noise=reproducible_noise)
    problem = make_problem(X_target, X_source, K=K, lam=lam, r=r, mu=mu, r_hat=r_hat)
    if algorithm == "frank_wolfe":
        plan = plan_rnm_steps(problem, epsilon, delta, privacy_mode)
        q, name = run_noisy_frank_wolfe(problem, plan, noise), "noisy_frank_wolfe"
    elif algorithm == "mirror_descent":
        plan = plan_gaussian_steps(problem, epsilon, delta, privacy_mode)
        q, name = run_noisy_mirror_descent(problem, plan, noise, variant), f"noisy_mirror_descent[{variant}]"
    else:
        raise ValueError(f"algorithm must be 'frank_wolfe' or 'mirror_descent', got {algorithm!r}")
    result = _result(q, problem, plan, y_source, Lambda, name)
    return dataclasses.replace(result, guarantee=recorded(result.guarantee, noise))


def noisy_frank_wolfe(X_target, X_source, epsilon: float, delta: float, **options) -> PrivateResult:
    """Private q̂ = argmin-ish of F̃_T(q) + (λ/2)‖q‖² over Δ_m by noisy Frank–Wolfe (Alg. 2): K
    report-noisy-min steps (``options``: those of :func:`first_stage`)."""
    return first_stage(X_target, X_source, epsilon, delta, algorithm="frank_wolfe", **options)


def mirror_step_size(problem: Problem) -> float:
    """η = (2/(r̂² + λ))·√(log m / K) (Alg. 3; data-independent)."""
    return 2.0 / (problem.r_hat**2 + problem.lam) * math.sqrt(math.log(problem.m) / problem.K)


def pnorm_mirror_map_inverse(theta: np.ndarray, p: float) -> np.ndarray:
    """argmin_{q ∈ Δ} Φ(q) − ⟨θ, q⟩ for Φ(q) = ‖q‖_p²/(2(p − 1)) (Bregman projection, spec §7.8a).

    KKT: q_i ∝ (θ_i − ν)₊^{1/(p−1)} =: u_i with (p − 1)Σu = ‖u‖_p^{2−p}; ν by a 1-D root solve
    in log space.
    """
    top = float(theta.max())
    inv = 1.0 / (p - 1.0)

    def h(gap: float) -> float:  # ν = top − gap
        t = theta - (top - gap)
        logu = np.full(theta.shape, -np.inf)
        pos = t > 0
        logu[pos] = inv * np.log(t[pos])
        return math.log(p - 1.0) + special.logsumexp(logu) - (2.0 - p) / p * special.logsumexp(p * logu)

    lo = hi = 1e-9 * max(1.0, abs(top))
    while h(hi) < 0:
        hi *= 2.0
    while h(lo) > 0:
        if lo < 1e-12 * max(1.0, abs(top)) * 1e-30:  # degenerate: all mass on the top coordinate
            return np.eye(theta.size)[int(np.argmax(theta))]
        lo /= 10.0
    gap = lo if lo == hi else optimize.brentq(h, lo, hi, xtol=1e-300, rtol=1e-12, maxiter=500)
    t = np.maximum(theta - (top - gap), 0.0)
    logu = np.where(t > 0, inv * np.log(np.where(t > 0, t, 1.0)), -np.inf)
    return np.exp(logu - special.logsumexp(logu))


def pnorm_mirror_map(q: np.ndarray, p: float) -> np.ndarray:
    """∇Φ(q) = ‖q‖_p^{2−p} q^{p−1}/(p − 1) for q ≥ 0."""
    return np.linalg.norm(q, ord=p) ** (2.0 - p) * q ** (p - 1.0) / (p - 1.0)


def run_noisy_mirror_descent(
    problem: Problem, plan: Plan, noise: NoiseSource, variant: str = "entropic"
) -> np.ndarray:
    """Algorithm 3 with a pre-computed plan; returns the average of q₁..q_K.

    ``variant="entropic"``: q_{k+1} ∝ q_k ⊙ exp(−η ĝ_k) (default, Soundness 8b);
    ``variant="pnorm"``: Bregman mirror step for Φ(q) = ‖q‖_p²/(2(p − 1)), p = 1 + 1/log m (8a).
    Both use η of :func:`mirror_step_size`; the update is post-processing of the noisy gradients.
    """
    if variant not in ("entropic", "pnorm"):
        raise ValueError(f"variant must be 'entropic' or 'pnorm', got {variant!r}")
    m = problem.m
    eta = mirror_step_size(problem)
    p = 1.0 + 1.0 / math.log(m)
    q = np.full(m, 1.0 / m)
    logq = np.log(q)
    total = np.zeros(m)
    for _ in range(problem.K):
        total += q
        _, grad = softmax_value_grad(q, problem.M0, problem.X_source, problem.mu)
        g = grad + problem.lam * q
        if plan.noisy:
            g = gaussian(g, sigma=plan.sigma, sensitivity=plan.sensitivity, noise=noise).value
        if variant == "entropic":
            logq = logq - eta * g
            logq -= special.logsumexp(logq)
            q = np.exp(logq)
        else:
            q = pnorm_mirror_map_inverse(pnorm_mirror_map(q, p) - eta * g, p)
    return total / problem.K


def noisy_mirror_descent(X_target, X_source, epsilon: float, delta: float, **options) -> PrivateResult:
    """Private q̂ by noisy mirror descent (Alg. 3): Gaussian noise on each full gradient, ε from the RDP
    accountant for K Gaussian releases of ℓ2 sensitivity √m·μr²r̂²/n (``options``: those of
    :func:`first_stage`, ``variant`` included). ``epsilon=inf``: no noise, no privacy."""
    return first_stage(X_target, X_source, epsilon, delta, algorithm="mirror_descent", **options)


# -- single stage ----------------------------------------------------------------------------


def single_stage_step_size(problem: Problem, Lambda: float, Y: float) -> float:
    """η of Thm 4 with the DA constants of spec §5 (data-independent: Λ, Y, μ, r̂, K)."""
    rh, mu, K = problem.r_hat, problem.mu, problem.K
    gamma_q = (Lambda * rh + Y) ** 2 + 4 * Lambda**2 * rh**2
    gamma_w = 2 * (Lambda * rh + Y) * rh
    mu_q, mu_w = 4 * Lambda**2 * mu * rh**4, rh**2
    gamma_qw = 2 * rh * (Lambda * rh + Y)
    D_q, D_w = 2.0, 2.0 * Lambda
    num = D_q * gamma_q + D_w * gamma_w
    den = D_q**2 * mu_q + D_w**2 * mu_w + 2 * gamma_qw * D_q * D_w
    return min(1.0, math.sqrt(2.0 * num / (den * K)))


def check_selection(selection: str, privacy_mode: str) -> None:
    """``paper_argmin`` reads un-noised functions of T: allowed only in paper mode."""
    check_privacy_mode(privacy_mode)
    if selection not in ("last", "uniform", "paper_argmin"):
        raise ValueError(f"selection must be 'last', 'uniform' or 'paper_argmin', got {selection!r}")
    if selection == "paper_argmin" and privacy_mode != "paper":
        raise ValueError("selection='paper_argmin' leaks through un-noised gap estimates; allowed only in paper mode")


def plan_single_stage(problem: Problem, epsilon: float, delta: float, privacy_mode: str, Lambda: float,
                      selection: Selection) -> Plan:
    """Calibrate Alg. 1's K report-noisy-min q-steps (scores Σ-loss + 4Λ²∇F̃_T, ℓ∞ sens. 4Λ²τ)."""
    check_selection(selection, privacy_mode)
    check_positive(Lambda, "Lambda")
    reasons = (
        ("output chosen by arg min of gap estimates computed from un-noised gradients of the private objective",)
        if selection == "paper_argmin" else ()
    )
    return plan_rnm_steps(problem, epsilon, delta, privacy_mode, score_scale=4.0 * Lambda**2,
                          paper_monotone=False, theorem=THEOREM_SS, extra_reasons=reasons)


def run_single_stage(problem: Problem, plan: Plan, y_source, Lambda: float, Y: float | None,
                     selection: Selection, public: np.random.Generator, noise: NoiseSource) -> PrivateResult:
    """Alg. 1 with a pre-computed plan: FW over Δ_m × B(Λ) with the constant step of Thm 4.

    (q⁰, w⁰) = (uniform, 0). ``"paper_argmin"`` uses the un-noised FW gap of each iterate (the
    noisy minimum value is not exposed by report-noisy-min; paper mode only, flagged invalid).
    """
    Xs = problem.X_source
    ys = np.asarray(y_source, dtype=np.float64).ravel()
    if ys.shape[0] != problem.m or not np.all(np.isfinite(ys)):
        raise ValueError(f"y_source must hold {problem.m} finite values")
    Y = float(np.abs(ys).max()) if Y is None else check_positive(Y, "Y")
    eta = single_stage_step_size(problem, Lambda, Y)
    m, d = Xs.shape
    q, w = np.full(m, 1.0 / m), np.zeros(d)
    pick = int(public.integers(problem.K)) if selection == "uniform" else -1  # data-independent
    best = (math.inf, q.copy(), w.copy())
    chosen = None
    for k in range(problem.K):
        if k == pick:
            chosen = (q.copy(), w.copy())
        resid = Xs @ w - ys
        _, gF = softmax_value_grad(q, problem.M0, Xs, problem.mu)
        grad_q = resid**2 + 4.0 * Lambda**2 * gF
        j = _select(plan, grad_q, noise)
        grad_w = 2.0 * Xs.T @ (q * resid)
        norm = float(np.linalg.norm(grad_w))
        u = -Lambda * grad_w / norm if norm > 0 else w.copy()
        if selection == "paper_argmin":
            gap = float(grad_q @ q - grad_q[j]) + float(grad_w @ (w - u))
            if gap < best[0]:
                best = (gap, q.copy(), w.copy())
        q *= 1.0 - eta
        q[j] += eta
        w = (1.0 - eta) * w + eta * u
    if selection == "uniform":
        q, w = chosen
    elif selection == "paper_argmin":
        q, w = best[1], best[2]
    g = plan.guarantee
    details = {**g.details, "algorithm": "single_stage_frank_wolfe", "selection": selection, "eta": eta,
               "Lambda": Lambda, "Y": Y, "mu": problem.mu, "r": problem.r, "r_hat": problem.r_hat, "K": problem.K}
    return PrivateResult(q, w, g, details)


def single_stage_frank_wolfe(
    X_target,
    X_source,
    y_source,
    epsilon: float,
    delta: float,
    *,
    r: float,
    Lambda: float,
    K: int = 1000,
    mu: float | None = None,
    r_hat: float | None = None,
    Y: float | None = None,
    selection: Selection = "last",
    random_state=None,
    privacy_mode: str = "sound",
    reproducible_noise: bool = False,
) -> PrivateResult:
    """Private (q̂, ŵ) minimising Σ_i q_i(⟨w, x_i⟩ − y_i)² + 4Λ²F̃_T(q) over Δ_m × B(Λ) (Alg. 1).

    Privacy: (ε, δ)-DP for the target (record level, replace-one): K report-noisy-min steps over
    ∇_q with ℓ∞ sensitivity 4Λ²μr²r̂²/n; the w-gradient does not involve T. ``selection``:
    ``"last"`` (q^K, w^K) or ``"uniform"`` (an iterate drawn uniformly from 0..K−1, independent of
    T) are post-processing; ``"paper_argmin"`` (arg min of the gap estimates, which read
    un-noised functions of T) only in paper mode, and the guarantee is flagged invalid.
    ``Y`` bounds |y| (default: max |y_i| over the public source).
    """
    check_selection(selection, privacy_mode)
    public, noise = random_streams(random_state, reproducible_noise=reproducible_noise)
    problem = make_problem(X_target, X_source, K=K, lam=0.0, r=r, mu=mu, r_hat=r_hat)
    plan = plan_single_stage(problem, epsilon, delta, privacy_mode, Lambda, selection)
    result = run_single_stage(problem, plan, y_source, Lambda, Y, selection, public, noise)
    return dataclasses.replace(result, guarantee=recorded(result.guarantee, noise))


def _result(q, problem: Problem, plan: Plan, y_source, Lambda, name: str) -> PrivateResult:
    w = None
    if y_source is not None:
        w = weighted_regression(q, problem.X_source, y_source, Lambda=Lambda)
    details = {**plan.guarantee.details, "algorithm": name, "mu": problem.mu, "r": problem.r,
               "r_hat": problem.r_hat, "K": problem.K, "lam": problem.lam}
    return PrivateResult(q, w, plan.guarantee, details)
