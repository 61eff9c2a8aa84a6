"""Discrepancy of a reweighted public source to a private target, as a spectral norm.

Notation follows Bassily, Mohri & Suresh, "Principled Approaches for Private Adaptation from a
Public Source" (AISTATS 2023; arXiv 2208.06135) and ``spec/03-private-discrepancy.md``:

* public source features ``Xs`` (m × d), weights q ∈ Δ_m, ``M_i = x_i x_iᵀ``;
* private target second moment ``M₀ = (1/n) Σ_j x̃_j x̃_jᵀ`` of target rows clipped to a public
  norm r (the only place private data enter);
* ``M(q) = M₀ − Σ_i q_i M_i`` and, for linear hypotheses of norm ≤ Λ, the discrepancy
  ``dis(P̂, q) = 4Λ²‖M(q)‖₂`` (Lemma 1, after Mansour, Mohri & Rostamizadeh 2009);
* the two-sided softmax smoothing ``F̃(q) = (1/μ) log[Tr exp(μM(q)) + Tr exp(−μM(q))]``, a
  uniform ``log(2·min(m+n, d))/μ`` over-approximation of ‖M(q)‖₂ (Corollary 1), and the
  alternative p-norm smoothing ``G(q) = (Tr M(q)^{2p})^{1/p}`` ≈ ‖M(q)‖₂² (App. C.3).

Nothing in this module adds noise: it computes exact values from ``M₀``. Privacy comes from
:mod:`dpadapt.discrepancy.private`, which bounds how much one target row can move ∇F̃
(:func:`gradient_sensitivity`).
"""

from __future__ import annotations

import math

import numpy as np

from dpadapt.privacy.mechanisms import clip_rows
from dpadapt.validation import check_features, check_positive


def second_moment(X_target, clip_r: float) -> np.ndarray:
    """``M₀ = (1/n) Σ_j x̃_j x̃_jᵀ`` of the target rows after clipping each to ℓ2 norm ≤ ``clip_r``.

    ``clip_r`` must be public (fixed before seeing the target). Replacing one target row changes
    M₀ by at most ``clip_r² / n`` in spectral norm (difference of two PSD rank-one matrices of
    norm ≤ r², divided by n) — the tight bound behind :func:`gradient_sensitivity`.
    """
    check_positive(clip_r, "clip_r")
    X = clip_rows(check_features(X_target, "X_target"), clip_r)
    return X.T @ X / X.shape[0]


def source_radius(X_source) -> float:
    """r̂ = max_i ‖x_i‖₂ over the public source rows (public: the source is not protected)."""
    X = check_features(X_source, "X_source")
    return float(np.sqrt((X**2).sum(axis=1).max()))


def check_simplex(q, m: int, atol: float = 1e-8) -> np.ndarray:
    """q as a float vector of length m in the probability simplex (clear error otherwise)."""
    q = np.asarray(q, dtype=np.float64)
    if q.shape != (m,):
        raise ValueError(f"q must have shape ({m},), got {q.shape}")
    if not np.all(np.isfinite(q)) or q.min() < -atol or abs(q.sum() - 1.0) > 1e-6:
        raise ValueError("q must be a probability vector (non-negative, summing to 1)")
    return q


def discrepancy_matrix(q, M0: np.ndarray, X_source: np.ndarray) -> np.ndarray:
    """``M(q) = M₀ − Σ_i q_i x_i x_iᵀ`` (symmetric d × d)."""
    q = np.asarray(q, dtype=np.float64)
    M = M0 - (X_source * q[:, None]).T @ X_source
    return 0.5 * (M + M.T)


def spectral_norm(q, M0: np.ndarray, X_source: np.ndarray) -> float:
    """Exact ‖M(q)‖₂ = max(λ_max(M(q)), λ_max(−M(q))); the discrepancy is 4Λ² times this."""
    return float(np.abs(np.linalg.eigvalsh(discrepancy_matrix(q, M0, X_source))).max())


def softmax_value_grad(q, M0: np.ndarray, X_source: np.ndarray, mu: float) -> tuple[float, np.ndarray]:
    """Two-sided softmax smoothing F̃(q) and its gradient (stable eigen formula, spec §3).

    With ``M(q) = V diag(λ) Vᵀ``, s = μ·max|λ|, a = exp(μλ − s), b = exp(−μλ − s)::

        F̃ = s/μ + log Σ(a + b) / μ,    [∇F̃]_j = −Σ_l (a_l − b_l)(v_lᵀ x_j)² / Σ_l (a_l + b_l).

    ‖M(q)‖₂ ≤ F̃(q) ≤ ‖M(q)‖₂ + log(2d)/μ; ‖∇F̃‖_∞ ≤ r̂².
    """
    check_positive(mu, "mu")
    lam, V = np.linalg.eigh(discrepancy_matrix(q, M0, X_source))
    s = mu * float(np.abs(lam).max())
    a = np.exp(mu * lam - s)
    b = np.exp(-mu * lam - s)
    Z = float((a + b).sum())
    weights = (a - b) / Z
    # directions whose weight underflows relative to the largest contribute nothing at float64 precision
    keep = np.abs(weights) > 1e-17 * np.abs(weights).max() if weights.any() else np.zeros(lam.size, bool)
    grad = -(((X_source @ V[:, keep]) ** 2) @ weights[keep])
    return s / mu + math.log(Z) / mu, grad


def softmax_value(q, M0: np.ndarray, X_source: np.ndarray, mu: float) -> float:
    """F̃(q) alone (see :func:`softmax_value_grad`)."""
    lam = np.linalg.eigvalsh(discrepancy_matrix(q, M0, X_source))
    s = mu * float(np.abs(lam).max())
    return s / mu + math.log(float((np.exp(mu * lam - s) + np.exp(-mu * lam - s)).sum())) / mu


def pnorm_value_grad(q, M0: np.ndarray, X_source: np.ndarray, p: int) -> tuple[float, np.ndarray]:
    """p-norm smoothing G(q) = (Tr M(q)^{2p})^{1/p} and ∇G (App. C.3), p a positive integer.

    ‖M‖₂² ≤ G ≤ rank^{1/p}·‖M‖₂²; ``[∇G]_i = −2 (Tr M^{2p})^{1/p − 1} x_iᵀ M^{2p−1} x_i``.
    Computed on the eigenvalues rescaled by max|λ| so large p does not overflow.
    """
    if int(p) != p or p < 1:
        raise ValueError(f"p must be a positive integer, got {p}")
    p = int(p)
    lam, V = np.linalg.eigh(discrepancy_matrix(q, M0, X_source))
    scale = float(np.abs(lam).max())
    if scale == 0.0:
        return 0.0, np.zeros(X_source.shape[0])
    t = lam / scale
    trace = float((t ** (2 * p)).sum())  # Tr (M/scale)^{2p} ≥ 1
    value = scale**2 * trace ** (1.0 / p)
    weights = t ** (2 * p - 1)  # eigenvalues of (M/scale)^{2p-1}
    grad = -2.0 * scale * trace ** (1.0 / p - 1.0) * (((X_source @ V) ** 2) @ weights)
    return value, grad


def smoothing_gap(mu: float, d: int, m: int, n: int) -> float:
    """Uniform bound log(2·min(m + n, d))/μ on F̃(q) − ‖M(q)‖₂ (Corollary 1)."""
    return math.log(2 * min(m + n, d)) / mu


def gradient_sensitivity(mu: float, r: float, r_hat: float, n: int, tight: bool = True) -> float:
    """ℓ∞ sensitivity of ∇F̃_T(q) under replacing one target row (rows clipped to ‖x̃‖ ≤ r).

    Tight value (spec Soundness 1): τ* = μ r² r̂² / n — F̃ is μ-smooth in the spectral norm, so
    ∇f is μ-Lipschitz from the spectral to the trace norm; ‖M − M′‖₂ ≤ r²/n and each
    coordinate pairs ∇f with ±x_j x_jᵀ, whose spectral norm is ≤ r̂². The paper's bound
    (Corollary 1(3)) is twice that: ``tight=False``.
    """
    return (1.0 if tight else 2.0) * mu * r**2 * r_hat**2 / n


def smoothness(mu: float, r_hat: float) -> float:
    """ℓ1→ℓ∞ smoothness constant μ r̂⁴ of F̃ (Corollary 1(2))."""
    return mu * r_hat**4


def default_mu(K: int, m: int, n: int, r_hat: float) -> float:
    """μ = sqrt(K log(m + n) / (8 r̂⁴)) — the rule of Corollary 3 (public: uses only K, m, n, r̂)."""
    return math.sqrt(K * math.log(m + n) / (8.0 * r_hat**4))
