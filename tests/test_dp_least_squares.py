"""DP least squares (AdaSSP, issue 28): λ_min's worst-case sensitivity, the composed plan, an audit of the
two releases together whose under-noised control fails, and the estimator (noise-free = ridge, sparse = dense)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from dpadapt.classstats.baselines import DPLeastSquares, adassp_ridge
from dpadapt.privacy import accounting
from dpadapt.privacy.audit import epsilon_lower_bound
from dpadapt.privacy.families.classstats import adassp_plan
from dpadapt.privacy.mechanisms import (
    CLASS_MOMENT_SENSITIVITY,
    MIN_EIGENVALUE_SENSITIVITY,
    NoiseSource,
    class_moment_sums,
    min_eigenvalue,
    release_class_moment_sums,
    release_min_eigenvalue,
)

EPS, DELTA = 1.0, 1e-5


def _lam_min(Z) -> float:
    return min_eigenvalue(class_moment_sums(Z, np.zeros(len(Z), dtype=int), 1)[2])  # rows clipped as released


def test_min_eigenvalue_sensitivity_brute_force():
    """|λ_min(D) − λ_min(D′)| ≤ 1 over neighbours built from extreme rows (unit, antipodal, far outside the
    ball, zero), on a base that makes the bound tight and on random bases; tight for both relations."""
    d = 3
    e = np.eye(d)
    rows = np.vstack([e, -e, 5 * e[:1], (e[0] + e[1]) / np.sqrt(2), 30 * (e[0] - e[2]), np.zeros((1, d))])
    rng = np.random.default_rng(0)
    bases = [e[1:], *(rng.normal(size=(m, d)) for m in (2, 4, 6))]
    worst = {"replace_one": 0.0, "add_remove": 0.0}
    for base in bases:
        ref = _lam_min(base)
        for x, x2 in itertools.product(rows, rows):
            gap = abs(_lam_min(np.vstack([base, x])) - _lam_min(np.vstack([base, x2])))
            worst["replace_one"] = max(worst["replace_one"], gap)
        for x in rows:
            worst["add_remove"] = max(worst["add_remove"], abs(_lam_min(np.vstack([base, x])) - ref))
    for relation, bound in MIN_EIGENVALUE_SENSITIVITY.items():
        assert worst[relation] <= bound + 1e-12, relation
        assert worst[relation] >= bound - 1e-9, f"{relation}: the stated sensitivity is not tight"


@pytest.mark.parametrize("share", [0.0, 0.3])
def test_adassp_plan_is_one_gaussian_at_epsilon(share):
    sigma, sigma_eigen, g = adassp_plan(2.0, 1e-5, classes=(0, 1, 2), eigen_share=share)
    z = accounting.analytic_gaussian_sigma(2.0, 1e-5, 1.0)
    assert sigma == pytest.approx(z / np.sqrt(1 - share) * np.sqrt(6.0))
    assert (sigma_eigen is None) == (share == 0.0) and len(g.events) == (1 if share == 0.0 else 2)
    if share:
        assert sigma_eigen == pytest.approx(z / np.sqrt(share))
    assert g.valid and g.sensitivity == pytest.approx(np.sqrt(6.0))
    assert accounting.epsilon(accounting.compose(g.events), 1e-5, relation="replace_one", method="pld") == pytest.approx(2.0, rel=0.02)
    with pytest.raises(ValueError, match="eigen_share"):
        adassp_plan(2.0, 1e-5, classes=(0, 1), eigen_share=1.0)


def test_adassp_ridge_bounds_the_noise_spectral_norm():
    """The ridge dominates the spectral norm of the symmetric Gaussian noise on Σxxᵀ (probability ≥ 1 − ρ)."""
    rng = np.random.default_rng(1)
    d, sigma = 60, 3.0
    lam = adassp_ridge(sigma, d, rho=0.05, scale=1.0)
    for _ in range(20):
        E = np.triu(rng.normal(0.0, sigma, size=(d, d)))
        assert np.linalg.norm(E + np.triu(E, 1).T, 2) < lam
    # a large private λ_min lowers the ridge by its lower confidence bound, never below 0
    assert adassp_ridge(sigma, d, rho=0.05, scale=1.0, min_eigenvalue=50.0, sigma_eigen=2.0) == pytest.approx(
        lam - (50.0 - 2.0 * np.sqrt(2 * np.log(20))))
    assert adassp_ridge(sigma, d, rho=0.05, scale=1.0, min_eigenvalue=1e6, sigma_eigen=2.0) == 0.0


def _audit(scale: float, n: int = 10_000):
    """Worst case for both releases at once: base row e₁ (class 0); D adds e₀ (class 0), D′ adds e₁ (class 1).

    The moment vector moves by √6 and λ_min by 1 (I → diag(0, 2)); the test statistic is the likelihood-ratio
    direction √6·⟨m, u⟩/σ_m² − λ̃/σ_λ². ``scale`` < 1 divides both noises (the under-noised control)."""
    sigma_m, sigma_l, _ = adassp_plan(EPS, DELTA, classes=(0, 1), eigen_share=0.3)
    sigma_m, sigma_l = sigma_m * scale, sigma_l * scale
    noise = NoiseSource(28, reproducible=True)
    iu = np.triu_indices(2)
    D = class_moment_sums(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0, 0]), 2)
    Dp = class_moment_sums(np.array([[0.0, 1.0], [0.0, 1.0]]), np.array([0, 1]), 2)

    def vec(s):
        return np.concatenate([s[0].ravel(), s[1], s[2][iu]])

    diff = vec(Dp) - vec(D)
    assert np.linalg.norm(diff) == pytest.approx(CLASS_MOMENT_SENSITIVITY["replace_one"])
    assert min_eigenvalue(D[2]) - min_eigenvalue(Dp[2]) == pytest.approx(MIN_EIGENVALUE_SENSITIVITY["replace_one"])
    u = diff / np.linalg.norm(diff)

    def draws(stats):
        out = np.empty(n)
        for i in range(n):
            lam = release_min_eigenvalue(stats[2], sigma=sigma_l, relation="replace_one", noise=noise).value[0]
            o = release_class_moment_sums(*stats, sigma=sigma_m, relation="replace_one", noise=noise)
            out[i] = np.sqrt(6.0) * (np.concatenate([o.sums.ravel(), o.counts, o.second[iu]]) @ u) / sigma_m**2 - lam / sigma_l**2
        return out

    return epsilon_lower_bound(draws(D), draws(Dp), delta=DELTA)


@pytest.mark.slow
def test_adassp_audit_passes_and_undernoised_control_fails():
    ok = _audit(1.0)
    assert ok.passes(EPS), ok
    bad = _audit(1.0 / 3.0)
    assert not bad.passes(EPS), bad


def _blobs(rng, n=240, d=6, K=3):
    y = np.arange(n) % K
    X = rng.normal(size=(n, d)) * 0.5
    X[np.arange(n), y] += 3.0
    return X, y


def test_noise_free_pipeline_is_the_ridge_of_the_mapped_rows(rng):
    X, y = _blobs(rng)
    est = DPLeastSquares(epsilon=None, classes=(0, 1, 2)).fit(X, y)
    Z = X / np.linalg.norm(X, axis=1, keepdims=True)
    lam = 1.0 * len(X) / X.shape[1]  # ridge_floor · n / d
    W = np.linalg.solve(Z.T @ Z + lam * np.eye(X.shape[1]), Z.T @ np.eye(3)[y]).T
    assert est.ridge_ == pytest.approx(lam) and est.guarantees_ == {}
    np.testing.assert_allclose(est.coef_, W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(est.predict_proba(X).sum(axis=1), 1.0)
    assert np.mean(est.predict(X) == y) > 0.95


def test_private_fit_sparse_equals_dense_and_spends_only_what_it_plans(rng):
    X, y = _blobs(rng)
    kw = dict(epsilon=2.0, classes=(0, 1, 2), random_state=3, reproducible_noise=True)
    dense = DPLeastSquares(**kw).fit(X, y)
    sparse = DPLeastSquares(**kw).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-9, atol=1e-12)
    sigma, _, _ = adassp_plan(2.0, 1 / (10 * len(X)), classes=(0, 1, 2))
    assert dense.ridge_ == pytest.approx(max(len(X) / X.shape[1], adassp_ridge(sigma, X.shape[1], rho=0.05, scale=1.0)))
    assert len(dense.guarantee_.events) == 1 and np.mean(dense.predict(X) == y) > 0.8
    # a share for λ_min: two Gaussians composed to the same ε; with n < d λ_min = 0 is public and nothing is spent on it
    shared = DPLeastSquares(**kw, eigen_share=0.3).fit(X, y)
    assert len(shared.guarantee_.events) == 2
    eps = accounting.epsilon(accounting.compose(shared.guarantee_.events), shared.guarantee_.delta, relation="replace_one", method="pld")
    assert eps == pytest.approx(2.0, rel=0.02)
    wide = DPLeastSquares(**kw, eigen_share=0.3).fit(X[:5], y[:5])
    assert len(wide.guarantee_.events) == 1 and wide.guarantee_.details["eigen_share"] == 0.0
