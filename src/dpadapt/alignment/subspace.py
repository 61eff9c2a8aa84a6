"""Subspace Alignment (Fernando, Habrard, Sebban, Tuytelaars, ICCV 2013).

Source and target PCA bases B_s, B_t (top-k eigenvectors of each domain's covariance); the
source is mapped to X_s B_s M with M = B_sᵀ B_t and the target to X_t B_t. Non-private here;
PRISA uses :func:`sa_bases` on privatised, PSD-repaired matrices.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from dpadapt.alignment.coral import LowRankCovariance, _dense
from dpadapt.alignment.covariance import clip_rows_any
from dpadapt.base import DAEstimator
from dpadapt.models import make_classifier
from dpadapt.validation import check_features


def top_eigenvectors(C: np.ndarray, k: int) -> np.ndarray:
    """The k leading eigenvectors (columns) of symmetric C, signs fixed for reproducibility."""
    p = C.shape[0]
    if not 1 <= k <= p:
        raise ValueError(f"k must be in [1, {p}], got {k}")
    w, V = np.linalg.eigh(0.5 * (C + C.T))
    B = V[:, np.argsort(w)[::-1][:k]]
    signs = np.sign(B[np.argmax(np.abs(B), axis=0), np.arange(k)])
    return B * np.where(signs == 0, 1.0, signs)


def sa_bases(Cs: np.ndarray, Ct: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(B_s M, B_t): the source projection already aligned to the target basis, and the target basis."""
    Bs, Bt = top_eigenvectors(Cs, k), top_eigenvectors(Ct, k)
    return Bs @ (Bs.T @ Bt), Bt


class SubspaceAlignment(DAEstimator):
    """Non-private SA baseline on unit-norm rows with a ``k``-dimensional PCA basis per domain.

    Parameters
    ----------
    k : int
        Subspace dimension (clipped to the number of rows and features).
    head : {"logreg", "mlp"}
    random_state : int, optional
    """

    def __init__(self, k: int = 100, head: str = "logreg", random_state: int | None = None):
        self.k = k
        self.head = head
        self.random_state = random_state

    def fit_domains(self, Xs, ys, Xt, yt=None):
        Xs, ys, Xt, yt = self._check_domains(Xs, ys, Xt, yt, allow_sparse=True)
        Xs, Xt = clip_rows_any(Xs), clip_rows_any(Xt)
        k = min(self.k, Xs.shape[1], Xs.shape[0], Xt.shape[0])
        Bs, Bt = LowRankCovariance(Xs).top(k), LowRankCovariance(Xt).top(k)
        k = min(Bs.shape[1], Bt.shape[1])
        Ps, self.target_basis_ = Bs[:, :k] @ (Bs[:, :k].T @ Bt[:, :k]), Bt[:, :k]
        self.model_ = make_classifier(self.head, self.random_state).fit(_dense(Xs) @ Ps, ys)
        self.classes_ = self.model_.classes_
        self._set_guarantees()
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        X = _dense(clip_rows_any(check_features(X, allow_sparse=True)))
        return self.model_.predict(X @ self.target_basis_)
