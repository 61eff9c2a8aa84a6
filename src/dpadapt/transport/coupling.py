"""Target-side optimal transport on noisy source rows: debiased cost, POT solvers, barycentric map.

Everything here is post-processing of a DPOT release (plus the target's own data), so it costs
the source no privacy.

* :func:`debiased_cost` — C̃_ij = ‖Z_i − X̃_t,j‖² − ℓσ². Since Z_i = x_iM + Δ_i with
  Δ_i ~ N(0, σ²I_ℓ), E‖Z_i − y‖² = ‖x_iM − y‖² + ℓσ², so C̃ is unbiased for the squared
  Euclidean cost of the projected rows (and only for the squared cost). Negative entries are kept.
* :func:`solve_ot` — balanced OT with uniform marginals via POT: exact (``ot.emd``), entropic
  (log-domain ``ot.sinkhorn``) or entropic + class group-lasso (``ot.da.sinkhorn_l1l2_gl``,
  Courty et al. 2017). Adding u_i + v_j to the cost changes none of these couplings (the extra
  term is constant on Π(a, b)), so by default the solvers see the *double-centred* cost divided by
  its largest absolute entry; this removes the noisy row constants ‖Z_i‖² before the regularisation
  scale is set. ``cost_norm="max"`` is POT's ``norm="max"`` instead (C / max C, the OT-DA classes'
  convention; DPOT paper mode's reading, ``benchmarks/dpot/dpot_paper_reading.md``): the same coupling
  without regularisation, a stronger effective λ_e, λ_g with it. W̃ = ⟨γ̃, C̃⟩ is always evaluated
  on the unnormalised debiased cost.
* :func:`barycentric_map` — X̂_s,i = Σ_j γ_ij X_t,j / Σ_j γ_ij (n_s γ X_t for exact marginals).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Literal

import numpy as np

from dpadapt.configs.dpot import COST_NORMS

OTMethod = Literal["exact", "sinkhorn", "sinkhorn_gl"]
OT_METHODS: tuple[str, ...] = ("exact", "sinkhorn", "sinkhorn_gl")
CostNorm = Literal["centred_max", "max", "median", "log", "loglog"]
#: Cost (in units of the normalised cost, whose entries lie in [−1, 1]) that forbids a pair.
FORBIDDEN_COST = 1e3


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """‖A_i − B_j‖² for all pairs (POT's squared Euclidean cost)."""
    import ot  # here: POT (and the torch it loads) is only needed when a coupling is computed

    return ot.dist(
        np.asarray(A, dtype=np.float64),
        np.asarray(B, dtype=np.float64),
        metric="sqeuclidean",
    )


def debiased_cost(Z: np.ndarray, Yt: np.ndarray, sigma: float) -> np.ndarray:
    """C̃ = ‖Z_i − Yt_j‖² − ℓσ² (ℓ = number of columns): unbiased for ‖x_iM − Yt_j‖²."""
    return squared_distances(Z, Yt) - Z.shape[1] * float(sigma) ** 2


def normalised_cost(C: np.ndarray, rule: CostNorm = "centred_max") -> np.ndarray:
    """The cost the solvers see: ``"centred_max"`` double-centres C (removes row and column means)
    and divides by its largest absolute entry; ``"max"`` / ``"median"`` divide C by its maximum /
    median (POT's ``cost_normalization``; a non-positive scale falls back to the largest absolute
    entry); ``"log"`` / ``"loglog"`` are POT's log(1 + C) / log(1 + log(1 + C)) on C clipped at 0
    (a debiased cost can dip below 0).

    The scalings leave every unregularised balanced OT coupling unchanged and set the effective
    regularisation scale (see the module docstring); the log variants change the cost function
    itself. A statistic of C only, hence post-processing.
    """
    if rule not in COST_NORMS:
        raise ValueError(f"cost_norm must be one of {COST_NORMS}, got {rule!r}")
    if rule in ("log", "loglog"):
        L = np.log1p(np.maximum(C, 0.0))
        return np.log1p(L) if rule == "loglog" else L
    if rule == "median":
        mid = float(np.median(C))
        scale = mid if mid > 0 else float(np.abs(C).max())
        return C / scale if scale > 0 else C
    if rule == "max":
        top = float(C.max())
        scale = top if top > 0 else float(np.abs(C).max())
        return C / scale if scale > 0 else C
    Cc = C - C.mean(axis=1, keepdims=True) - C.mean(axis=0, keepdims=True) + C.mean()
    scale = float(np.abs(Cc).max())
    return Cc / scale if scale > 0 else Cc


@dataclasses.dataclass
class OTResult:
    """A coupling γ̃ and the estimate W̃ = ⟨γ̃, C̃⟩."""

    coupling: np.ndarray
    cost_value: float


def solve_ot(
    C: np.ndarray,
    method: OTMethod = "sinkhorn_gl",
    *,
    reg_e: float = 0.01,
    reg_g: float = 0.1,
    source_labels: np.ndarray | None = None,
    forbidden: np.ndarray | None = None,
    max_iter: int = 1000,
    cost_norm: CostNorm = "centred_max",
) -> OTResult:
    """Balanced OT with uniform marginals on cost ``C`` (debiased, any sign).

    Parameters
    ----------
    method : {"exact", "sinkhorn", "sinkhorn_gl"}
    reg_e, reg_g : float
        Entropic weight λ_e and group-lasso weight λ_g (on the normalised cost).
    source_labels : array of int
        Labels of the source rows (needed by ``"sinkhorn_gl"``).
    forbidden : bool array, optional
        Pairs that may carry no mass (semi-supervised: known target label ≠ source label).
    cost_norm : {"centred_max", "max"}
        Scaling of the cost before the solver (:func:`normalised_cost`).
    """
    if method not in OT_METHODS:
        raise ValueError(f"ot_method must be one of {OT_METHODS}, got {method!r}")
    n_s, n_t = C.shape
    a, b = np.full(n_s, 1.0 / n_s), np.full(n_t, 1.0 / n_t)
    Cn = normalised_cost(C, cost_norm)
    if forbidden is not None:
        Cn = np.where(forbidden, FORBIDDEN_COST, Cn)
    import ot

    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # POT warns on non-convergence within max_iter; γ is still usable
        if method == "exact":
            G = ot.emd(a, b, Cn, numItermax=max(100000, 50 * n_s * n_t))
        elif method == "sinkhorn":
            G = ot.sinkhorn(a, b, Cn, reg_e, method="sinkhorn_log", numItermax=max_iter)
        else:
            if source_labels is None:
                raise ValueError("ot_method='sinkhorn_gl' needs the source labels")
            G = ot.da.sinkhorn_l1l2_gl(
                a, np.asarray(source_labels), b, Cn, reg_e, eta=reg_g
            )
    G = np.asarray(G, dtype=np.float64)
    if not np.all(np.isfinite(G)) or G.sum() <= 0:
        raise FloatingPointError(
            f"the {method} solver returned an invalid coupling; try ot_method='exact' or a larger reg_e"
        )
    return OTResult(G, float(np.sum(G * C)))


def barycentric_map(G: np.ndarray, Xt: np.ndarray) -> np.ndarray:
    """Images of the source rows in the target feature space: Σ_j γ_ij X_t,j / Σ_j γ_ij."""
    mass = G.sum(axis=1, keepdims=True)
    return (G @ np.asarray(Xt, dtype=np.float64)) / np.maximum(
        mass, np.finfo(float).tiny
    )


def forbidden_pairs(
    source_labels: np.ndarray, target_labels: np.ndarray | None
) -> np.ndarray | None:
    """Semi-supervised mask: target j with known label (≥ 0) may not receive mass from other labels."""
    if target_labels is None:
        return None
    yt = np.asarray(target_labels)
    known = yt >= 0
    if not known.any():
        return None
    return known[None, :] & (np.asarray(source_labels)[:, None] != yt[None, :])
