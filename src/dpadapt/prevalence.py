"""The target's prevalence (class prior) from the receiver's unlabelled rows, with an interval (no privacy cost).

Given a fitted model's class probabilities on the receiver's rows, computed under the prior the model was
fitted for (``source_prior``), three estimators of the target's class prior π_t:

* ``"em"`` — the maximum-likelihood mixing weights by EM (Saerens, Latinne & Decaestecker, Neural
  Computation 14(1), 2002; :func:`dpadapt.labelshift.em_target_prior`). Consistent under label shift when
  the probabilities are calibrated for the source.
* ``"mean"`` — the mean predicted probability (probabilistic classify-and-count; Bella et al., ICDM 2010):
  the prevalence the model implies.
* ``"source"`` — the source prior itself (no adaptation).

:func:`estimate` gives the point estimate and a percentile bootstrap interval over the receiver's rows
(the release held fixed: it states the sampling uncertainty of the target's rows, not the release noise).
Only the receiver's rows and the released model are read: post-processing, no privacy cost. Which estimator
the defaults use was chosen on development pairs by ``benchmarks/decisions/README.md``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpadapt.labelshift import MIN_PRIOR, em_target_prior

METHODS = ("em", "mean", "source")
#: The estimator the defaults use, chosen by ``benchmarks/decisions/README.md``.
DEFAULT = "mean"
#: The public seed of the bootstrap resamples (the interval is reproducible).
BOOTSTRAP_SEED = 20261129


@dataclasses.dataclass(frozen=True)
class Prevalence:
    """π_t (K,) with its ``level`` interval per class (``low``, ``high``), the method and the source prior."""

    prior: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    method: str
    source_prior: np.ndarray

    def to_dict(self) -> dict:
        return {"prior": self.prior.tolist(), "low": self.low.tolist(), "high": self.high.tolist(), "level": self.level,
                "method": self.method, "source_prior": self.source_prior.tolist()}

    def line(self, names=None, positive: int = -1) -> str:
        """One line: the estimated rate of ``names[positive]`` with its interval."""
        K = self.prior.size
        j = positive % K
        name = names[j] if names is not None else j
        return (f"estimated prevalence of {name!r}: {100 * self.prior[j]:.1f} % ({100 * self.level:.0f} % interval "
                f"{100 * self.low[j]:.1f}–{100 * self.high[j]:.1f} %; {self.method}; source prior {100 * self.source_prior[j]:.1f} %)")


def normalised(p) -> np.ndarray:
    p = np.maximum(np.asarray(p, dtype=np.float64).ravel(), MIN_PRIOR)
    return p / p.sum()


def point(proba: np.ndarray, source_prior, method: str = "em") -> np.ndarray:
    """π_t by ``method`` from probabilities ``proba`` (n, K) under ``source_prior``."""
    P = np.asarray(proba, dtype=np.float64)
    if method == "em":
        return em_target_prior(np.log(np.clip(P, np.finfo(float).tiny, None)), source_prior, max_iter=300, tol=1e-6).target_prior
    if method == "mean":
        return normalised(P.mean(axis=0))
    if method == "source":
        return normalised(source_prior)
    raise ValueError(f"method must be one of {METHODS}, got {method!r}")


def estimate(proba, source_prior, *, method: str = "em", level: float = 0.9, n_boot: int = 200,
             seed: int = BOOTSTRAP_SEED) -> Prevalence:
    """π_t with a percentile bootstrap interval over the rows (``n_boot`` resamples; 0: a point interval)."""
    P = np.asarray(proba, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] == 0 or not np.all(np.isfinite(P)):
        raise ValueError("proba must be a finite (n, K) array with n ≥ 1")
    src = normalised(source_prior)
    if src.size != P.shape[1]:
        raise ValueError(f"source_prior has {src.size} classes, proba {P.shape[1]}")
    est = point(P, src, method)
    if n_boot <= 0 or method == "source":
        return Prevalence(est, est.copy(), est.copy(), level, method, src)
    rng = np.random.default_rng(seed)
    n = P.shape[0]
    counts = np.array([np.bincount(rng.integers(0, n, n), minlength=n) for _ in range(n_boot)], dtype=np.float64)
    draws = _em_weighted(P, src, counts) if method == "em" else _normalised_rows(counts @ P / n)
    tail = (1.0 - level) / 2.0
    return Prevalence(est, np.quantile(draws, tail, axis=0), np.quantile(draws, 1 - tail, axis=0), level, method, src)


def _normalised_rows(A: np.ndarray) -> np.ndarray:
    A = np.maximum(A, MIN_PRIOR)
    return A / A.sum(axis=1, keepdims=True)


def _em_weighted(P: np.ndarray, source_prior: np.ndarray, weights: np.ndarray, *, max_iter: int = 300,
                 tol: float = 1e-6) -> np.ndarray:
    """The EM of :func:`dpadapt.labelshift.em_target_prior` for every row-weighting (B, n) at once (the bootstrap)."""
    ratio_base = np.clip(P, np.finfo(float).tiny, None) / source_prior  # p_s(y|x)/π_s(y)
    prior = np.tile(source_prior, (weights.shape[0], 1))
    total = weights.sum(axis=1, keepdims=True)
    for _ in range(max_iter):
        # Σ_n w_bn·post_bnk with post_bnk = r_nk·π_bk / Σ_j r_nj·π_bj, as two matrix products (no (B, n, K) array)
        new = _normalised_rows(prior * ((weights / (prior @ ratio_base.T)) @ ratio_base) / total)
        moved = float(np.abs(new - prior).sum(axis=1).max())
        prior = new
        if moved < tol:
            break
    return prior


def shift(proba, source_prior, target_prior) -> np.ndarray:
    """Probabilities under ``target_prior``: p_t(y|x) ∝ p_s(y|x)·π_t(y)/π_s(y) (Bayes' rule)."""
    P = np.clip(np.asarray(proba, dtype=np.float64), np.finfo(float).tiny, None)
    A = P * (normalised(target_prior) / normalised(source_prior))
    return A / A.sum(axis=1, keepdims=True)
