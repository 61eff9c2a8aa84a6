"""DP-SWD DA from ONE release of the target's sliced marginals (``design="marginals"``, issue 13)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from dpadapt.datasets.synthetic import make_shifted_blobs
from dpadapt.deep import swd_da
from dpadapt.deep import swd_marginals as sm
from dpadapt.privacy import accounting
from dpadapt.privacy.mechanisms import random_streams, sliced_histogram
from dpadapt.release import ReleaseError, assert_no_raw_rows

EPS, DELTA = 10.0, 1e-5


def _shift(seed: int = 0):
    """3 Gaussian blobs in 8-d; the target is translated by 8 (and slightly rotated): source-only fails."""
    Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(seed), 400, 400, n_features=8, n_classes=3,
                                        shift=8.0, centre_scale=1.5)
    mean, std = Xs.mean(0), Xs.std(0) + 1e-6  # the source's public standardisation
    return [np.asarray((a - mean) / std, dtype=np.float32) for a in (Xs, Xt)] + [ys, yt]


def _source_model(Xs, ys, Xt, seed: int = 0):
    torch.manual_seed(seed)
    g, h = swd_da.mlp_feature_extractor(Xs.shape[1], (32,), 16), swd_da.mlp_classifier(16, 3, 16)
    cfg = swd_da.SWDDAConfig(mode="source-only", steps=300, batch_size=64, lr=5e-3)
    res = swd_da.train_swd_da(Xs, ys, Xt, g, h, cfg, np.random.default_rng(seed))
    return res.g, res.h


def _accuracy(g, h, X, y) -> float:
    return float(np.mean(swd_da.predict_logits(g, h, X).argmax(1) == y))


def _run(seed: int, Xs, ys, Xt, g, h, k: int = 50, bins: int = 32, epsilon=EPS):
    rng, noise = random_streams(seed, reproducible_noise=True)
    slices = sm.public_slices(g, Xs, k=k, bins=bins, width=4.0, rng=rng)
    plan = sm.plan_marginals(epsilon, DELTA, n=Xt.shape[0], k=k, bins=bins)
    release = sm.release_marginals(plan, slices, Xt, noise)
    return slices, plan, release, rng


@pytest.fixture(scope="module")
def setup():
    Xs, Xt, ys, yt = _shift()
    g, h = _source_model(Xs, ys, Xt)
    return Xs, ys, Xt, yt, g, h


def test_release_holds_only_the_noisy_histogram_and_public_facts(setup):
    Xs, ys, Xt, _, g, h = setup
    slices, plan, release, _ = _run(0, Xs, ys, Xt, g, h)
    assert set(release.arrays) == {"counts", "center", "directions", "edges"}
    assert release.owner == "target" and release.kind == "sliced_marginals"
    # the public facts are the source's map: recomputing it without the target gives the same arrays
    again = sm.public_slices(g, Xs, k=50, bins=32, width=4.0, rng=random_streams(0)[0])
    for name in ("center", "directions", "edges"):
        np.testing.assert_array_equal(release[name], getattr(again, name))
    assert release.params["map_digest"] == again.digest()
    # counts = exact histogram + Gaussian noise of the planned σ (not the exact counts, no rows)
    exact = sliced_histogram(slices.features(Xt) - slices.center, slices.directions, slices.edges)
    assert exact.sum(axis=1) == pytest.approx(np.full(50, Xt.shape[0]))
    resid = release["counts"] - exact
    assert np.std(resid) == pytest.approx(plan.sigma, rel=0.1)
    assert plan.sigma == pytest.approx(accounting.analytic_gaussian_sigma(EPS, DELTA, 1.0) * np.sqrt(2 * 50))
    assert_no_raw_rows(release, Xt)
    assert_no_raw_rows(release, slices.features(Xt))


def test_guarantee_is_one_release_at_the_stated_epsilon(setup):
    Xs, ys, Xt, _, g, h = setup
    _, plan, release, _ = _run(1, Xs, ys, Xt, g, h)
    gt = release.guarantee
    assert gt.valid and gt.party == "target" and gt.relation == "replace_one"
    assert gt.epsilon == pytest.approx(EPS) and gt.delta == DELTA
    assert len(gt.events) == 1 and gt.details["releases"] == 1
    assert gt.sensitivity == pytest.approx(np.sqrt(2 * 50))
    # the event, re-accounted, spends ε (and not more) at δ
    assert accounting.epsilon(gt.events[0], DELTA, "replace_one", "rdp") >= EPS * 0.999
    # the estimator charges the target once, whatever the number of adaptation steps
    rng = np.random.default_rng(0)
    X = rng.random((120, 6)).astype(np.float32)
    y = np.arange(120) % 3
    for steps in (5, 40):
        est = swd_da.DPSWDAdapter(design="marginals", epsilon=2.0, delta=1e-3, k=8, bins=8, epochs=1, min_steps=4,
                                  adapt_steps=steps, batch_size=32, random_state=0).fit_domains(X, y, X[::-1].copy())
        g_est = est.guarantees_["target"]
        assert est.train_result_.releases == 1 and len(g_est.events) == 1
        assert g_est.epsilon == pytest.approx(2.0) and g_est.details["releases"] == 1


def test_plan_release_adapt_beats_source_only_on_a_shift(setup):
    Xs, ys, Xt, yt, g, h = setup
    source_only = _accuracy(g, h, Xt, yt)
    slices, _, release, rng = _run(3, Xs, ys, Xt, g, h)
    adapted = sm.adapt_marginals(release, slices, Xs, ys, h, sm.AdaptConfig(steps=400, form="affine"), rng)
    acc = _accuracy(slices.g, adapted.h, Xt, yt)
    assert source_only < 0.7
    assert acc >= source_only + 0.15, (source_only, acc)
    assert adapted.losses[-1] < 0.5 * adapted.losses[0]  # the marginals were actually matched


def test_receiver_refuses_a_foreign_or_tampered_release(setup):
    Xs, ys, Xt, _, g, h = setup
    slices, _, release, rng = _run(4, Xs, ys, Xt, g, h)
    cfg = sm.AdaptConfig(steps=1)
    other_dirs = sm.public_slices(g, Xs, k=50, bins=32, width=4.0, rng=np.random.default_rng(99))
    g2, _ = _source_model(Xs, ys, Xt, seed=1)
    other_g = dataclasses.replace(slices, g=g2)
    for foreign in (other_dirs, other_g):
        with pytest.raises(ReleaseError):
            sm.adapt_marginals(release, foreign, Xs, ys, h, cfg, rng)
    tampered = dataclasses.replace(release, arrays={**release.arrays, "edges": release["edges"] * 2})
    with pytest.raises(ReleaseError):
        sm.adapt_marginals(tampered, slices, Xs, ys, h, cfg, rng)
    wrong_kind = dataclasses.replace(release, kind="target_projections")
    with pytest.raises(ReleaseError):
        sm.adapt_marginals(wrong_kind, slices, Xs, ys, h, cfg, rng)
    sm.adapt_marginals(release, slices, Xs, ys, h, cfg, rng)  # the genuine release is accepted


def test_marginals_design_has_no_paper_mode():
    X = np.random.default_rng(0).random((40, 4)).astype(np.float32)
    with pytest.raises(ValueError, match="sound design"):
        swd_da.DPSWDAdapter(design="marginals", privacy_mode="paper", epochs=1, min_steps=1).fit_domains(
            X, np.arange(40) % 2, X)


def test_auto_design_is_marginals_when_private_and_sound_only():
    from dpadapt.configs.deep import DPSWDConfig

    assert DPSWDConfig(epsilon=2.0).resolved_design() == "marginals"
    assert DPSWDConfig(epsilon=2.0, privacy_mode="paper").resolved_design() == "per-step"
    assert DPSWDConfig(epsilon=None).resolved_design() == "per-step"  # non-private SWD is the per-step baseline
    assert DPSWDConfig(epsilon=2.0, design="per-step").resolved_design() == "per-step"
    X = np.random.default_rng(0).random((60, 4)).astype(np.float32)
    est = swd_da.DPSWDAdapter(epsilon=2.0, delta=1e-3, k=8, bins=8, epochs=1, min_steps=2, adapt_steps=3,
                              batch_size=30, random_state=0).fit_domains(X, np.arange(60) % 2, X[::-1].copy())
    assert est.train_result_.releases == 1
