"""Target-side routines of the class-statistics design (post-processing of a release; no privacy cost).

Plain functions, shared by the ``classstats`` family, PRIMA's sound mode and the sound route's receiver:

* :func:`fit_basis` — a basis (mean + top-k principal directions) of rows mapped by the public per-row
  map (:func:`dpadapt.stream.rows.row_map`; :func:`~dpadapt.stream.rows.project` maps rows onto it);
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
from typing import TYPE_CHECKING

import numpy as np

from dpadapt.configs.classstats import REFINEMENTS, STARTS
from dpadapt.stream.rows import normalise_rows, project, row_map
from dpadapt.validation import issparse

if TYPE_CHECKING:  # scikit-learn is imported where a refinement fits a head (the sound default's import leaves it out)
    from sklearn.linear_model import LogisticRegression

_ALIASES = {"prototypes": "none"}  # PRIMA's earlier name for the nearest DP prototype


#: Below this many entries (n × d) a dense basis is an exact SVD; above, block power iteration (Halko et al. 2011).
EXACT_SVD_ENTRIES = 4_000_000


def fit_basis(M, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and top-``k`` principal directions (d × k, orthonormal columns) of mapped rows ``M``
    (dense or sparse): :func:`fit_basis_source` of the rows."""
    from dpadapt.stream.readers import from_arrays

    return fit_basis_source(from_arrays(M, name="mapped rows"), k)


def fit_basis_source(source, k: int, row_map_=None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and top-``k`` principal directions of the rows of a :class:`~dpadapt.stream.ChunkedSource`,
    mapped chunk by chunk by ``row_map_`` (identity when ``None``).

    Small dense inputs (n·d ≤ :data:`EXACT_SVD_ENTRIES`) use an exact SVD of ``M − mean``; larger or
    sparse ones :func:`dpadapt.stream.basis.principal_basis` (a fixed number of passes over the rows;
    ``M − mean`` is never formed, so sparse input is never densified, and a file is never held whole).
    """
    from dpadapt.stream.basis import principal_basis
    from dpadapt.stream.readers import materialize

    if source.n_rows * source.n_features <= EXACT_SVD_ENTRIES:
        X, _ = materialize(source)
        M = X if row_map_ is None else row_map_(X)
        if not issparse(M):
            k = int(min(k, M.shape[0] - 1, M.shape[1]))
            if k < 1:
                raise ValueError("a basis needs at least two rows")
            mean = M.mean(axis=0)
            _, _, vt = np.linalg.svd(M - mean, full_matrices=False)
            return mean, vt[:k].T.copy()
    return principal_basis(source, k, row_map_)


def prototypes_from_release(sums: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unit class directions (K × k) and class proportions (K,) from noisy sums and counts.

    Counts are clipped at 1 (a class is assumed present, its proportion never 0); the direction of a
    class mean is the direction of its noisy sum (the count only rescales it).
    """
    counts = np.clip(np.asarray(counts, dtype=np.float64), 1.0, None)
    return normalise_rows(np.asarray(sums, dtype=np.float64)), counts / counts.sum()


def class_means(sums: np.ndarray, counts: np.ndarray, min_count: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Class means S_c / max(c_c, min_count) and the pooled mean ΣS_c / Σc_c of noisy statistics (post-processing)."""
    sums = np.asarray(sums, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    means = sums / np.maximum(counts, min_count)[:, None]
    return means, sums.sum(axis=0) / max(float(counts.sum()), min_count)


def principal_directions(Z: np.ndarray, k: int) -> np.ndarray:
    """The top-``k`` right singular vectors (columns) of the receiver's own rows ``Z`` (uncentred)."""
    k = min(k, Z.shape[0], Z.shape[1])
    _, _, vt = np.linalg.svd(Z, full_matrices=False)
    return vt[:k].T.copy()


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
        centers[filled] = normalise_rows(sums[filled])
        new = assign(Z, centers)
        if np.array_equal(new, labels):
            break
        labels = new
    return centers


def refine_ot(
    Z: np.ndarray, centers: np.ndarray, proportions: np.ndarray, reg: float = 0.05, n_iter: int = 500, tol: float = 1e-9
) -> np.ndarray:
    """Soft labels (n × K) from entropic OT between the rows (uniform mass) and the classes (DP proportions).

    The cost of row i to class c is 1 − cos(z_i, P_c); Sinkhorn's scalings with regularisation ``reg``,
    at most ``n_iter`` iterations, stopping once the row marginals are within ``tol`` (ℓ1) of uniform
    (checked every 10 iterations). Each row's cost is shifted by its minimum (absorbed by the row
    scaling, the plan is unchanged), so every row of the Gibbs kernel has a 1 and no row underflows;
    the soft labels are the plan's rows normalised, ``K_ic v_c / Σ_c' K_ic' v_c'``.
    """
    C = 1.0 - Z @ centers.T
    C -= C.min(axis=1, keepdims=True)
    K = np.exp(-C / reg)
    n = Z.shape[0]
    b = np.asarray(proportions, dtype=np.float64)
    tiny = np.finfo(np.float64).tiny
    v = np.ones(K.shape[1])
    for it in range(n_iter):
        Kv = np.maximum(K @ v, tiny)
        u = (1.0 / n) / Kv
        v = b / np.maximum(K.T @ u, tiny)
        if it % 10 == 9 and np.abs(u * (K @ v) - 1.0 / n).sum() < tol:
            break
    plan = K * v[None, :]
    return plan / plan.sum(axis=1, keepdims=True)


def self_training(
    F: np.ndarray, labels: np.ndarray, n_classes: int, rounds: int = 5, C: float = 10.0, folds: int = 5,
    random_state=None,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Cross-fitted logistic-regression self-training on the receiver's rows ``F`` from pseudo-``labels``.

    Each round re-labels every row by a logistic regression fitted on the OTHER folds (``folds``
    shuffled folds; in a high-dimensional space a model fitted on a row's own pseudo-label would just
    repeat it), for at most ``rounds`` rounds or until the labels stop changing; the returned scorer
    is fitted on all rows with the final labels. Returns ``(W, b)`` (scores ``F @ W.T + b``, one row
    per class of the public label set, a class absent from the labels scores :data:`ABSENT_SCORE`), or ``None`` with
    fewer than two classes.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    labels = np.asarray(labels)
    n = F.shape[0]
    for _ in range(rounds if n >= 2 * folds else 0):
        new = labels.copy()
        for train, test in KFold(folds, shuffle=True, random_state=random_state).split(F):
            if np.unique(labels[train]).size < 2:
                continue
            clf = LogisticRegression(C=C, max_iter=500).fit(F[train], labels[train])
            new[test] = clf.classes_[np.argmax(clf.predict_proba(F[test]), axis=1)]
        if np.array_equal(new, labels):
            break
        labels = new
    if np.unique(labels).size < 2:
        return None
    clf = LogisticRegression(C=C, max_iter=1000).fit(F, labels)
    return linear_scores(clf, n_classes, F.shape[1])


#: The score of a class a fitted head never saw (finite: scores and their softmax stay defined).
ABSENT_SCORE = -1e300


def linear_scores(model: LogisticRegression, n_classes: int, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) of a fitted logistic regression with one row per class index. A class the regression never saw
    scores :data:`ABSENT_SCORE` via b: never predicted, probability 0, and every score stays finite."""
    W = np.zeros((n_classes, n_features))
    b = np.full(n_classes, ABSENT_SCORE)
    coef, icpt = model.coef_, model.intercept_
    if coef.shape[0] == 1:  # binary: p(class 1) = σ(wx + b)
        coef, icpt = np.vstack([-coef / 2, coef / 2]), np.array([-icpt[0] / 2, icpt[0] / 2])
    for row, cls in enumerate(model.classes_):
        W[cls], b[cls] = coef[row], icpt[row]
    return W, b


def refine_self_training(
    Z: np.ndarray, labels: np.ndarray, n_classes: int, rounds: int = 5, C: float = 1.0, random_state=None
) -> LogisticRegression:
    """Logistic regression trained on pseudo-labels of the rows, re-labelled for a few rounds."""
    from sklearn.linear_model import LogisticRegression

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


def cluster_match(Z: np.ndarray, centers: np.ndarray, restarts: int = 10, random_state=None) -> np.ndarray:
    """Cluster the receiver's own rows into K groups (k-means, ``restarts`` k-means++ starts), then name
    the clusters by a one-to-one matching to the released prototypes (Hungarian, max total cosine).

    The clusters use only the receiver's rows (no release noise); the noisy prototypes are used once,
    jointly, to name them. Returns unit class centers.
    """
    from scipy.optimize import linear_sum_assignment
    from sklearn.cluster import KMeans

    K = centers.shape[0]
    km = KMeans(n_clusters=K, n_init=restarts, random_state=random_state).fit(Z)
    clusters = normalise_rows(km.cluster_centers_)
    rows, cols = linear_sum_assignment(-(normalise_rows(centers) @ clusters.T))
    out = normalise_rows(centers).copy()
    out[rows] = clusters[cols]
    return out


@dataclasses.dataclass
class ClassStatsModel:
    """A classifier on raw rows: public row map → basis → (nearest prototype | logistic regression).

    ``classes`` is the public label set; ``centers`` are unit class directions in the basis;
    ``head`` (optional) a logistic regression on the projected rows whose ``classes_`` are indices;
    ``W``, ``b`` (optional) a linear scorer on the mapped rows before the basis (it takes precedence).
    """

    classes: np.ndarray
    log1p: bool
    mean: np.ndarray | None
    components: np.ndarray | None
    centers: np.ndarray
    head: LogisticRegression | None = None
    W: np.ndarray | None = None
    b: np.ndarray | None = None

    @property
    def classes_(self) -> np.ndarray:
        return self.classes

    def transform(self, X) -> np.ndarray:
        return project(row_map(X, self.log1p), self.mean, self.components)

    def predict_proba(self, X) -> np.ndarray:
        from scipy.special import logsumexp

        if self.W is not None:  # linear scorer on the mapped rows (full feature space)
            scores = row_map(X, self.log1p) @ self.W.T + self.b
            return np.exp(scores - logsumexp(scores, axis=1, keepdims=True))
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


#: The ℓ1 violation of the row marginals at which the ``ot`` start stops Sinkhorn. The start keeps only each
#: row's most likely class; on the scale suite's receiver (1e4 rows, d = 1024, k = 20, ε = 1) those agreed
#: with a 5 000-iteration run on every row at this tolerance (reached after 330–370 iterations, where
#: the old 1e-9 never was within the 500-iteration cap), and the released proportions the marginals
#: match carry a larger DP error anyway (``tests/test_perf_paths.py``).
OT_START_TOLERANCE = 1e-3


def start(Z: np.ndarray, centers: np.ndarray, proportions: np.ndarray | None, name: str, random_state=None) -> np.ndarray:
    """Centers from the DP prototypes by one of :data:`STARTS` (``ot`` needs the DP class ``proportions``)."""
    if name == "none":
        return centers
    if name == "kmeans":
        return refine_kmeans(Z, centers)
    if name == "cluster_match":
        return cluster_match(Z, centers, random_state=random_state)
    if name == "ot":
        if proportions is None:
            proportions = np.full(centers.shape[0], 1.0 / centers.shape[0])
        hard = np.argmax(refine_ot(Z, centers, proportions, tol=OT_START_TOLERANCE), axis=1)
        sums = np.zeros_like(centers)
        np.add.at(sums, hard, Z)
        filled = np.linalg.norm(sums, axis=1) > 0
        out = centers.copy()
        out[filled] = normalise_rows(sums[filled])
        return out
    raise ValueError(f"unknown start {name!r}; one of {STARTS}")


@dataclasses.dataclass
class Refined:
    """What a refinement gives the receiver: centers in the working space ``Z``; optionally a logistic
    head on ``Z`` (``head``) or a linear scorer ``(W, b)`` on the full-feature rows ``F`` (``scorer``)."""

    centers: np.ndarray
    head: LogisticRegression | None = None
    scorer: tuple[np.ndarray, np.ndarray] | None = None

    def linear(self) -> tuple[np.ndarray, np.ndarray]:
        """One linear scorer ``(W, b)``: the full-feature scorer, else the head's, else cosine to the centers
        (valid on ``F`` when ``scorer`` is set, on ``Z`` otherwise; for PRIMA, which refines with F = Z, always Z)."""
        if self.scorer is not None:
            return self.scorer
        if self.head is not None:
            return linear_scores(self.head, self.centers.shape[0], self.centers.shape[1])
        return normalise_rows(self.centers), np.zeros(self.centers.shape[0])


def refine(
    Z: np.ndarray, centers: np.ndarray, proportions: np.ndarray | None, refinement: str, *, F: np.ndarray | None = None,
    random_state=None,
) -> Refined:
    """Run one refinement (:data:`REFINEMENTS`) from the DP prototypes on the receiver's own rows.

    ``Z``: the rows in the working space (unit rows, same space as ``centers``); ``F``: the same rows
    in the receiver's full feature space (default ``Z``), used by the ``"<start>+st"`` refinements:
    centers by ``<start>``, then logistic-regression self-training on ``F`` from their nearest-center
    labels (C = 10, ≤ 5 rounds). ``"self_training"``: k-means, then logistic regression on ``Z`` (C = 1).
    """
    if refinement not in REFINEMENTS:
        raise ValueError(f"refinement must be one of {REFINEMENTS}, got {refinement!r}")
    refinement = _ALIASES.get(refinement, refinement)
    if refinement.endswith("+st"):
        c = start(Z, centers, proportions, refinement[:-3], random_state)
        F = Z if F is None else F
        return Refined(c, scorer=self_training(F, assign(Z, c), c.shape[0], random_state=random_state))
    if refinement == "self_training":
        c = refine_kmeans(Z, centers)
        return Refined(c, head=refine_self_training(Z, assign(Z, c), c.shape[0], random_state=random_state))
    return Refined(start(Z, centers, proportions, refinement, random_state))
