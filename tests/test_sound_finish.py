"""The discriminative finish of the sound design (mean-operator logistic regression) and its public trigger."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpadapt.sound import design as rule
from dpadapt.sound import receiver
from dpadapt.sound.receiver import Statistics


def _logistic_problem(seed: int = 0, n: int = 600, k: int = 5, K: int = 3):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, k)) / math.sqrt(k)
    W = rng.normal(size=(K, k)) * 3.0
    logits = Z @ W.T
    P = np.exp(logits - logits.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(K, p=p) for p in P])
    onehot = np.eye(K)[y]
    st = Statistics(onehot.T @ Z, onehot.sum(axis=0), Z.T @ Z, 0.0, float(n), ())
    return Z, y, st


def test_noise_free_on_the_source_rows_is_logistic_regression():
    """With the label-free part on the source's own rows and exact sums, the finish IS ridge logistic regression."""
    Z, y, st = _logistic_problem()
    lam = 2.0
    W, b = receiver.mean_operator_logistic(st, Z, lam)
    ref = LogisticRegression(C=1.0 / lam, tol=1e-10, max_iter=5000).fit(Z, y)
    P = np.exp(Z @ W.T + b)
    P /= P.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(P, ref.predict_proba(Z), atol=2e-4)
    np.testing.assert_allclose(W, ref.coef_, atol=2e-3)


def test_the_finish_reads_the_labels_only_through_the_sums_and_counts():
    """Two labellings with the same class sums and counts give the same model (the mean-operator factorisation)."""
    Z, y, st = _logistic_problem(seed=1)
    W1, b1 = receiver.mean_operator_logistic(st, Z, 1.0)
    moved = Statistics(st.sums + 1.0, st.counts, st.second, 0.0, st.n_public, ())
    W2, _ = receiver.mean_operator_logistic(moved, Z, 1.0)
    assert not np.allclose(W1, W2, atol=1e-3)  # the sums do steer it
    # scoring other rows than the source's: the label-free part on a sample of the same law is close
    W3, _ = receiver.mean_operator_logistic(st, _logistic_problem(seed=2, n=4000)[0], 1.0)
    assert np.corrcoef((W1 - W1.mean(axis=0)).ravel(), (W3 - W3.mean(axis=0)).ravel())[0, 1] > 0.95


def test_source_surrogate_matches_the_released_moments():
    Z, _, st = _logistic_problem(seed=3)
    rng = np.random.default_rng(4)
    target = rng.normal(size=(900, Z.shape[1])) * 0.5 + 0.3
    moved = receiver.source_surrogate(st, target, covariance=True)
    np.testing.assert_allclose(moved.mean(axis=0), st.sums.sum(axis=0) / st.n, atol=1e-10)
    m = Z.mean(axis=0)
    np.testing.assert_allclose(np.cov(moved, rowvar=False, bias=True), Z.T @ Z / Z.shape[0] - np.outer(m, m), atol=1e-2)


def test_the_trigger_reads_public_quantities_only(monkeypatch):
    monkeypatch.setattr(rule, "FINISH_THRESHOLD", 500.0)
    assert rule.finishes("discriminant", 2000, 2, 1.0)  # q = 1000
    assert not rule.finishes("discriminant", 2000, 2, 4.0)  # q = 250
    assert rule.finishes("discriminant", 2000, 2, 0.0)  # no noise: q = ∞
    assert not rule.finishes("prototypes", 2000, 2, 0.0)
    assert not rule.finishes("discriminant", 900, 2, 0.0)  # 450 rows a class: below the floor at every ε
    sigmas = np.linspace(0.0, 5.0, 51)  # monotone in ε: once on, a smaller σ keeps it on
    on = [rule.finishes("discriminant", 2000, 2, s) for s in sigmas]
    assert on == sorted(on, reverse=True)
    monkeypatch.setattr(rule, "FINISH_THRESHOLD", None)
    assert not rule.finishes("discriminant", 10**6, 2, 0.0)


@pytest.mark.parametrize("threshold", [None, 0.0])
def test_sound_da_applies_the_finish_exactly_when_triggered(monkeypatch, threshold):
    from dpadapt.sound import SoundDA

    monkeypatch.setattr(rule, "FINISH_THRESHOLD", threshold)
    monkeypatch.setattr(rule, "FINISH_ROWS_PER_CLASS", 10)
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(200, 6))
    ys = (Xs[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    Xt = rng.normal(size=(150, 6)) + 0.1
    est = SoundDA(epsilon=4.0, classes=(0, 1), random_state=0, design="discriminant").fit_domains(Xs, ys, Xt)
    assert ("finish" in est.model_.details) == (threshold is not None)
    assert est.score(Xt, (Xt[:, 0] > 0).astype(int)) > 0.8
