"""Class-statistics family: plan, basis disclosure, one-Gaussian release, target refinement, DP source-only baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpadapt.privacy.guarantee import REPRODUCIBLE_NOISE_REASON
from dpadapt import classstats
from dpadapt.api import ConfigError, families
from dpadapt.classstats import ClassStatsDA, DPLogisticRegression, DPNearestClassMean
from dpadapt.classstats.adapt import project, refine_kmeans, refine_ot, row_map
from dpadapt.privacy import accounting
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import ReleaseError, assert_no_raw_rows

CL = (0, 1, 2)


def shifted_domains(rng, n=150, d=30, q=3, shift=1.5):
    """Gaussian classes; the target's class means rotate part-way into new directions (covariate shift)."""
    centers = rng.normal(0, 1.0, size=(q, d)) * 2.0
    drift = rng.normal(0, 1.0, size=(q, d)) * shift
    ys, yt = np.arange(n) % q, rng.integers(0, q, size=n)
    Xs = centers[ys] + rng.normal(0, 1.0, size=(n, d))
    Xt = centers[yt] + drift[yt] + rng.normal(0, 1.0, size=(n, d))
    return Xs, ys, Xt, yt


def test_registered_families():
    assert {"classstats", "dpot"} <= set(families())


def test_plan_calibrates_one_analytic_gaussian_and_refuses_large_delta():
    cfg = classstats.Config(epsilon=2.0, classes=CL, k=5)
    plan = classstats.plan(cfg, {"n_source": 100, "n_features": 30, "k": 5})
    g = plan.guarantee
    assert g.valid and g.unit == "record" and g.delta == pytest.approx(1e-3)
    assert plan.calibration["sigma"] == pytest.approx(accounting.analytic_gaussian_sigma(2.0, 1e-3, 2.0))
    assert g.sensitivity == 2.0
    with pytest.raises(ConfigError, match="explicit delta"):  # issue 27: 1/(10 n) would publish the private n
        classstats.plan(cfg.replace(relation="add_remove"), {"n_source": 100, "n_features": 30, "k": 5})
    add = classstats.plan(cfg.replace(relation="add_remove", delta=1e-3), {"n_source": 100, "n_features": 30, "k": 5})
    assert add.calibration["sigma"] == pytest.approx(plan.calibration["sigma"] / math.sqrt(2.0), rel=1e-6)
    with pytest.raises(ConfigError, match="classes="):
        classstats.plan(classstats.Config(epsilon=2.0), {"n_source": 100, "n_features": 30})
    with pytest.raises(ConfigError, match="1/n"):
        classstats.plan(cfg.replace(delta=0.01), {"n_source": 100, "n_features": 30, "k": 5})


def test_basis_is_an_honest_disclosure_and_release_has_no_raw_rows(rng):
    Xs, ys, Xt, _ = shifted_domains(rng)
    cfg = classstats.Config(epsilon=2.0, classes=CL, k=5, random_state=0)
    basis = classstats.basis(Xt, cfg)
    g = basis.guarantee
    assert g.party == "target" and math.isinf(g.epsilon) and not g.valid and "not protected" in g.reasons[0]
    assert basis["components"].shape == (30, 5)
    assert_no_raw_rows(basis, Xt)
    assert_no_raw_rows(basis, row_map(Xt, False))
    _, noise = random_streams(0)
    plan = classstats.plan(cfg, {"n_source": len(ys), "n_features": 30, "k": 5})
    rel = classstats.release(plan, Xs, ys, noise, basis_release=basis)
    assert rel["sums"].shape == (3, 5) and rel["counts"].shape == (3,)
    assert_no_raw_rows(rel, Xs)
    with pytest.raises(ValueError, match="public label set"):
        classstats.release(plan, Xs, np.where(ys == 2, 7, ys), noise, basis_release=basis)
    with pytest.raises(ReleaseError, match="basis"):
        classstats.release(plan, Xs, ys, noise)
    other = classstats.basis(Xt[::2], cfg)
    with pytest.raises(ReleaseError, match="another basis"):
        classstats.adapt(rel, Xt, cfg, basis_release=other)


def test_noise_is_secret_but_public_randomness_and_reproducible_noise_replay(rng):
    Xs, ys, Xt, _ = shifted_domains(rng)
    cfg = classstats.Config(epsilon=2.0, classes=CL, k=5, random_state=3)
    a, b = (classstats.run_parties(cfg, Xs, ys, Xt)[1] for _ in range(2))
    assert not np.allclose(a["sums"], b["sums"])
    r = cfg.replace(reproducible_noise=True)
    c, d = (classstats.run_parties(r, Xs, ys, Xt)[1] for _ in range(2))
    np.testing.assert_array_equal(c["sums"], d["sums"])


@pytest.mark.parametrize("refinement", ["kmeans", "self_training", "ot", "none"])
def test_class_statistics_adapt_beats_dp_source_only(rng, refinement):
    Xs, ys, Xt, yt = shifted_domains(rng, n=300)
    kw = dict(epsilon=2.0, classes=CL, random_state=0, reproducible_noise=True)
    da = ClassStatsDA(k=10, refinement=refinement, **kw).fit_domains(Xs, ys, Xt)
    assert da.guarantee_.reasons == (REPRODUCIBLE_NOISE_REASON,) and da.guarantee_.epsilon == pytest.approx(2.0)
    assert da.score(Xt, yt) > 0.85
    if refinement != "none":
        ncm = DPNearestClassMean(**kw).fit_domains(Xs, ys)
        assert da.score(Xt, yt) >= ncm.score(Xt, yt)


def test_receiver_warns_when_the_release_is_mostly_noise(rng, recwarn):
    Xs, ys, Xt, _ = shifted_domains(rng, n=150)
    kw = dict(classes=CL, k=10, random_state=0, reproducible_noise=True)
    with pytest.warns(classstats.NoiseDominatedWarning, match="near chance"):
        ClassStatsDA(epsilon=1e-3, **kw).fit_domains(Xs, ys, Xt)
    ClassStatsDA(epsilon=8.0, **kw).fit_domains(Xs, ys, Xt)
    assert not [w for w in recwarn if issubclass(w.category, classstats.NoiseDominatedWarning)]
    share = classstats.noise_share(np.array([[3.0, 4.0], [0.0, 0.0]]), sigma=1.0)
    assert share == pytest.approx([2 / 25, 1.0])


def test_non_private_counterpart_has_no_guarantee(rng):
    Xs, ys, Xt, yt = shifted_domains(rng)
    est = ClassStatsDA(epsilon=None, k=5).fit_domains(Xs, ys, Xt)
    assert est.guarantee_ is None and est.score(Xt, yt) > 0.8


def test_refinements_on_separated_clusters(rng):
    centers = np.eye(4)[:3] * 5
    y = np.repeat(np.arange(3), 40)
    Z = project(centers[y] + rng.normal(0, 0.5, size=(120, 4)), None, None)
    start = project(centers + rng.normal(0, 1.5, size=(3, 4)), None, None)
    out = refine_kmeans(Z, start)
    assert np.mean(np.argmax(Z @ out.T, axis=1) == y) > 0.95
    soft = refine_ot(Z, start, np.array([0.2, 0.3, 0.5]))
    np.testing.assert_allclose(soft.sum(axis=1), 1.0)


def test_dp_logistic_regression_calibration_and_accuracy(rng):
    Xs, ys, _, _ = shifted_domains(rng, n=300, shift=0.0)
    est = DPLogisticRegression(epsilon=4.0, classes=CL, steps=10, random_state=0).fit_domains(Xs, ys)
    g = est.guarantee_
    z = g.details["noise_multiplier"]
    assert z == pytest.approx(math.sqrt(10) * accounting.analytic_gaussian_sigma(4.0, g.delta, 1.0))
    # T Gaussians of multiplier z = one Gaussian of multiplier z/√T: the analytic ε is exactly 4
    assert accounting.analytic_gaussian_epsilon(z / math.sqrt(10), g.delta, 1.0) == pytest.approx(4.0, rel=1e-4)
    assert g.sensitivity == 2.0 * est.config_.clip and est.score(Xs, ys) > 0.8  # replace-one: Δ = 2C
    with pytest.raises(ConfigError, match="classes="):
        DPLogisticRegression(epsilon=4.0).fit_domains(Xs, ys)
    nonpriv = DPLogisticRegression(epsilon=None, steps=10).fit(Xs, ys)
    assert nonpriv.guarantee_ is None


@pytest.mark.parametrize("refinement", ["cluster_match", "ot+st", "kmeans+st", "none+st"])
def test_full_feature_and_cluster_refinements_recover_separated_classes(rng, refinement):
    from dpadapt.classstats.adapt import refine

    # 3 classes in 12-d full features; the working space is their first 4 coordinates (a "basis")
    centers = np.zeros((3, 12))
    centers[np.arange(3), np.arange(3)] = 5.0
    y = np.repeat(np.arange(3), 40)
    F = row_map(centers[y] + rng.normal(0, 0.7, size=(120, 12)), log1p=False)
    Z = project(F[:, :4], None, None)
    start = project(centers[:, :4] + rng.normal(0, 1.0, size=(3, 4)), None, None)
    r = refine(Z, start, np.full(3, 1 / 3), refinement, F=F, random_state=0)
    if refinement.endswith("+st"):
        W, b = r.scorer  # a linear scorer on the FULL features, one row per public class
        assert W.shape == (3, 12) and b.shape == (3,)
        pred = np.argmax(F @ W.T + b, axis=1)
    else:
        assert r.scorer is None and r.centers.shape == (3, 4)
        pred = np.argmax(Z @ r.centers.T, axis=1)
    assert np.mean(pred == y) > 0.95
    with pytest.raises(ValueError, match="refinement must be one of"):
        refine(Z, start, None, "magic")


def test_a_class_the_head_never_saw_scores_finite_and_is_never_predicted(rng):
    """A self-trained head may lose a class: its score is finite (the attack suite requires finite outputs; a
    −∞ once failed it on a hostile target row) and it is never predicted."""
    from scipy.special import softmax
    from sklearn.linear_model import LogisticRegression

    from dpadapt.classstats.adapt import linear_scores

    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] > 0, 2, 0)  # class 1 absent
    W, b = linear_scores(LogisticRegression().fit(X, y), 3, 3)
    S = X @ W.T + b
    assert np.all(np.isfinite(S)) and not np.any(np.argmax(S, axis=1) == 1)
    P = softmax(S, axis=1)
    assert np.all(np.isfinite(P)) and np.all(P[:, 1] == 0.0)
