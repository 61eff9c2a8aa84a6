"""Target-side steps on released class statistics: prototypes, then refinement on the target's own rows.

Everything here is post-processing of a DP release (the noisy per-class sums and counts) plus the
target's own computation on its own rows: a model built here that *stays at the target* needs no
further mechanism (its rows are never released). A model that is sent elsewhere would reveal the
target's rows and needs its own mechanism.

These are small local versions of the class-statistics family's target routines
(``dpadapt.classstats.adapt``); switching to those is a one-line import change in
:mod:`dpadapt.alignment.prima`.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression

REFINEMENTS = ("prototypes", "kmeans", "cluster_match", "self_training")


def normalise_rows(Z: np.ndarray) -> np.ndarray:
    """Rows scaled to unit ℓ2 norm (zero rows stay zero)."""
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    return Z / np.maximum(norms, 1e-12)


def principal_directions(Z: np.ndarray, k: int) -> np.ndarray:
    """The top-``k`` right singular vectors (columns) of the rows ``Z`` (the target's own rows)."""
    k = min(k, Z.shape[0], Z.shape[1])
    _, _, Vt = np.linalg.svd(Z, full_matrices=False)
    return Vt[:k].T


def prototypes(sums: np.ndarray, counts: np.ndarray, min_count: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Class means S_c / max(c_c, min_count) and the pooled source mean ΣS_c / Σc_c (post-processing)."""
    sums = np.asarray(sums, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    means = sums / np.maximum(counts, min_count)[:, None]
    pooled = sums.sum(axis=0) / max(float(counts.sum()), min_count)
    return means, pooled


def spherical_kmeans(Z: np.ndarray, centres: np.ndarray, iterations: int = 20) -> np.ndarray:
    """Spherical k-means on unit rows ``Z`` started at ``centres``; returns the final unit centres.

    A centre that loses all its rows keeps its previous position (its class stays predictable).
    """
    C = normalise_rows(centres)
    for _ in range(iterations):
        assign = (Z @ C.T).argmax(axis=1)
        new = np.zeros_like(C)
        np.add.at(new, assign, Z)
        empty = np.linalg.norm(new, axis=1) < 1e-12
        new[empty] = C[empty]
        new = normalise_rows(new)
        if np.allclose(new, C):
            break
        C = new
    return C


def cluster_match(Z: np.ndarray, centres: np.ndarray, restarts: int = 10, random_state=None) -> np.ndarray:
    """Cluster the target's own rows into K groups (k-means, ``restarts`` k-means++ starts), then name
    the clusters by a one-to-one matching to the released prototypes (Hungarian, max total cosine).

    The clusters use only the target's rows (no release noise); the noisy prototypes are used jointly,
    once, to label them. Returns unit class centres.
    """
    from scipy.optimize import linear_sum_assignment
    from sklearn.cluster import KMeans

    K = centres.shape[0]
    km = KMeans(n_clusters=K, n_init=restarts, random_state=random_state).fit(Z)
    clusters = normalise_rows(km.cluster_centers_)
    rows, cols = linear_sum_assignment(-(normalise_rows(centres) @ clusters.T))
    out = normalise_rows(centres).copy()
    out[rows] = clusters[cols]
    return out


def _linear_scores(model: LogisticRegression, K: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) with one row per class of the public label set (absent classes score −∞ via b)."""
    W = np.zeros((K, k))
    b = np.full(K, -np.inf)
    coef, icpt = model.coef_, model.intercept_
    if coef.shape[0] == 1:  # binary: p(class 1) = σ(wx + b)
        coef, icpt = np.vstack([-coef / 2, coef / 2]), np.array([-icpt[0] / 2, icpt[0] / 2])
    for row, cls in enumerate(model.classes_):
        W[cls], b[cls] = coef[row], icpt[row]
    return W, b


def self_training(
    Z: np.ndarray, centres: np.ndarray, rounds: int = 5, C: float = 1.0, random_state=None
) -> tuple[np.ndarray, np.ndarray]:
    """Logistic regression fitted on the target's own rows pseudo-labelled by the nearest centre.

    Each round refits on the previous round's predictions (at most ``rounds``). Returns a linear
    scorer (W, b); with fewer than two pseudo-labelled classes it falls back to the centres.
    """
    K, k = centres.shape
    labels = (Z @ normalise_rows(centres).T).argmax(axis=1)
    W, b = normalise_rows(centres), np.zeros(K)
    for _ in range(rounds):
        if np.unique(labels).size < 2:
            break
        model = LogisticRegression(C=C, max_iter=500, random_state=random_state).fit(Z, labels)
        W, b = _linear_scores(model, K, k)
        new = (Z @ W.T + b).argmax(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    return W, b


def refine(
    Z: np.ndarray, centres: np.ndarray, method: str, *, iterations: int = 20, random_state=None
) -> tuple[np.ndarray, np.ndarray]:
    """A linear scorer (W, b) — scores ``Z @ W.T + b`` — refined on the target's unit rows ``Z``.

    ``"prototypes"``: cosine to the released prototypes; ``"kmeans"``: spherical k-means started at
    them; ``"cluster_match"``: the target's own k-means clusters named by matching to them; ``"self_training"``: logistic regression on the rows pseudo-labelled by them.
    """
    K = centres.shape[0]
    if method == "prototypes":
        return normalise_rows(centres), np.zeros(K)
    if method == "kmeans":
        return spherical_kmeans(Z, centres, iterations), np.zeros(K)
    if method == "cluster_match":
        return cluster_match(Z, centres, random_state=random_state), np.zeros(K)
    if method == "self_training":
        return self_training(Z, centres, random_state=random_state)
    raise ValueError(f"refinement must be one of {REFINEMENTS}, got {method!r}")
