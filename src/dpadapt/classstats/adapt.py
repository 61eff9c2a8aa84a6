"""Target-side routines of the class-statistics design (post-processing of a release; no privacy cost).

Plain functions, shared by the ``classstats`` and ``dpot`` families (and PRIMA's sound mode):

* :func:`row_map` — the public per-row map (optional ``log1p`` for count features, then ℓ2
  normalisation); :func:`fit_basis` / :func:`project` — a basis (mean + top-k principal directions)
  and the projection of mapped rows onto it, re-normalised to the unit sphere;
* :func:`prototypes_from_release` — class directions and class proportions from noisy per-class
  sums and counts;
* refinements on the receiver's own rows, all starting from the DP prototypes:
  :func:`refine_kmeans` (spherical k-means initialised at the prototypes),
  :func:`refine_self_training` (logistic regression on pseudo-labels, a few rounds),
  :func:`refine_ot` (entropic OT between the rows and the DP class-conditional model);
* :class:`ClassStatsModel` — the resulting classifier on raw rows (map → basis → predictor).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.linear_model import LogisticRegression

REFINEMENTS = ("kmeans", "self_training", "ot", "none")


def row_map(X, log1p: bool) -> np.ndarray:
    """The public per-row map: ``log1p`` of non-negative counts (if asked), then ℓ2-normalise each row.

    A per-record operation: each mapped row has norm 1 (0 for an all-zero row), whatever the data.
    """
    if sp.issparse(X):
        X = X.toarray()
    X = np.asarray(X, dtype=np.float64)
    if log1p:
        if np.any(X < 0):
            raise ValueError("log1p is a map for non-negative count features; got negative values")
        X = np.log1p(X)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def fit_basis(M: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and top-``k`` principal directions (d × k, orthonormal columns) of mapped rows ``M``."""
    mean = M.mean(axis=0)
    k = int(min(k, M.shape[0] - 1, M.shape[1]))
    if k < 1:
        raise ValueError("a basis needs at least two rows")
    _, _, vt = np.linalg.svd(M - mean, full_matrices=False)
    return mean, vt[:k].T.copy()


def project(M: np.ndarray, mean: np.ndarray | None, components: np.ndarray | None) -> np.ndarray:
    """Mapped rows in the basis, re-normalised to the unit sphere (identity basis when ``components`` is None)."""
    Z = M if components is None else (M - mean) @ components
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    return np.divide(Z, norms, out=np.zeros_like(Z), where=norms > 0)


def _normalise(P: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(P, axis=1, keepdims=True)
    return np.divide(P, norms, out=np.zeros_like(P), where=norms > 0)


def prototypes_from_release(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit class directions (K × k) and class proportions (K,) from noisy sums and counts.

    Counts are clipped at 1 (a class is assumed present, its proportion never 0); the direction of a
    class mean is the direction of its noisy sum (the count only rescales it).
    """
    counts = np.clip(np.asarray(counts, dtype=np.float64), 1.0, None)
    return _normalise(np.asarray(sums, dtype=np.float64)), counts / counts.sum()


def assign(Z: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Index of the most similar center (cosine) for every row."""
    return np.argmax(Z @ centers.T, axis=1)


def refine_kmeans(Z: np.ndarray, centers: np.ndarray, n_iter: int = 50) -> np.ndarray:
    """Spherical k-means on ``Z`` initialised at ``centers``; an emptied cluster keeps its center."""
    centers = centers.copy()
    labels = assign(Z, centers)
    for _ in range(n_iter):
        sums = np.zeros_like(centers)
        np.add.at(sums, labels, Z)
        filled = np.linalg.norm(sums, axis=1) > 0
        centers[filled] = _normalise(sums[filled])
        new = assign(Z, centers)
        if np.array_equal(new, labels):
            break
        labels = new
    return centers


def refine_ot(Z: np.ndarray, centers: np.ndarray, proportions: np.ndarray, reg: float = 0.05, n_iter: int = 500) -> np.ndarray:
    """Soft labels (n × K) from entropic OT between the rows (uniform mass) and the classes (DP proportions).

    The cost of row i to class c is 1 − cos(z_i, P_c); log-domain Sinkhorn with regularisation ``reg``.
    """
    C = 1.0 - Z @ centers.T
    logK = -C / reg
    n = Z.shape[0]
    log_a = np.full(n, -np.log(n))
    log_b = np.log(proportions)
    f, g = np.zeros(n), np.zeros(centers.shape[0])
    for _ in range(n_iter):
        f = log_a - logsumexp(logK + g[None, :], axis=1)
        g = log_b - logsumexp(logK + f[:, None], axis=0)
    plan = np.exp(logK + f[:, None] + g[None, :])
    return plan / plan.sum(axis=1, keepdims=True)


def refine_self_training(
    Z: np.ndarray, labels: np.ndarray, n_classes: int, rounds: int = 5, C: float = 1.0, random_state=None
) -> LogisticRegression:
    """Logistic regression trained on pseudo-labels of the rows, re-labelled for a few rounds."""
    clf = None
    for _ in range(rounds):
        if np.unique(labels).size < 2:
            break
        clf = LogisticRegression(C=C, max_iter=2000, random_state=random_state).fit(Z, labels)
        new = clf.predict(Z)
        if np.array_equal(new, labels):
            break
        labels = new
    return clf


@dataclasses.dataclass
class ClassStatsModel:
    """A classifier on raw rows: public row map → basis → (nearest prototype | logistic regression).

    ``classes`` is the public label set; ``centers`` are unit class directions in the basis;
    ``head`` (optional) a logistic regression on the projected rows whose ``classes_`` are indices.
    """

    classes: np.ndarray
    log1p: bool
    mean: np.ndarray | None
    components: np.ndarray | None
    centers: np.ndarray
    head: LogisticRegression | None = None

    @property
    def classes_(self) -> np.ndarray:
        return self.classes

    def transform(self, X) -> np.ndarray:
        return project(row_map(X, self.log1p), self.mean, self.components)

    def predict_proba(self, X) -> np.ndarray:
        Z = self.transform(X)
        K = len(self.classes)
        if self.head is None:
            scores = 10.0 * (Z @ self.centers.T)
            return np.exp(scores - logsumexp(scores, axis=1, keepdims=True))
        out = np.zeros((Z.shape[0], K))
        out[:, self.head.classes_] = self.head.predict_proba(Z)
        return out

    def predict(self, X) -> np.ndarray:
        return self.classes[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


def refine(
    Z: np.ndarray, centers: np.ndarray, proportions: np.ndarray, refinement: str, random_state=None
) -> tuple[np.ndarray, LogisticRegression | None]:
    """Run one refinement from the DP prototypes; returns (centers, optional logistic head)."""
    if refinement not in REFINEMENTS:
        raise ValueError(f"refinement must be one of {REFINEMENTS}, got {refinement!r}")
    if refinement == "none":
        return centers, None
    if refinement == "ot":
        soft = refine_ot(Z, centers, proportions)
        hard = np.argmax(soft, axis=1)
        sums = np.zeros_like(centers)
        np.add.at(sums, hard, Z)
        filled = np.linalg.norm(sums, axis=1) > 0
        out = centers.copy()
        out[filled] = _normalise(sums[filled])
        return out, None
    centers = refine_kmeans(Z, centers)
    if refinement == "kmeans":
        return centers, None
    head = refine_self_training(Z, assign(Z, centers), centers.shape[0], random_state=random_state)
    return centers, head
