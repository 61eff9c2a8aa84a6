"""The sound discriminant's finish for plenty of data (the ridge of both errors) and its public trigger."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from dpadapt.sound import design as rule
from dpadapt.sound import receiver
from dpadapt.sound.receiver import Statistics


def _gaussian_problem(seed: int, n: int, k: int = 12):
    """Two Gaussian classes, shared anisotropic covariance, part of the signal along the weakest direction."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    Z = rng.normal(size=(n, k)) * np.linspace(1.0, 0.3, k) / math.sqrt(k)
    side = np.where(y == 1, 1.0, -1.0)
    Z[:, 0] += 0.1 * side
    Z[:, -1] += 0.06 * side
    onehot = np.eye(2)[y]
    return Z, y, Statistics(onehot.T @ Z, onehot.sum(axis=0), Z.T @ Z, 0.0, float(n), ())


def _accuracy(W, b, Z, y):
    return float(np.mean(np.argmax(Z @ W.T + b, axis=1) == y))


def test_sampling_ridge_is_the_noise_part_plus_the_marchenko_pastur_part():
    assert rule.sampling_ridge(0.0, 4000, 40) == pytest.approx(2 * math.sqrt(100))
    assert rule.sampling_ridge(1.5, 4000, 40) == pytest.approx(rule.RIDGE_SCALE * 1.5 * math.sqrt(40) + 20)
    for n, k in [(2000, 71), (3000, 30), (10**5, 300)]:  # n/k > 4: smaller than today's n/k floor
        assert rule.sampling_ridge(1.0, n, k) < rule.discriminant_ridge(1.0, n, k)


def test_noise_free_with_plenty_of_rows_the_finish_approaches_logistic_regression():
    """Noise-free, n ≫ k: today's ridge n/k drowns a weak direction; the ridge of both errors recovers it."""
    Z, y, st = _gaussian_problem(0, 6000)
    Zte, yte, _ = _gaussian_problem(1, 4000)
    k = Z.shape[1]
    ref = LogisticRegression(C=1e4, max_iter=2000).fit(Z, y).score(Zte, yte)
    today = _accuracy(*receiver.discriminant(st, rule.discriminant_ridge(0.0, st.n, k)), Zte, yte)
    finished = _accuracy(*receiver.discriminant(st, rule.sampling_ridge(0.0, st.n, k)), Zte, yte)
    assert finished >= ref - 0.015  # 78.2 against 79.0 (sklearn, unregularised)
    assert finished > today + 0.03  # against 71.9


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
def test_sound_da_applies_the_finish_exactly_when_triggered_and_alike_on_neighbours(monkeypatch, threshold):
    from dpadapt.sound import SoundDA

    monkeypatch.setattr(rule, "FINISH_THRESHOLD", threshold)
    monkeypatch.setattr(rule, "FINISH_ROWS_PER_CLASS", 10)
    rng = np.random.default_rng(0)
    Xs = rng.normal(size=(200, 6))
    ys = (Xs[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    Xt = rng.normal(size=(150, 6)) + 0.1
    details = []
    for labels in (ys, np.r_[1 - ys[:1], ys[1:]]):  # D and D′ (one label replaced)
        est = SoundDA(epsilon=4.0, classes=(0, 1), random_state=0, design="discriminant").fit_domains(Xs, labels, Xt)
        details.append(est.model_.details)
        assert est.score(Xt, (Xt[:, 0] > 0).astype(int)) > 0.8
    assert details[0]["finish"] == details[1]["finish"] == (threshold is not None)
    assert details[0]["ridge"] == details[1]["ridge"]
