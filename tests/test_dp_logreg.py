"""DP-LR's clipped gradient sum (issue 23): same sum as per-example clipping, bounded per record, sparse = dense."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpadapt.classstats import DPLogisticRegression
from dpadapt.classstats.baselines import _features, clipped_gradient_sum
from dpadapt.privacy.mechanisms import clip_rows


def test_clipped_sum_equals_per_example_clipping_and_one_record_moves_it_at_most_2C(rng):
    X = rng.normal(size=(50, 7)) * rng.exponential(5.0, size=(50, 1))
    F = _features(X, log1p=False)
    R = rng.normal(size=(50, 3))
    per_example = (R[:, :, None] * F[:, None, :]).reshape(50, -1)
    for clip in (0.05, 0.5, 10.0):
        np.testing.assert_allclose(clipped_gradient_sum(F, R, clip).ravel(), clip_rows(per_example, clip).sum(axis=0), atol=1e-12)
        # neighbour D′: record 0 replaced by a worst-case one (huge residual, a different row)
        R2, X2 = R.copy(), X.copy()
        R2[0], X2[0] = 1e6, -1e6
        moved = clipped_gradient_sum(_features(X2, False), R2, clip) - clipped_gradient_sum(F, R, clip)
        assert np.linalg.norm(moved) <= 2 * clip * (1 + 1e-12)


def test_sparse_counts_take_the_same_map_and_model_as_dense(rng):
    X = rng.poisson(0.3, size=(80, 40)).astype(float)
    X[3] = 0.0  # an all-zero row maps to the bias alone
    y = (X[:, :20].sum(axis=1) > X[:, 20:].sum(axis=1)).astype(int)
    dense, sparse = _features(X, log1p=True), _features(sp.csr_matrix(X), log1p=True)
    assert sp.issparse(sparse)
    np.testing.assert_allclose(sparse.toarray(), dense, atol=1e-12)
    assert np.all(np.linalg.norm(dense, axis=1) <= 1 + 1e-12)
    kw = {"epsilon": None, "feature_type": "counts", "steps": 30}
    a = DPLogisticRegression(**kw).fit_domains(X, y)
    b = DPLogisticRegression(**kw).fit_domains(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(sp.csr_matrix(X)), atol=1e-9)


def _loss(F, y, W) -> float:
    from scipy.special import logsumexp

    logits = F @ W.T
    return float(np.mean(logsumexp(logits, axis=1) - logits[np.arange(len(y)), y]))


def test_noise_free_optimiser_reaches_the_logistic_optimum_where_the_old_one_stopped_short(rng):
    """Rows sharing a large common component (like non-negative CNN features) make the loss ill-conditioned:
    the pre-issue-28 optimiser (100 plain steps) stays far from the optimum, the heavy-ball one reaches it."""
    from sklearn.linear_model import LogisticRegression

    n, d = 300, 20
    y = np.arange(n) % 3
    X = 5.0 + rng.normal(size=(n, d))
    X[np.arange(n), y] += 1.0
    F = _features(X, log1p=False)
    best = _loss(F, y, LogisticRegression(C=1e4, fit_intercept=False, max_iter=10_000, tol=1e-10).fit(F, y).coef_)
    new = DPLogisticRegression(epsilon=None, classes=(0, 1, 2)).fit(X, y)
    old = DPLogisticRegression(epsilon=None, classes=(0, 1, 2), steps=100, momentum=0.0, time_scale=None).fit(X, y)
    assert _loss(F, y, new.coef_) - best < 0.05
    assert _loss(F, y, old.coef_) - best > 0.2


def test_step_size_is_public_and_shrinks_with_the_noise(rng):
    X, y = rng.normal(size=(200, 5)), np.arange(200) % 2
    steps = {}
    for eps in (None, 0.5, 1.0, 4.0, 500.0):
        est = DPLogisticRegression(epsilon=eps, classes=(0, 1), steps=50, random_state=0).fit(X, y)
        steps[eps] = est.step_size_
        if eps is not None:  # η = min(lr, a(1 − β)/(T·R)), R = σ₁/(nC) from the plan's σ per step
            c, sigma = est.config_, est.guarantee_.details["sigma"]
            R = sigma / np.sqrt(c.steps) / (200 * c.clip)
            assert est.step_size_ == min(c.learning_rate, c.time_scale * (1 - c.momentum) / (c.steps * R))
    assert steps[None] == 2.0 and steps[0.5] < steps[1.0] < steps[4.0] <= steps[500.0] == 2.0
    fixed = DPLogisticRegression(epsilon=0.5, classes=(0, 1), steps=50, time_scale=None, random_state=0).fit(X, y)
    assert fixed.step_size_ == 2.0
