"""Statistical privacy audits: empirical lower bounds on ε from samples of a mechanism.

Given many outputs of a mechanism on two neighbouring inputs D and D′, reduced to a scalar
test statistic, every threshold t defines a distinguishing test "statistic > t". If the
mechanism is (ε, δ)-DP then for every t

    P[T(M(D)) > t] ≤ e^ε · P[T(M(D′)) > t] + δ.

With Clopper–Pearson confidence bounds on both probabilities (Bonferroni-corrected over the
thresholds and both directions), ``log((p̂_low(D) − δ) / p̂_high(D′))`` is a lower bound on ε that
holds with probability ≥ 1 − α. An audit passes when that lower bound does not exceed the
claimed ε; a mechanism with too little noise yields a lower bound above the claim.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import stats


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`epsilon_lower_bound`."""

    epsilon_lower_bound: float
    threshold: float
    direction: str
    n_samples: int

    def passes(self, claimed_epsilon: float) -> bool:
        return self.epsilon_lower_bound <= claimed_epsilon


def clopper_pearson(successes: np.ndarray, trials: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided (1 − α) Clopper–Pearson interval for binomial proportions (vectorised)."""
    successes = np.asarray(successes, dtype=float)
    lower = np.where(successes > 0, stats.beta.ppf(alpha / 2, successes, trials - successes + 1), 0.0)
    upper = np.where(successes < trials, stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes), 1.0)
    return lower, upper


def epsilon_lower_bound(
    stat_d: np.ndarray,
    stat_d_prime: np.ndarray,
    delta: float = 0.0,
    alpha: float = 0.05,
    n_thresholds: int = 100,
) -> AuditResult:
    """High-confidence lower bound on ε from scalar statistics of outputs on D and D′.

    Thresholds are the quantiles of the pooled samples; both tails (T > t and T < t) and both
    orderings (D vs D′, D′ vs D) are tried, with a Bonferroni correction over all tests.
    """
    a = np.sort(np.asarray(stat_d, dtype=float).ravel())
    b = np.sort(np.asarray(stat_d_prime, dtype=float).ravel())
    if a.size != b.size:
        raise ValueError("use the same number of samples on both inputs")
    n = a.size
    pooled = np.concatenate([a, b])
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.001, 0.999, n_thresholds)))
    n_tests = 4 * thresholds.size
    # counts of samples strictly above each threshold
    above_a = n - np.searchsorted(a, thresholds, side="right")
    above_b = n - np.searchsorted(b, thresholds, side="right")
    below_a = np.searchsorted(a, thresholds, side="left")
    below_b = np.searchsorted(b, thresholds, side="left")
    best = (-math.inf, float("nan"), "")
    for name, num, den in (
        ("D>D' upper tail", above_a, above_b),
        ("D'>D upper tail", above_b, above_a),
        ("D>D' lower tail", below_a, below_b),
        ("D'>D lower tail", below_b, below_a),
    ):
        # each one-sided bound at level α/(2·n_tests): 2·n_tests bounds in all, total error ≤ α
        low_num, _ = clopper_pearson(num, n, alpha / n_tests)
        _, high_den = clopper_pearson(den, n, alpha / n_tests)
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = np.log(np.maximum(low_num - delta, 0.0) / high_den)
        eps = np.where(np.isfinite(eps), eps, -math.inf)
        i = int(np.argmax(eps))
        if eps[i] > best[0]:
            best = (float(eps[i]), float(thresholds[i]), name)
    return AuditResult(max(best[0], 0.0), best[1], best[2], n)
