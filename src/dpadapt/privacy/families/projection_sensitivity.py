"""The sensitivity bounds of DP-SWD's projection release ``clip(X) U``: H = sup_{‖z‖≤1} Σ_j (zᵀu_j)².

Privacy calibration (spec 02; the methods are described in :mod:`dpadapt.transport.swd`):
``spectral`` (H = ‖U‖op² for the drawn U), the Beta law of (zᵀu)² for unit z (paper Lemma 1) with
its Chernoff bound, the paper's Bernstein bound (Lemma 2), and, in paper mode only, the reference
code's Bernstein variant and the CLT heuristic (not a bound). Used by the plan
(:mod:`dpadapt.privacy.families.dpswd`) and re-exported by :mod:`dpadapt.transport.swd`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np
from scipy import linalg, optimize, special, stats

SensitivityMethod = Literal["spectral", "chernoff_beta", "bernstein", "bernstein_code", "clt"]
SENSITIVITY_METHODS: tuple[str, ...] = ("spectral", "chernoff_beta", "bernstein", "bernstein_code", "clt")
SOUND_METHODS: tuple[str, ...] = ("spectral", "chernoff_beta", "bernstein")
BETA_METHODS: tuple[str, ...] = ("chernoff_beta", "bernstein", "bernstein_code", "clt")

def beta_moments(d: int) -> tuple[float, float]:
    """Mean 1/d and variance 2(d−1)/(d²(d+2)) of (zᵀu)² ~ Beta(1/2, (d−1)/2) for unit z (Lemma 1)."""
    if d < 2:
        raise ValueError(f"d must be ≥ 2, got {d}")
    return 1.0 / d, 2.0 * (d - 1) / (d * d * (d + 2))


def operator_norm(U: np.ndarray) -> float:
    """‖U‖op = sup_{‖z‖=1} ‖zᵀU‖ (largest singular value), rounded up.

    Computed as sqrt(λ_max) of the smaller Gram matrix (LAPACK ``syevr``, a direct solver, not an
    iterative estimate from below), inflated by 1e-9 relative to cover floating-point error.
    """
    U = np.asarray(U, dtype=np.float64)
    A = U @ U.T if U.shape[0] <= U.shape[1] else U.T @ U
    top = linalg.eigh(A, eigvals_only=True, subset_by_index=[A.shape[0] - 1, A.shape[0] - 1])[0]
    return float(math.sqrt(max(top, 0.0)) * (1 + 1e-9))


@dataclasses.dataclass(frozen=True)
class ProjectionSensitivity:
    """A bound w on H = Σ_j (zᵀu_j)² over unit z (squared sensitivity of zᵀU for diameter 1).

    ``failure`` is the probability over U (per release) that the bound does not hold: 0 for
    ``spectral``; ``None`` for ``clt``, which is not a bound at all.
    """

    method: str
    squared: float
    failure: float | None
    is_bound: bool


def _log_beta_mgf(lam: float, d: int) -> float:
    return float(np.log(special.hyp1f1(0.5, d / 2.0, lam)))


def chernoff_beta_bound(k: int, d: int, failure: float) -> float:
    """Smallest t with min_λ e^{−λt} M(λ)^k ≤ failure, M the Beta(1/2, (d−1)/2) MGF ₁F₁(1/2; d/2; λ)."""
    log_target = math.log(failure)

    def log_tail(t: float) -> float:
        res = optimize.minimize_scalar(
            lambda lam: -lam * t + k * _log_beta_mgf(lam, d), bounds=(1e-9, 600.0), method="bounded",
            options={"xatol": 1e-6},
        )
        return float(min(res.fun, 0.0))

    lo, hi = k / d, float(k)  # H ≤ k always (each term ≤ 1)
    if log_tail(hi) > log_target:
        return float(k)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if log_tail(mid) <= log_target:
            hi = mid
        else:
            lo = mid
    return hi


def bernstein_bound(k: int, d: int, failure: float) -> float:
    """Paper Lemma 2: k/d + (2/3) ln(1/δ') + (2/d) sqrt(k (d−1)/(d+2) ln(1/δ'))."""
    L = math.log(1.0 / failure)
    return k / d + (2.0 / 3.0) * L + (2.0 / d) * math.sqrt(k * (d - 1) / (d + 2) * L)


def bernstein_code_bound(k: int, d: int, failure: float) -> float:
    """Reference code's Bernstein: k/d + (2/3) ln(1/δ') + sqrt(2 k (k v_d) ln(1/δ')) (spec 02 §4)."""
    L = math.log(1.0 / failure)
    _, v = beta_moments(d)
    return k / d + (2.0 / 3.0) * L + math.sqrt(2.0 * k * (k * v) * L)


def clt_value(k: int, d: int, failure: float) -> float:
    """Paper's CLT heuristic k/d + (z_{1−δ'}/d) sqrt(2k(d−1)/(d+2)) — not a bound."""
    zq = float(stats.norm.ppf(1.0 - failure))
    return k / d + (zq / d) * math.sqrt(2.0 * k * (d - 1) / (d + 2))


def projection_sensitivity(
    method: str,
    *,
    U: np.ndarray | None = None,
    k: int | None = None,
    d: int | None = None,
    failure: float | None = None,
) -> ProjectionSensitivity:
    """Bound on H = sup_{‖z‖≤1} Σ_j (zᵀu_j)² by ``method`` (see the module docstring).

    ``spectral`` needs the drawn ``U``; the Beta-based methods need ``k``, ``d`` and the
    per-release ``failure`` probability δ'.
    """
    if method not in SENSITIVITY_METHODS:
        raise ValueError(f"method must be one of {SENSITIVITY_METHODS}, got {method!r}")
    if method == "spectral":
        if U is None:
            raise ValueError("the spectral sensitivity is conditioned on the drawn directions: pass U")
        return ProjectionSensitivity(method, operator_norm(U) ** 2, 0.0, True)
    if k is None or d is None or failure is None:
        raise ValueError(f"method {method!r} needs k, d and the per-release failure probability")
    if int(k) < 1 or int(d) < 2:
        raise ValueError(f"need k ≥ 1 and d ≥ 2, got k={k}, d={d}")
    if not 0 < failure < 1:
        raise ValueError(f"failure must be in (0, 1), got {failure}")
    k, d = int(k), int(d)
    fn = {"chernoff_beta": chernoff_beta_bound, "bernstein": bernstein_bound,
          "bernstein_code": bernstein_code_bound, "clt": clt_value}[method]
    w = min(fn(k, d, failure), float(k))
    return ProjectionSensitivity(method, w, None if method == "clt" else failure, method != "clt")
