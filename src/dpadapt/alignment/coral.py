"""CORAL (Sun, Feng, Saenko, AAAI 2016): align second-order statistics of source to target.

Non-private here: :class:`CORAL` is the baseline; PRIMA calls :func:`coral_matrix` with privatised,
PSD-repaired covariances (see :mod:`dpadapt.alignment.prima`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from dpadapt.alignment.covariance import clip_rows_any
from dpadapt.base import DAEstimator
from dpadapt.models import make_classifier
from dpadapt.validation import check_features


def matrix_power_sym(C: np.ndarray, power: float) -> np.ndarray:
    """C^power for a symmetric C via eigh; eigenvalues ≤ 0 map to 0.

    For a non-PSD input this is the real part of the principal complex power when
    ``power = ±1/2`` (what a naive implementation without PSD repair computes).
    """
    C = 0.5 * (np.asarray(C, dtype=np.float64) + np.asarray(C, dtype=np.float64).T)
    w, V = np.linalg.eigh(C)
    pos = w > 1e-12 * max(1.0, float(np.abs(w).max()))
    wp = np.zeros_like(w)
    wp[pos] = w[pos] ** power
    return (V * wp) @ V.T


def coral_matrix(Cs: np.ndarray, Ct: np.ndarray, reg: float = 1.0, scale: float = 1.0) -> np.ndarray:
    """H = (s·C_s + reg·I)^{−1/2} (s·C_t + reg·I)^{1/2}: whiten with the source, re-colour with the target.

    ``scale`` s is a public constant bringing second moments of unit-norm rows to a unit-variance
    scale (s = d makes the mean diagonal ≈ 1), so ``reg = 1`` plays the role of CORAL's "+I".
    """
    p = Cs.shape[0]
    if Cs.shape != (p, p) or Ct.shape != (p, p):
        raise ValueError(f"covariances must both be {p}×{p}, got {Cs.shape} and {Ct.shape}")
    eye = np.eye(p)
    return matrix_power_sym(scale * Cs + reg * eye, -0.5) @ matrix_power_sym(scale * Ct + reg * eye, 0.5)


def centered_covariance(X) -> np.ndarray:
    """Sample covariance (rows = samples), dense or CSR input."""
    if sp.issparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        S = np.asarray((X.T @ X).toarray()) / X.shape[0]
        return S - np.outer(mean, mean)
    return np.cov(np.asarray(X, dtype=np.float64), rowvar=False, bias=True)


def _dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


class CORAL(DAEstimator):
    """Non-private CORAL baseline on unit-norm rows (full feature space), then a classifier.

    Rows of both domains are scaled to unit norm (the same public preprocessing as PRIMA); the
    covariances are centred (Sun et al.), scaled by d and regularised with ``reg``·I.

    Parameters
    ----------
    head : {"logreg", "mlp"}
    reg : float
        CORAL's ridge (the "+I").
    random_state : int, optional
    """

    def __init__(self, head: str = "logreg", reg: float = 1.0, random_state: int | None = None):
        self.head = head
        self.reg = reg
        self.random_state = random_state

    def fit_domains(self, Xs, ys, Xt, yt=None):
        Xs, ys, Xt, yt = self._check_domains(Xs, ys, Xt, yt, allow_sparse=True)
        Xs, Xt = clip_rows_any(Xs), clip_rows_any(Xt)
        d = Xs.shape[1]
        H = coral_matrix(centered_covariance(Xs), centered_covariance(Xt), self.reg, scale=float(d))
        self.model_ = make_classifier(self.head, self.random_state).fit(_dense(Xs) @ H, ys)
        self.classes_ = self.model_.classes_
        self._set_guarantees()
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(_dense(clip_rows_any(check_features(X, allow_sparse=True))))
