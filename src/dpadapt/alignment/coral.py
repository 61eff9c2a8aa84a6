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


class LowRankCovariance:
    """s·cov(X) = V diag(λ) Vᵀ from a thin SVD of the centred rows (cost O(n²d), no d×d matrix)."""

    def __init__(self, X, scale: float = 1.0):
        Xd = _dense(X)
        Xc = Xd - Xd.mean(axis=0)
        _, svals, Vt = np.linalg.svd(Xc, full_matrices=False)
        keep = svals > 1e-10 * max(1.0, float(svals.max(initial=0.0)))
        self.V = Vt[keep].T
        self.eigvals = scale * svals[keep] ** 2 / Xd.shape[0]

    def apply_power(self, Y: np.ndarray, power: float, reg: float) -> np.ndarray:
        """Y (s·cov + reg·I)^power, exactly."""
        coef = (self.eigvals + reg) ** power - reg**power
        return reg**power * Y + ((Y @ self.V) * coef) @ self.V.T

    def top(self, k: int) -> np.ndarray:
        """The k leading eigenvectors (columns)."""
        return self.V[:, np.argsort(self.eigvals)[::-1][:k]]


class CORAL(DAEstimator):
    """Non-private CORAL baseline, the published recipe (Sun et al. 2016), then a classifier.

    Each domain's features are standardised with that domain's own mean and standard deviation;
    the source is whitened with (cov_s + reg·I)^{−1/2} and re-coloured with (cov_t + reg·I)^{1/2}.
    Sparse count inputs (bag of words) are not standardised (it inflates rare terms): their rows
    are scaled to unit norm and the covariances multiplied by d instead, and the classifier
    gets no scaler (as :func:`dpadapt.models.make_classifier` does for sparse data).
    The matrix powers are applied through thin SVDs (exact; no d×d matrix is formed).

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
        self.sparse_ = sp.issparse(Xs)
        Zs, Zt = self._features(Xs), self._features(Xt)
        scale = float(Zs.shape[1]) if self.sparse_ else 1.0
        src, tgt = LowRankCovariance(Zs, scale), LowRankCovariance(Zt, scale)
        Z = tgt.apply_power(src.apply_power(Zs, -0.5, self.reg), 0.5, self.reg)
        self.model_ = make_classifier(self.head, self.random_state, sparse=self.sparse_).fit(Z, ys)
        self.classes_ = self.model_.classes_
        self._set_guarantees()
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(self._features(check_features(X, allow_sparse=True)))

    def _features(self, X) -> np.ndarray:
        if self.sparse_:
            return _dense(clip_rows_any(X))
        return _standardise(_dense(X))


def _standardise(X: np.ndarray) -> np.ndarray:
    """Per-feature z-scores with the rows' own statistics (constant features are only centred)."""
    std = X.std(axis=0)
    return (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
