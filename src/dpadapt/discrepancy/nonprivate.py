"""Non-private first stage: minimise the smoothed, ℓ2-regularised discrepancy over the simplex.

``F̃^λ(q) = F̃(q) + (λ/2)‖q‖₂²`` (or the p-norm smoothing G) is convex and smooth; it is minimised
with accelerated projected gradient (FISTA with backtracking and restarts) on Δ_m. This is the
reference optimum used to check the private algorithms at ε = ∞; it offers **no privacy**.
"""

from __future__ import annotations

import numpy as np

from dpadapt.discrepancy.core import pnorm_value_grad, softmax_value_grad


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (sort-based, Held, Wolfe & Crowder 1974)."""
    v = np.asarray(v, dtype=np.float64)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / idx > 0)[0][-1]
    theta = css[rho] / (rho + 1.0)
    return np.maximum(v - theta, 0.0)


def objective(M0, X_source, mu: float, lam: float, smoothing: str = "softmax", p: int = 4):
    """``q ↦ (F̃^λ(q), ∇F̃^λ(q))`` for ``smoothing`` ∈ {"softmax", "pnorm"}."""
    if smoothing == "softmax":
        def fg(q):
            f, g = softmax_value_grad(q, M0, X_source, mu)
            return f + 0.5 * lam * float(q @ q), g + lam * q
    elif smoothing == "pnorm":
        def fg(q):
            f, g = pnorm_value_grad(q, M0, X_source, p)
            return f + 0.5 * lam * float(q @ q), g + lam * q
    else:
        raise ValueError(f"smoothing must be 'softmax' or 'pnorm', got {smoothing!r}")
    return fg


def minimize_discrepancy(
    M0: np.ndarray,
    X_source: np.ndarray,
    mu: float,
    lam: float,
    *,
    smoothing: str = "softmax",
    p: int = 4,
    max_iter: int = 3000,
    tol: float = 1e-10,
    q0: np.ndarray | None = None,
) -> np.ndarray:
    """Non-private ``argmin_{q ∈ Δ_m} F̃(q) + (λ/2)‖q‖²`` by FISTA with backtracking (no privacy).

    Stops when the objective decreases by less than ``tol`` (relative) over 20 iterations.
    """
    fg = objective(M0, X_source, mu, lam, smoothing, p)
    m = X_source.shape[0]
    q = np.full(m, 1.0 / m) if q0 is None else project_simplex(q0)
    y, t, L = q.copy(), 1.0, 1.0
    f_q, _ = fg(q)
    history = [f_q]
    for _ in range(max_iter):
        f_y, g_y = fg(y)
        while True:
            q_new = project_simplex(y - g_y / L)
            diff = q_new - y
            f_new, _ = fg(q_new)
            if f_new <= f_y + g_y @ diff + 0.5 * L * (diff @ diff) + 1e-15:
                break
            L *= 2.0
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        if f_new > f_q:  # adaptive restart (O'Donoghue & Candès 2015)
            y, t = q.copy(), 1.0
            L *= 0.9
            continue
        y = q_new + ((t - 1.0) / t_new) * (q_new - q)
        q, f_q, t = q_new, f_new, t_new
        L *= 0.9
        history.append(f_q)
        if len(history) > 20 and history[-21] - f_q <= tol * max(1.0, abs(f_q)):
            break
    return q
