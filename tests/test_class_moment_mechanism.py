"""The class-moment release of the sound SSP design (issue 23): worst-case sensitivity and an audit.

Brute force over neighbours built from extreme rows (unit vectors, antipodal and orthogonal pairs,
rows far outside the ball that the mechanism must clip), label changes included, both relations;
the audit draws 10⁵ releases on a worst-case pair and must fail for an under-noised control.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpadapt.privacy import accounting
from dpadapt.privacy.audit import epsilon_lower_bound
from dpadapt.privacy.families.sound import class_moments_plan
from dpadapt.privacy.mechanisms import (
    CLASS_MOMENT_SENSITIVITY,
    NoiseSource,
    _unit_ball_rows,
    class_moment_statistics,
    random_streams,
)

EPS, DELTA, N = 1.0, 1e-5, 15_000  # 1.5·10⁴ a side: the control at Δ/3 bounds ε at ≈ 1.4–1.8, the calibrated release at ≈ 0.3


def _vector(Z, y, K):
    Z = _unit_ball_rows(Z)
    S = np.zeros((K, Z.shape[1]))
    np.add.at(S, y, Z)
    iu = np.triu_indices(Z.shape[1])
    return np.concatenate([S.ravel(), np.bincount(y, minlength=K), (Z.T @ Z)[iu]])


def _extreme_rows(d):
    e = np.eye(d)
    return np.vstack([e, -e, 5 * e[:1], (e[0] + e[1]) / np.sqrt(2), 30 * (e[0] - e[1]), np.zeros((1, d))])


def test_class_moment_sensitivity_brute_force():
    d, K = 3, 3
    rows = _extreme_rows(d)
    base_Z = np.random.default_rng(0).normal(size=(4, d)) * 3
    base_y = np.array([0, 1, 2, 0])
    ref = _vector(base_Z, base_y, K)
    worst = {"replace_one": 0.0, "add_remove": 0.0}
    for x, x2, a, b in itertools.product(rows, rows, range(K), range(K)):
        Z, Zp = base_Z.copy(), base_Z.copy()
        y, yp = base_y.copy(), base_y.copy()
        Z[0], y[0], Zp[0], yp[0] = x, a, x2, b
        worst["replace_one"] = max(worst["replace_one"], np.linalg.norm(_vector(Z, y, K) - _vector(Zp, yp, K)))
    for x, c in itertools.product(rows, range(K)):
        add = _vector(np.vstack([base_Z, x]), np.append(base_y, c), K)
        worst["add_remove"] = max(worst["add_remove"], np.linalg.norm(add - ref))
    for relation, bound in CLASS_MOMENT_SENSITIVITY.items():
        assert worst[relation] <= bound + 1e-12, relation
        assert worst[relation] >= bound - 1e-9, f"{relation}: the stated sensitivity is not tight"


def test_class_moment_release_matches_its_statistics_and_plan():
    _, noise = random_streams(0)
    Z = np.random.default_rng(0).normal(size=(150, 3))
    y = np.arange(150) % 2
    sigma, guarantee = class_moments_plan(2.0, 1e-5, classes=(0, 1, 2))
    assert sigma == pytest.approx(accounting.analytic_gaussian_sigma(2.0, 1e-5, np.sqrt(6.0)))
    outs = [class_moment_statistics(Z, y, 3, sigma=sigma, relation="replace_one", noise=noise) for _ in range(300)]
    iu = np.triu_indices(3)
    got = np.array([np.concatenate([o.sums.ravel(), o.counts, o.second[iu]]) for o in outs])
    assert abs((got - _vector(Z, y, 3)).std() / sigma - 1) < 0.05
    assert np.allclose(outs[0].second, outs[0].second.T)  # mirrored upper triangle
    eps = accounting.epsilon(outs[0].event, 1e-5, relation="replace_one", method="pld")
    assert eps == pytest.approx(2.0, rel=0.05)
    assert guarantee.epsilon == pytest.approx(2.0) and guarantee.sensitivity == pytest.approx(np.sqrt(6.0))
    with pytest.raises(ValueError, match="public label set"):
        class_moment_statistics(Z, y + 2, 3, sigma=1.0, relation="replace_one", noise=noise)


def _audit(sigma_sensitivity):
    """Worst-case pair: a unit row e₀ of class 0 becomes the orthogonal unit row e₁ of class 1 (distance √6).

    Numpy's sampler (reproducible noise) keeps 3·10⁴ releases fast; the vetted sampler the release uses by
    default is audited at the same σ/Δ in ``tests/test_issue19_holes.py``.
    """
    noise = NoiseSource(23, reproducible=True)
    K = 2
    sigma = accounting.analytic_gaussian_sigma(EPS, DELTA, sigma_sensitivity)
    D = (np.array([[1.0, 0.0]]), np.array([0]))
    Dp = (np.array([[0.0, 1.0]]), np.array([1]))
    v0, v1 = _vector(*D, K), _vector(*Dp, K)
    assert np.linalg.norm(v1 - v0) == pytest.approx(CLASS_MOMENT_SENSITIVITY["replace_one"])
    u = (v1 - v0) / np.linalg.norm(v1 - v0)
    iu = np.triu_indices(2)

    def draws(data):
        out = np.empty(N)
        for i in range(N):
            o = class_moment_statistics(*data, K, sigma=sigma, relation="replace_one", noise=noise)
            out[i] = np.concatenate([o.sums.ravel(), o.counts, o.second[iu]]) @ u
        return out

    return epsilon_lower_bound(draws(D), draws(Dp), delta=DELTA)


@pytest.mark.slow
def test_class_moment_audit_passes_and_undernoised_control_fails():
    ok = _audit(CLASS_MOMENT_SENSITIVITY["replace_one"])
    assert ok.passes(EPS), ok
    bad = _audit(CLASS_MOMENT_SENSITIVITY["replace_one"] / 3)
    assert not bad.passes(EPS), bad
