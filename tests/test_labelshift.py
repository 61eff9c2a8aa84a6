"""The receiver's label-shift correction (:mod:`dpadapt.labelshift`): EM of Saerens et al. (2002)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

from dpadapt.labelshift import adjust_log_proba, em_target_prior


def _gaussian_posteriors(prior_s, prior_t, n=20000, sep=2.0, seed=0):
    """Two 1-d Gaussian classes (means ±sep/2, unit variance): target rows drawn with ``prior_t``, their
    exact log-posteriors under ``prior_s``, and the true labels."""
    rng = np.random.default_rng(seed)
    y = rng.choice(2, size=n, p=prior_t)
    x = rng.normal(np.where(y == 1, sep / 2, -sep / 2), 1.0)
    loglik = np.stack([-0.5 * (x + sep / 2) ** 2, -0.5 * (x - sep / 2) ** 2], axis=1)
    A = loglik + np.log(prior_s)
    return A - logsumexp(A, axis=1, keepdims=True), y


@pytest.mark.parametrize("prior_t", [(0.5, 0.5), (0.8, 0.2), (0.1, 0.9)])
def test_em_recovers_the_target_prior_of_a_calibrated_model(prior_t):
    L, y = _gaussian_posteriors(np.array([0.5, 0.5]), np.array(prior_t))
    est = em_target_prior(L, [0.5, 0.5])
    assert est.converged
    np.testing.assert_allclose(est.target_prior, np.bincount(y, minlength=2) / y.size, atol=0.02)


def test_the_adjusted_rule_is_more_accurate_under_label_shift_and_unchanged_without_it():
    prior_s, prior_t = np.array([0.5, 0.5]), np.array([0.85, 0.15])
    L, y = _gaussian_posteriors(prior_s, prior_t, seed=1)
    est = em_target_prior(L, prior_s)
    before = np.mean(np.argmax(L, 1) == y)
    after = np.mean(np.argmax(adjust_log_proba(L, est), 1) == y)
    assert after > before + 0.03  # the boundary moves towards the rare class
    L0, y0 = _gaussian_posteriors(prior_s, prior_s, seed=2)
    est0 = em_target_prior(L0, prior_s)
    assert np.max(np.abs(est0.target_prior - prior_s)) < 0.02
    assert np.mean(np.argmax(adjust_log_proba(L0, est0), 1) == np.argmax(L0, 1)) > 0.98


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="source_prior"):
        em_target_prior(np.log(np.full((3, 2), 0.5)), [0.5, 0.2, 0.3])
    with pytest.raises(ValueError, match="log_proba"):
        em_target_prior(np.full((3, 2), np.nan), [0.5, 0.5])
