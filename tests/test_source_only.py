"""SourceOnly preprocessing does not blow up on (nearly) constant features (issue 13, item 5)."""

from __future__ import annotations

import numpy as np
import pytest

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
