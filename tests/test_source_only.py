"""SourceOnly: preprocessing does not blow up on (nearly) constant features (issue 13, item 5); its default
chooses scaling and C by cross-validation on the source (issue 23, item 5)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpadapt.baselines import FlooredStandardScaler, SourceOnly


def pixel_domains(seed: int = 0):
    """10-class 8×8 'digits': blank border with a few stray pixels in the source, a noisy border in the target."""
    rng = np.random.default_rng(seed)
    side, k = 8, 10
    protos = (rng.random((k, side, side)) < 0.35).astype(float)
    border = np.pad(np.zeros((side - 2, side - 2)), 1, constant_values=1).ravel().astype(bool)

    def draw(n: int, stray: float):
        y = rng.integers(0, k, n)
        X = np.clip(protos[y] + 0.15 * rng.normal(size=(n, side, side)), 0, 1).reshape(n, -1)
        X[:, border] = np.where(rng.random((n, border.sum())) < stray, rng.random((n, border.sum())), 0.0)
        return X, y

    Xs, ys = draw(600, 0.002)
    Xt, yt = draw(400, 0.3)
    return Xs, ys, Xt, yt


def test_floored_scaling_survives_a_noisy_border_where_z_scores_collapse():
    Xs, ys, Xt, yt = pixel_domains()
    acc = {s: np.mean(SourceOnly(scaling=s, random_state=0).fit_domains(Xs, ys, Xt).predict(Xt) == yt)
           for s in ("floored", "standard")}
    assert acc["floored"] >= 0.95
    assert acc["standard"] <= acc["floored"] - 0.2  # plain z-scores amplify the near-constant border pixels


def test_floored_scaler_never_amplifies_beyond_the_typical_scale():
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(0, 10, 200), rng.normal(0, 1, 200), np.full(200, 3.0), 1e-4 * rng.normal(size=200)])
    sc = FlooredStandardScaler().fit(X)
    typical = np.sqrt(np.mean(X.std(axis=0) ** 2))
    assert sc.scale_[0] == pytest.approx(X[:, 0].std())  # large-spread feature: standardised
    assert np.all(sc.scale_[1:] == pytest.approx(typical))  # small or constant ones: typical scale
    assert np.allclose(sc.transform(X)[:, 2], 0.0)
    assert np.all(np.isfinite(FlooredStandardScaler().fit(np.ones((5, 3))).transform(np.zeros((2, 3)))))


def test_unknown_scaling_is_refused():
    Xs, ys, Xt, _ = pixel_domains()
    with pytest.raises(ValueError, match="scaling"):
        SourceOnly(scaling="minmax").fit_domains(Xs, ys, Xt)


def small_unit_signal(seed: int, n: int):
    """Two classes told apart only by a feature measured in tiny units, beside 20 unit-scale noise features."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    signal = 1e-3 * (2.0 * y - 1.0 + 0.5 * rng.normal(size=n))
    return np.column_stack([signal, rng.normal(size=(n, 20))]), y


def test_default_chooses_scaling_and_C_by_cross_validation_on_the_source():
    Xs, ys = small_unit_signal(0, 300)
    Xt, yt = small_unit_signal(1, 300)
    fixed = SourceOnly(scaling="none", C=0.01, random_state=0).fit_domains(Xs, ys)
    tuned = SourceOnly(random_state=0).fit_domains(Xs, ys)
    assert fixed.cv_best_ is None and fixed.score(Xt, yt) <= 0.7  # unscaled + strong ℓ2 penalty: the tiny-unit weight is shrunk away
    assert tuned.cv_best_["scaler"] != "passthrough" and tuned.score(Xt, yt) >= 0.9
    sparse = SourceOnly(random_state=0).fit_domains(sp.csr_matrix(np.abs(Xs)), ys)
    assert sparse.cv_best_["scaler"] == "passthrough"  # counts are never scaled


def test_bad_C_is_refused():
    Xs, ys, Xt, _ = pixel_domains()
    with pytest.raises(ValueError, match="C must be"):
        SourceOnly(C=-1.0).fit_domains(Xs, ys, Xt)
