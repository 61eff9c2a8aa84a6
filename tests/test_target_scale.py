"""The receiver-side statement of the shift between units (dpadapt.sound.target_scale): known answers, fast."""

import copy
import warnings

import numpy as np
import pytest
from scipy.special import expit, logit

from dpadapt.metrics import calibration_line, roc_auc
from dpadapt.sound import calibrate, target_scale


def mixture_rows(n, pi, d, c, delta, v, rng):
    """g drawn from the target model of the module: g | y ~ N(c + δ ± Δ/2, v)."""
    y = (rng.random(n) < pi).astype(int)
    return c + delta + np.where(y == 1, d / 2, -d / 2) + np.sqrt(v) * rng.normal(size=n), y


def on_target(fit, g):
    """P(y = 1 | g) on the target under the fitted scale (the module's log posterior odds)."""
    return expit(fit.slope * (g - fit.offset) + logit(fit.prior))


def test_moments_recover_a_wider_target_where_the_source_scale_is_over_confident():
    rng = np.random.default_rng(36)
    d, c, delta, v, pi = 4.0, 0.3, -0.5, 8.0, 0.2  # the target spreads twice the source's variance (Δ)
    g, y = mixture_rows(20000, pi, d, c, delta, v, rng)
    today = expit(g - c - delta + logit(pi))  # the source's scale (odds g), even at the true prior and location
    assert calibration_line(y, today)[0] < 0.6  # over-confident: slope Δ/v = 0.5
    fit = target_scale.moments(g, d, c, pi)
    assert fit.method == "moments" and abs(fit.slope - d / v) < 0.03 and abs(fit.offset - (c + delta)) < 0.05
    assert 0.9 < calibration_line(y, on_target(fit, g))[0] < 1.1
    assert roc_auc(y, on_target(fit, g)) == pytest.approx(roc_auc(y, today), abs=1e-12)


def test_the_guards_keep_the_model_or_floor_the_spread():
    rng = np.random.default_rng(1)
    d = 2.0
    g, _ = mixture_rows(5000, 0.5, d, 0.0, 0.0, 0.01, rng)  # var ≈ 1.01 < π(1 − π)Δ² = 1 + the floor's share
    tight = target_scale.moments(0.8 * g, d, 0.0, 0.5)  # var ≈ 0.65: not explained by the separation
    assert tight.method == "none" and "not explained" in tight.reason
    floored = target_scale.moments(g, d, 0.0, 0.5)
    assert floored.method == "moments" and floored.spread == pytest.approx(target_scale.MIN_SPREAD_SHARE * d)
    assert target_scale.moments(g, 0.0, 0.0, 0.5).method == "none"


def fit_sound(along: float, spread: float):
    """SoundDA (noise-free) from 3,000 source rows of two 50-dimensional Gaussians to 3,000 target rows whose
    within-class spread is ``along`` times larger along the discriminant direction and ``spread`` times in all."""
    from dpadapt.sound import SoundDA

    rng = np.random.default_rng([36, 2])
    dim = 50
    mu = np.full(dim, 1.0 / np.sqrt(dim))
    u = mu / np.linalg.norm(mu)

    def draw(n, pi, along, spread, shift):
        y = (rng.random(n) < pi).astype(int)
        e = rng.normal(size=(n, dim))
        e += (along - 1.0) * np.outer(e @ u, u)
        return spread * e + np.where(y[:, None] == 1, mu, -mu) + shift * u, y

    (Xs, ys), (Xt, yt) = draw(3000, 0.4, 1.0, 1.0, 0.0), draw(3000, 0.2, along, spread, 0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = SoundDA(epsilon=None, classes=(0, 1), random_state=0).fit_domains(Xs, ys, Xt).model_
    assert fitted.details["llr_separation"] > 0 and fitted.details["target_scale"]["method"] == calibrate.TARGET_SCALE
    Z = fitted.row_map()(Xt)
    out = {}
    for scale in target_scale.METHODS:
        model = calibrate.at_target_prior(copy.deepcopy(fitted), Z, scale=scale, n_boot=20)
        p = model.predict_proba(Xt)[:, 1]
        out[scale] = (calibration_line(yt, p)[0], roc_auc(yt, p), model.details["prevalence"]["prior"][1], p.mean())
    plain = fitted.scores(Z)  # (W, b) stay the released model's: decision_function and a score request are unchanged
    assert np.array_equal(plain, calibrate.at_target_prior(copy.deepcopy(fitted), Z, scale="none").scores(Z))
    with pytest.raises(ValueError, match="scale"):
        calibrate.at_target_prior(copy.deepcopy(fitted), Z, scale="bogus")
    return out


def test_sound_da_on_a_unit_wider_along_the_discriminant_moments_recalibrate_keeping_the_ranking():
    assert calibrate.TARGET_SCALE == "moments"  # SoundDA's binary default, chosen by the rule (benchmarks/decisions)
    out = fit_sound(along=1.8, spread=1.0)
    assert out["none"][0] < 0.6  # without it: over-confident on the wider unit
    assert 0.8 < out["moments"][0] < 1.25
    assert out["moments"][1] == pytest.approx(out["none"][1], abs=1e-12)  # ROC-AUC identical
    assert out["moments"][2] == out["none"][2]  # the reported prevalence is the estimator's (PREVALENCE)
