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
    kw = {"feature_type": "counts", "steps": 30}
    a = DPLogisticRegression(**kw).fit_domains(X, y)
    b = DPLogisticRegression(**kw).fit_domains(sp.csr_matrix(X), y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-9)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(sp.csr_matrix(X)), atol=1e-9)
