"""Guarded refinement on the receiver's own rows (post-processing; no privacy cost).

The receiver starts from the DP classifier (linear scores ``Z @ W.T + b`` in the working space) and
refines it by classification EM of a shared-covariance Gaussian model on its own rows
(:func:`refine_lda`: re-estimate class means, proportions and the pooled covariance from the current
hard labels, relabel, at most ``rounds`` times). The refinement is *kept* only if an unsupervised
criterion on the receiver's rows says it did not drift away from the DP classifier
(:func:`guarded`): the share of rows on which the refined and the DP classifier agree must be at
least ``min_agreement``. A refinement that follows clusters which do not line up with the classes
(topics rather than sentiment) relabels a large share of rows and is rejected; the threshold is
fixed by the selection rule on the development pairs (``benchmarks/selection/sound/README.md``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp


def _lda_fit(Z: np.ndarray, labels: np.ndarray, K: int, shrink: float, prev: tuple[np.ndarray, np.ndarray]):
    n, k = Z.shape
    counts = np.bincount(labels, minlength=K).astype(np.float64)
    sums = np.zeros((K, k))
    np.add.at(sums, labels, Z)
    present = counts > 0
    means = np.zeros((K, k))
    means[present] = sums[present] / counts[present, None]
    centred = Z - means[labels]
    cov = centred.T @ centred / n
    cov += shrink * (np.trace(cov) / k + 1e-12) * np.eye(k)
    W = np.linalg.solve(cov, means.T).T
    b = -0.5 * np.sum(W * means, axis=1) + np.log(np.maximum(counts, 1.0) / n)
    W[~present], b[~present] = prev[0][~present], prev[1][~present]  # an emptied class keeps its DP scorer
    return W, b


def refine_lda(Z: np.ndarray, W: np.ndarray, b: np.ndarray, *, rounds: int = 10, shrink: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """Classification EM of a shared-covariance Gaussian model on ``Z`` from the DP scorer ``(W, b)``."""
    Z = Z.toarray() if sp.issparse(Z) else np.asarray(Z)  # the class means and covariance are dense anyway
    K = W.shape[0]
    labels = np.argmax(Z @ W.T + b, axis=1)
    cur = (W, b)
    for _ in range(rounds):
        cur = _lda_fit(Z, labels, K, shrink, (W, b))
        new = np.argmax(Z @ cur[0].T + cur[1], axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    return cur


@dataclasses.dataclass(frozen=True)
class GuardResult:
    """The scorer the receiver keeps, whether the refinement was kept, and the criterion's value."""

    W: np.ndarray
    b: np.ndarray
    kept: bool
    agreement: float


def guarded(Z: np.ndarray, W: np.ndarray, b: np.ndarray, *, min_agreement: float, rounds: int = 10) -> GuardResult:
    """Refine ``(W, b)`` on ``Z`` and keep the refinement only if it agrees with the DP classifier on
    at least ``min_agreement`` of the rows; otherwise keep the DP classifier."""
    Wr, br = refine_lda(Z, W, b, rounds=rounds)
    agreement = float(np.mean(np.argmax(Z @ Wr.T + br, axis=1) == np.argmax(Z @ W.T + b, axis=1)))
    if agreement >= min_agreement:
        return GuardResult(Wr, br, True, agreement)
    return GuardResult(W, b, False, agreement)
