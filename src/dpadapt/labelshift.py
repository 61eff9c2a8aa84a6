"""Label-shift correction at the receiver: the target's class prior from its own rows (post-processing).

Between hospitals the class prior moves (disease prevalence, ICU mortality) while the class-conditional
distributions stay roughly put: p_t(x | y) ≈ p_s(x | y), π_t ≠ π_s ("label shift", "prior probability
shift"). A classifier fitted for the source's prior π_s then puts its decision boundary in the wrong
place on the target. Given the classifier's posteriors p_s(y | x) under π_s, the target's posteriors are

    p_t(y | x) ∝ p_s(y | x) · π_t(y) / π_s(y)                                              (Bayes' rule)

and π_t is the maximum-likelihood estimate of the mixing weights of the unlabelled target rows under the
fixed class-conditionals: :func:`em_target_prior` runs the EM iteration of Saerens, Latinne & Decaestecker
(Neural Computation 14(1), 2002) — E-step the adjusted posteriors, M-step their mean — whose fixed points
are exactly the stationary points of that likelihood, which is concave in π_t (a mixture with fixed
components), so the iteration converges to the global maximum from any interior start.

Everything here reads only the receiver's own rows and the released model: no privacy cost. The
estimate is only as good as the posteriors' calibration (Alexandari, Kundaje & Shrikumar, ICML 2020); the
sound default feeds it the posteriors of a generative Gaussian model of the released class statistics.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: The smallest prior a class may take (EM drives an absent class towards 0; a floor keeps log π finite).
MIN_PRIOR = 1e-6


@dataclasses.dataclass(frozen=True)
class PriorEstimate:
    """The target prior, the source prior it was estimated against, and how EM ended."""

    target_prior: np.ndarray
    source_prior: np.ndarray
    iterations: int
    converged: bool

    def log_ratio(self) -> np.ndarray:
        """log π_t − log π_s: the shift to add to every class score (log-posterior) of the source model."""
        return np.log(self.target_prior) - np.log(self.source_prior)


def _prior(p, what: str, K: int | None = None) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64).ravel()
    if (K is not None and p.shape != (K,)) or not np.all(np.isfinite(p)) or np.any(p < 0) or p.sum() <= 0:
        raise ValueError(f"{what} must be {K or 'K'} finite non-negative weights with a positive sum")
    p = np.maximum(p / p.sum(), MIN_PRIOR)
    return p / p.sum()


def em_target_prior(log_proba: np.ndarray, source_prior, *, max_iter: int = 1000, tol: float = 1e-8) -> PriorEstimate:
    """The target's class prior by EM (Saerens et al. 2002) from the source model's log-posteriors.

    ``log_proba``: (n, K) log p_s(y | x) of the receiver's rows under the source prior ``source_prior``
    (K,). Stops when the prior moves by less than ``tol`` (ℓ1) or after ``max_iter`` iterations.
    """
    from scipy.special import logsumexp

    L = np.asarray(log_proba, dtype=np.float64)
    if L.ndim != 2 or L.shape[0] == 0 or not np.all(np.isfinite(L) | (L == -np.inf)):
        raise ValueError("log_proba must be an (n, K) array of log-posteriors with n ≥ 1")
    K = L.shape[1]
    log_src = np.log(_prior(source_prior, "source_prior", K))
    prior = np.exp(log_src)
    for it in range(1, max_iter + 1):
        A = L + np.log(prior) - log_src
        A -= logsumexp(A, axis=1, keepdims=True)
        new = np.maximum(np.exp(A).mean(axis=0), MIN_PRIOR)
        new /= new.sum()
        moved = float(np.abs(new - prior).sum())
        prior = new
        if moved < tol:
            return PriorEstimate(prior, np.exp(log_src), it, True)
    return PriorEstimate(prior, np.exp(log_src), max_iter, False)


def adjust_log_proba(log_proba: np.ndarray, estimate: PriorEstimate) -> np.ndarray:
    """Log-posteriors under the target prior: ``log_proba + log π_t − log π_s``, renormalised."""
    from scipy.special import logsumexp

    A = np.asarray(log_proba, dtype=np.float64) + estimate.log_ratio()
    return A - logsumexp(A, axis=1, keepdims=True)
