"""Differentially private sliced Wasserstein distance (DP-SWD; Rakotomamonjy & Ralaivola, ICML 2021).

The private party holds X (n × d). For public random unit directions U (d × k) it releases
``P = clip(X) U + V`` with V i.i.d. N(0, σ²) (the Gaussian mechanism on the projections,
Algorithm 1); the other party projects its own rows with the same U, adds noise of the same σ
(not needed for privacy; it makes both sides equally smoothed, so the population quantity is
the Gaussian-smoothed SWD, a metric) and computes

    DP-SWD_q = ( (1/k) Σ_j W_q^q(P_s[:, j], P_t[:, j]) )^{1/q}

with 1-D Wasserstein distances (sorted matching for equal sizes, POT for unequal sizes).

Privacy unit and relation: one row (record) of the private matrix, ``replace_one`` (n public).
Rows are clipped to a **public** norm R (per-row, no batch statistics), so two neighbouring
rows differ by ‖z‖ ≤ 2R (the diameter) and the Frobenius sensitivity of XU is
2R · sqrt(H) with H = sup_{‖z‖≤1} Σ_j (zᵀu_j)². Bounds on H (``sensitivity methods``):

* ``spectral`` (default, sound): conditionally on the drawn U, H = ‖U‖op² exactly
  (deterministic, no failure probability). The noise multiplier z = σ/Δ is calibrated once;
  the per-release σ_t = z · 2R · ‖U_t‖op follows the public U_t.
* ``chernoff_beta`` (sound): for unit z, (zᵀu)² ~ Beta(1/2, (d−1)/2) (paper Lemma 1), so
  P(H ≥ t) ≤ min_λ e^{−λt} M(λ)^k with M(λ) = ₁F₁(1/2; d/2; λ) its MGF. The per-release
  failure δ_U = δ_fail / T is union-bounded over all T releases; conditioning on the good event
  gives (ε_RDP + ln(1/(1 − δ_fail)), δ_RDP + δ_fail).
* ``bernstein`` (sound with the same union bound): the paper's Lemma 2,
  w_B = k/d + (2/3) ln(1/δ') + (2/d) sqrt(k (d−1)/(d+2) ln(1/δ')), at δ' = δ_fail / T.
* ``bernstein_code`` / ``clt``: paper mode only. ``bernstein_code`` is the reference code's
  variant (extra sqrt(k) in the last term); ``clt`` is the paper's central-limit heuristic,
  which is **not** a bound. In paper mode the failure δ/2 is charged once for all T steps
  (the published accounting; see spec 02, soundness note 3), so the Guarantee is invalid.

Accounting: T releases of fixed-size batches B sampled without replacement from n rows,
``replace_one`` (Wang, Balle & Kasiviswanathan, AISTATS 2019) via
:func:`dpadapt.privacy.accounting.sampled_without_replacement_gaussian_event`; σ is calibrated
by bisection on dp-accounting (:func:`dpadapt.privacy.accounting.calibrate_noise_multiplier`).
"""

from __future__ import annotations

import numpy as np

from dpadapt.privacy import accounting
from dpadapt.privacy.families.dpswd import (
    PAPER_REASONS,
    THEOREM_BETA,
    THEOREM_SPECTRAL,
    DPSWDPlan,
    paper_epsilon,
    plan_releases,
    steps_event,
)
from dpadapt.privacy.families.projection_sensitivity import (  # the bounds live with the plan, in privacy/
    bernstein_bound,
    bernstein_code_bound,
    BETA_METHODS,
    beta_moments,
    chernoff_beta_bound,
    clt_value,
    operator_norm,
    projection_sensitivity,
    ProjectionSensitivity,
    SENSITIVITY_METHODS,
    SensitivityMethod,
    SOUND_METHODS,
)
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import NoiseSource, clip_rows, noisy_projections, random_streams, recorded, secret_permutation
from dpadapt.release import Release, ReleaseError
from dpadapt.validation import (
    check_delta,
    check_epsilon,
    check_features,
    check_positive,
    check_random_state,
    check_same_features,
)

# --- random directions -----------------------------------------------------------------------


def directions(d: int, k: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
    """k directions uniform on the unit sphere S^{d−1}, as the columns of a (d, k) matrix.

    Public randomness (released with the projections): ``rng`` must be the public stream of
    :func:`~dpadapt.privacy.mechanisms.random_streams`, never the noise source.
    """
    if int(d) < 1 or int(k) < 1:
        raise ValueError(f"d and k must be ≥ 1, got d={d}, k={k}")
    rng = check_random_state(rng)
    G = rng.standard_normal((int(d), int(k)))
    return G / np.linalg.norm(G, axis=0, keepdims=True)


# --- projections and the distance -------------------------------------------------------------


def project_rows(
    X: np.ndarray, U: np.ndarray, sigma: float, noise: NoiseSource | None = None, clip_norm: float | None = None
) -> np.ndarray:
    """``clip(X) U + N(0, σ²)`` (no clipping when ``clip_norm`` is None; σ = 0 gives exact projections).

    The noise comes from ``noise`` through :func:`~dpadapt.privacy.mechanisms.noisy_projections`.
    """
    X = np.asarray(X, dtype=np.float64)
    if clip_norm is not None:
        X = clip_rows(X, clip_norm)
    if sigma > 0 and noise is None:
        raise ValueError("noisy projections need a NoiseSource")
    return noisy_projections(X, U, sigma=sigma, noise=noise)


def sliced_wasserstein(Ps: np.ndarray, Pt: np.ndarray, q: int = 2) -> float:
    """((1/k) Σ_j W_q^q(Ps[:, j], Pt[:, j]))^{1/q} between projected samples (POT's 1-D solver)."""
    Ps, Pt = np.asarray(Ps, dtype=np.float64), np.asarray(Pt, dtype=np.float64)
    if Ps.ndim != 2 or Pt.ndim != 2 or Ps.shape[1] != Pt.shape[1]:
        raise ValueError(f"projections must be 2-D with the same number of directions, got {Ps.shape} and {Pt.shape}")
    if q < 1:
        raise ValueError(f"q must be ≥ 1, got {q}")
    import ot  # here: POT (and the torch it loads) only when a distance is computed

    per_direction = ot.wasserstein_1d(Ps, Pt, p=q)  # W_q^q of each column
    return float(np.mean(per_direction) ** (1.0 / q))


def swd(Xs, Xt, *, k: int = 200, q: int = 2, random_state=None) -> float:
    """Non-private sliced Wasserstein distance (same code path with σ = 0 and no clipping)."""
    Xs, Xt = check_features(Xs, "Xs"), check_features(Xt, "Xt")
    check_same_features(Xs, Xt)
    rng = check_random_state(random_state)
    U = directions(Xs.shape[1], k, rng)
    return sliced_wasserstein(project_rows(Xs, U, 0.0), project_rows(Xt, U, 0.0), q)


# --- one-shot release protocol (target party → other party) ---------------------------------------


def plan_projection_release(
    n: int, d: int, *, epsilon: float, delta: float, k: int, clip_norm: float, method: str = "spectral"
) -> DPSWDPlan:
    """Calibration of a single release of all n clipped rows projected on k directions."""
    return plan_releases(epsilon, delta, n=n, batch_size=n, steps=1, k=k, d=d, clip_norm=clip_norm, method=method)


def release_projections(
    X,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    k: int = 200,
    clip_norm: float = 1.0,
    method: str = "spectral",
    U: np.ndarray | None = None,
    random_state=None,
    plan: DPSWDPlan | None = None,
    noise: NoiseSource | None = None,
    reproducible_noise: bool = False,
) -> Release:
    """Target party: release ``clip(X) U + V`` once ((ε, δ)-DP for one row of X, replace-one).

    U is public randomness drawn here from the public stream of ``random_state``; the noise V
    and the order of the released rows come from a separate secret :class:`NoiseSource` (fresh
    entropy unless ``reproducible_noise``), so knowing the seed does not let anyone replay V.
    A U given by the caller is *foreign*: for the Beta-based bounds its spectral sensitivity is
    enforced too (:meth:`DPSWDPlan.sigma`). The release holds the noisy projections, U and the
    public parameters.
    """
    X = check_features(X, "X (private)")
    public, secret = random_streams(random_state, reproducible_noise=reproducible_noise)
    noise = secret if noise is None else noise
    n, d = X.shape
    if plan is None:
        if epsilon is None or delta is None:
            raise ValueError("release_projections needs epsilon and delta (or a plan)")
        plan = plan_projection_release(n, d, epsilon=epsilon, delta=delta, k=k, clip_norm=clip_norm, method=method)
    if (plan.n, plan.d) != (n, d):
        raise ValueError(f"plan was made for a {plan.n}×{plan.d} matrix, got {n}×{d}")
    foreign = U is not None
    if U is None:
        U = directions(d, plan.k, public)
    U = np.asarray(U, dtype=np.float64)
    if U.shape != (d, plan.k):
        raise ValueError(f"U must have shape ({d}, {plan.k}), got {U.shape}")
    sigma = plan.sigma(U, foreign=foreign)
    P = project_rows(X[secret_permutation(n, noise)], U, sigma, noise, plan.clip_norm)
    return Release(
        method="dpswd",
        kind="target_projections",
        owner="target",
        arrays={"projections": P, "directions": U},
        guarantee=recorded(plan.guarantee, noise),
        params={"sigma": sigma, "clip_norm": plan.clip_norm, "k": plan.k, "d": d, "n": n,
                "sensitivity": sigma / plan.noise_multiplier, "method": plan.method, "foreign_directions": foreign},
    )


def distance_from_release(release: Release, Xs, *, q: int = 2, smooth: bool = True, random_state=None) -> float:
    """Other party: DP-SWD between its rows Xs and the released target projections (post-processing).

    The receiver clips its rows to the same R and (``smooth``) adds N(0, σ²) of the released σ
    so both sides are equally smoothed (the Gaussian-smoothed SWD of the paper).
    """
    if release.method != "dpswd" or release.kind != "target_projections":
        raise ReleaseError(f"expected a dpswd target_projections release, got {release.method}/{release.kind}")
    Xs = check_features(Xs, "Xs")
    U = release["directions"]
    if Xs.shape[1] != U.shape[0]:
        raise ValueError(f"Xs has {Xs.shape[1]} features, the release was made for {U.shape[0]}")
    sigma = float(release.params["sigma"]) if smooth else 0.0
    # the receiver's smoothing noise protects nothing; it only makes both sides equally smoothed
    _, smoothing = random_streams(random_state, reproducible_noise=isinstance(random_state, (int, np.integer)))
    Ps = project_rows(Xs, U, sigma, smoothing, float(release.params["clip_norm"]))
    return sliced_wasserstein(Ps, release["projections"], q)


def dp_swd(
    Xs,
    Xt,
    *,
    epsilon: float,
    delta: float,
    k: int = 200,
    q: int = 2,
    clip_norm: float = 1.0,
    method: str = "spectral",
    random_state=None,
) -> tuple[float, Guarantee]:
    """DP-SWD between public Xs and private Xt in one process: (value, target Guarantee)."""
    Xs, Xt = check_features(Xs, "Xs"), check_features(Xt, "Xt")
    check_same_features(Xs, Xt)
    rel = release_projections(Xt, epsilon=epsilon, delta=delta, k=k, clip_norm=clip_norm, method=method,
                              random_state=random_state)
    return distance_from_release(rel, Xs, q=q, random_state=random_state), rel.guarantee
