"""Second stage (public source only, post-processing): q-weighted least squares with ‖w‖₂ ≤ Λ."""

from __future__ import annotations

import numpy as np
from scipy import optimize

from dpadapt.validation import check_features


def weighted_regression(q, X_source, y_source, Lambda: float | None = None, ridge: float = 0.0) -> np.ndarray:
    """``argmin_{‖w‖₂ ≤ Λ} Σ_i q_i (⟨w, x_i⟩ − y_i)² + ridge·‖w‖²`` (exact, via one eigendecomposition).

    With ``Lambda=None`` the norm constraint is dropped (ridge only; ``ridge`` must then be > 0 or
    the minimum-norm least-squares solution is returned). When the unconstrained solution is
    longer than Λ, the Lagrange multiplier ν with ‖(A + νI)⁻¹b‖ = Λ is found by a 1-D root solve.
    Uses only public data and the released q, so it is post-processing.
    """
    X = check_features(X_source, "X_source")
    y = np.asarray(y_source, dtype=np.float64).ravel()
    q = np.asarray(q, dtype=np.float64).ravel()
    if y.shape[0] != X.shape[0] or q.shape[0] != X.shape[0]:
        raise ValueError(f"X_source has {X.shape[0]} rows but y has {y.shape[0]} and q has {q.shape[0]}")
    if ridge < 0:
        raise ValueError(f"ridge must be ≥ 0, got {ridge}")
    A = (X * q[:, None]).T @ X + ridge * np.eye(X.shape[1])
    b = X.T @ (q * y)
    alpha, U = np.linalg.eigh(0.5 * (A + A.T))
    c = U.T @ b
    tol = max(alpha.max(), 1e-300) * 1e-12
    keep = alpha > tol
    w0 = U[:, keep] @ (c[keep] / alpha[keep])
    if Lambda is None or np.linalg.norm(w0) <= Lambda:
        return w0
    if Lambda <= 0:
        raise ValueError(f"Lambda must be > 0, got {Lambda}")

    def excess(nu: float) -> float:
        return float(np.linalg.norm(c / (np.maximum(alpha, 0.0) + nu))) - Lambda

    hi = float(np.linalg.norm(b)) / Lambda + 1e-12  # ‖w(ν)‖ ≤ ‖b‖/ν
    nu = optimize.brentq(excess, 1e-15, hi, xtol=1e-14, rtol=1e-12)
    return U @ (c / (np.maximum(alpha, 0.0) + nu))
