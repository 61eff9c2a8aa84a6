"""PRIMA / PRISA, CORAL and SA: sensitivity, audited release, PSD repair, DP-SGD accounting, releases."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from dpadapt.privacy.guarantee import PAPER_ADD_REMOVE_REASON, REPRODUCIBLE_NOISE_REASON
from dpadapt.alignment import CORAL, PRIMA, PRISA, SubspaceAlignment, predict_prima
from dpadapt.alignment import covariance as cov
from dpadapt.alignment import prima
from dpadapt.alignment.dp_training import dpsgd_schedule, train_heads
from dpadapt.api import ConfigError
from dpadapt.privacy import accounting
from dpadapt.privacy.audit import epsilon_lower_bound
from dpadapt.privacy.mechanisms import NoiseSource, random_streams
from dpadapt.release import Release, ReleaseError, assert_no_raw_rows

CLASSES = (0, 1, 2)


def _heads_plan(n_s, n_t, d, **kw):
    config = prima.PrimaConfig(source_release="dpsgd_heads", **{"epsilon": 2.0, "delta": 1e-5, "classes": CLASSES, **kw})
    return prima.plan(config, {"n_source": n_s, "n_target": n_t, "n_features": d})


def _unit_rows(rng, n, d):
    X = np.abs(rng.normal(size=(n, d)))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _toy(rng, n=120, d=12, classes=3, shift=0.3):
    centers = rng.normal(size=(classes, d)) * 2
    ys = rng.integers(classes, size=n)
    Xs = centers[ys] + rng.normal(size=(n, d))
    yt = rng.integers(classes, size=n)
    Xt = centers[yt] + rng.normal(size=(n, d)) + shift
    return Xs, ys, Xt, yt


# --- sensitivity ---------------------------------------------------------------------------


def test_joint_block_sensitivity_brute_force(rng):
    n, d = 20, 9
    bound = cov.joint_block_sensitivity(n)
    assert bound == pytest.approx(math.sqrt(2) / n)
    worst = 0.0
    for _ in range(300):
        X = _unit_rows(rng, n, d) * rng.uniform(0.2, 1.0, size=(n, 1))
        Y = X.copy()
        Y[rng.integers(n)] = rng.normal(size=d) * rng.uniform(0.1, 3.0)
        Y = cov.clip_rows_any(Y)
        parts = cov.random_partition(d, int(rng.integers(1, d + 1)), rng)
        diff = cov.pack_upper(cov.block_second_moments(X, parts)) - cov.pack_upper(cov.block_second_moments(Y, parts))
        worst = max(worst, np.linalg.norm(diff))
        assert np.linalg.norm(diff) <= bound * (1 + 1e-12)
    # the bound is attained by two orthogonal unit rows in one block
    X = np.zeros((n, d))
    X[0, 0] = 1.0
    Y = X.copy()
    Y[0] = 0.0
    Y[0, 1] = 1.0
    diff = cov.pack_upper(cov.block_second_moments(X, [np.arange(d)])) - cov.pack_upper(cov.block_second_moments(Y, [np.arange(d)]))
    assert np.linalg.norm(diff) == pytest.approx(bound)
    assert worst > 0.3 * bound


def test_pack_unpack_roundtrip_and_partition(rng):
    mats = [rng.normal(size=(p, p)) for p in (3, 1, 4)]
    blocks = [A + A.T for A in mats]
    back = cov.unpack_upper(cov.pack_upper(blocks), [3, 1, 4])
    for a, b in zip(blocks, back):
        np.testing.assert_allclose(a, b)
    parts = cov.random_partition(10, 3, rng)
    assert sorted(np.concatenate(parts).tolist()) == list(range(10))
    assert max(len(p) for p in parts) - min(len(p) for p in parts) <= 1


# --- audited covariance release ----------------------------------------------------------------


def test_covariance_release_noise_matches_guarantee(rng):
    n, d, eps, delta = 50, 4, 1.0, 1e-5
    X = _unit_rows(rng, n, d)
    parts = [np.array([0, 2]), np.array([1, 3])]
    exact = cov.pack_upper(cov.block_second_moments(X, parts))
    plan = _heads_plan(n, n, d, epsilon=eps, delta=delta, subspace_size=2)
    g, sigma = plan.calibration["target_guarantee"], plan.calibration["sigma_entry"]
    draws = []
    noise = NoiseSource()
    for _ in range(200):
        noisy = cov.release_block_second_moments(X, parts, sigma, noise, sensitivity=g.sensitivity)
        draws.append(cov.pack_upper(noisy) - exact)
        for C in noisy:
            np.testing.assert_allclose(C, C.T)
    assert g.valid and g.epsilon == eps and g.relation == "replace_one" and len(g.events) == 1
    assert sigma == pytest.approx(accounting.analytic_gaussian_sigma(eps, delta, math.sqrt(2) / n))
    z = np.concatenate(draws) / sigma
    assert stats.kstest(z, "norm").pvalue > 1e-3


def test_covariance_release_audit_and_underconfigured_control(rng):
    n, d, eps, delta = 30, 3, 1.0, 1e-5
    X = np.zeros((n, d))
    X[:, 2] = 1.0
    Xp = X.copy()
    X[0] = [1.0, 0.0, 0.0]
    Xp[0] = [0.0, 1.0, 0.0]
    parts = [np.array([0, 1]), np.array([2])]
    sigma = _heads_plan(n, n, d, epsilon=eps, delta=delta).calibration["sigma_entry"]
    a = cov.pack_upper(cov.block_second_moments(X, parts))
    b = cov.pack_upper(cov.block_second_moments(Xp, parts))
    u = (a - b) / np.linalg.norm(a - b)
    N = 200_000

    def stat(value, s):
        return (value[None, :] + rng.normal(0, s, size=(N, value.size))) @ u

    ok = epsilon_lower_bound(stat(a, sigma), stat(b, sigma), delta=delta)
    assert ok.passes(eps)
    bad = epsilon_lower_bound(stat(a, sigma / 4), stat(b, sigma / 4), delta=delta)
    assert not bad.passes(eps)


def test_release_requires_clipped_rows(rng):
    with pytest.raises(ValueError, match="clipped"):
        cov.release_block_second_moments(np.ones((10, 3)), [np.arange(3)], 1.0, NoiseSource())


# --- PSD repair ------------------------------------------------------------------------------


def test_eig_clip_psd_and_non_expansive(rng):
    for _ in range(200):
        p = int(rng.integers(2, 9))
        A = rng.normal(size=(p, p - 1))
        T = A @ A.T / p
        E = rng.normal(scale=rng.uniform(0.01, 2.0), size=(p, p))
        noisy = T + (E + E.T) / 2
        R = cov.eig_clip(noisy)
        assert np.linalg.eigvalsh(R)[0] >= -1e-10
        assert np.linalg.norm(R - T) <= np.linalg.norm(noisy - T) + 1e-10


def test_shrink_bisection_minimal_alpha(rng):
    hits = 0
    for _ in range(100):
        p = int(rng.integers(2, 7))
        E = rng.normal(size=(p, p))
        C = (E + E.T) / 2 + 0.2 * np.eye(p)
        lam = np.linalg.eigvalsh(C)[0]
        R, alpha = cov.shrink_to_psd(C, tol=1e-10)
        assert np.linalg.eigvalsh(R)[0] >= -1e-9
        if lam >= 0:
            assert alpha == 0.0 and np.allclose(R, C)
            continue
        hits += 1
        tau = R.trace() - (1 - alpha) * C.trace()
        tau /= alpha * p
        assert tau * math.sqrt(p) < np.linalg.norm(C)
        assert alpha == pytest.approx(-lam / (tau - lam), abs=1e-8)
        assert np.linalg.eigvalsh((alpha - 1e-6) * tau * np.eye(p) + (1 - alpha + 1e-6) * C)[0] < 0
    assert hits > 20


def test_shrink_with_general_target(rng):
    p = 5
    E = rng.normal(size=(p, p))
    C = (E + E.T) / 2
    A = rng.normal(size=(p, p))
    S = A @ A.T / 50 + 0.05 * np.eye(p)
    R, alpha = cov.shrink_to_psd(C, target=S, tol=1e-9)
    f = lambda a: np.linalg.eigvalsh(a * S + (1 - a) * C)[0]
    assert f(alpha) >= 0 and f(alpha - 1e-7) < 0
    np.testing.assert_allclose(R, alpha * S + (1 - alpha) * C)


# --- DP-SGD accounting -------------------------------------------------------------------------


def test_dpsgd_accounting_matches_dp_accounting_and_opacus(rng):
    Z = _unit_rows(rng, 90, 6)
    y = (Z[:, 0] > Z[:, 3]).astype(int)
    tr = train_heads(Z, y, [3, 3], 2, epochs=3, batch_size=10, noise_multiplier=1.3, lr=0.5)
    q, steps = dpsgd_schedule(90, 10, 3)
    assert (tr.sample_rate, tr.steps) == (q, steps) == (1 / 9, 27)
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(1.3)), steps))
    direct = acc.get_epsilon(1e-5)
    ours = accounting.epsilon(tr.event(), 1e-5, "add_remove")
    assert len(tr.events) == 1  # joint training: one event for both heads
    assert ours == pytest.approx(direct, rel=0.02)
    assert tr.opacus_epsilons[0] == pytest.approx(direct, rel=0.03)
    sep = train_heads(Z, y, [3, 3], 2, epochs=3, batch_size=10, noise_multiplier=1.3, joint=False)
    assert len(sep.events) == 2
    assert accounting.epsilon(sep.event(), 1e-5, "add_remove") > 1.2 * ours


def test_source_plan_composes_covariance_and_dpsgd():
    """Issue 27 item 3: the source's heads Guarantee is replace-one (n public; q and the steps come from n): its ε is
    dp-accounting's REPLACE_ONE PLD of its events — the second-moment sum (Δ = √2 under replacement, handed to that
    accountant at twice its multiplier, as a ±1 shift) and the Poisson-subsampled DP-SGD steps."""
    plan = _heads_plan(300, 300, 16, subspace_size=4, epochs=5)
    g = plan.guarantee
    assert g.valid and g.relation == "replace_one" and g.accounting == "pld"
    assert g.epsilon <= 2.0 and g.epsilon == pytest.approx(2.0, abs=0.01)
    cal = plan.calibration
    assert cal["cov_noise_multiplier"] == pytest.approx(accounting.analytic_gaussian_sigma(0.2 * 2.0, 1e-5, math.sqrt(2)))
    steps = accounting.poisson_gaussian_event(cal["noise_multiplier"], cal["sample_rate"], cal["steps"])
    acc = dp_accounting.pld.PLDAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(accounting.compose([accounting.gaussian_event(2 * cal["cov_noise_multiplier"] / math.sqrt(2)), steps]))
    assert g.epsilon == pytest.approx(acc.get_epsilon(1e-5), rel=1e-12)
    assert accounting.epsilon(steps, 1e-5, "replace_one") < 2.0
    assert accounting.epsilon(steps, 1e-5, "add_remove", "pld") < accounting.epsilon(steps, 1e-5, "replace_one")  # the price
    paper = _heads_plan(300, 300, 16, subspace_size=4, epochs=5, privacy_mode="paper")
    assert not paper.guarantee.valid and not paper.calibration["target_guarantee"].valid
    assert PAPER_ADD_REMOVE_REASON in paper.guarantee.reasons
    assert _heads_plan(300, 300, 16, epsilon=None).guarantee is None


# --- the class-statistics protocol (sound default) -------------------------------------------


def test_class_statistics_protocol_guarantees_and_learns(rng):
    Xs, ys, Xt, yt = _toy(rng, n=300, shift=0.5)
    est = PRIMA(epsilon=2.0, delta=1e-5, classes=CLASSES, basis_dim=8, random_state=0,
                reproducible_noise=True).fit_domains(Xs, ys, Xt)
    g_s, g_t = est.guarantees_["source"], est.guarantees_["target"]
    assert g_s.reasons == (REPRODUCIBLE_NOISE_REASON,) and g_s.epsilon == 2.0 and g_s.relation == "replace_one"
    assert g_s.sensitivity == 2.0
    assert g_t.epsilon == 0.0  # the target releases nothing
    assert est.model_release_.kind == "source_class_statistics"
    assert_no_raw_rows(est.model_release_, Xs)
    assert est.score(Xt, yt) > 0.8
    assert PRIMA(epsilon=None, basis_dim=8, random_state=0).fit_domains(Xs, ys, Xt).guarantees_ == {}


def test_class_statistics_sigma_is_the_planned_one(rng):
    """The released sums deviate from the exact ones by N(0, σ²) with σ from the plan (not re-planned)."""
    Xs, ys, _, _ = _toy(rng, n=200)
    config = prima.PrimaConfig(epsilon=1.0, delta=1e-5, classes=CLASSES, basis_dim=None, random_state=3)
    plan = prima.plan(config, {"n_source": 200, "n_target": 50, "n_features": Xs.shape[1]})
    Z = prima.embed(Xs, log_counts=False, basis=None)
    exact = np.zeros((3, Z.shape[1]))
    np.add.at(exact, ys, Z)
    dev = []
    for draw in range(60):  # reproducible noise: a fixed sample, so the test does not fail 1 run in 1000 by chance
        public, noise = random_streams(draw, reproducible_noise=True)
        rel = prima.release_source_statistics(plan, Xs, ys, public, noise)
        dev.append((rel["sums"] - exact).ravel())
    sigma = plan.calibration["sigma"]
    assert sigma == pytest.approx(accounting.analytic_gaussian_sigma(1.0, 1e-5, 2.0))
    assert stats.kstest(np.concatenate(dev) / sigma, "norm").pvalue > 1e-3


def test_hole1_partition_from_public_stream_noise_not_replayable(rng):
    """Hole 1: the partition is public randomness; the noise is NOT the next draws of the same seed."""
    Xs, ys, Xt, _ = _toy(rng, n=60)
    plan = _heads_plan(60, 60, Xt.shape[1], subspace_size=4)
    public, noise = random_streams(7)
    rel_a = prima.release_target(plan, Xt, public, noise)
    public, noise = random_streams(7)
    rel_b = prima.release_target(plan, Xt, public, noise)
    np.testing.assert_array_equal(rel_a["partition"], rel_b["partition"])  # same public randomness
    assert not np.allclose(rel_a["cov_0"], rel_b["cov_0"])  # but fresh noise
    # the old attack: brute-force the integer seed, replay partition then noise from ONE generator
    X = prima.preprocess(Xt, log_counts=False, row_norm=1.0, privacy_mode="sound")
    sigma = plan.calibration["sigma_entry"]
    parts = np.split(rel_a["partition"], np.cumsum(rel_a["block_sizes"])[:-1])
    exact = cov.pack_upper(cov.block_second_moments(X, parts))
    attacker = np.random.default_rng(7)
    assert [p.tolist() for p in cov.random_partition(Xt.shape[1], 4, attacker)] == [p.tolist() for p in parts]
    replayed = exact + attacker.normal(0.0, sigma, size=exact.shape)
    released = cov.pack_upper([np.asarray(rel_a[f"cov_{i}"]) for i in range(len(parts))])
    assert not np.allclose(cov.pack_upper(cov.unpack_upper(replayed, [len(p) for p in parts])), released, atol=sigma)


def test_hole2_label_set_is_public_and_required(rng):
    """Hole 2: classes and head widths come from classes=, required when private; others refused."""
    Xs, ys, Xt, _ = _toy(rng, n=60)
    with pytest.raises(ConfigError, match="classes"):
        PRIMA(epsilon=2.0, delta=1e-5, random_state=0).fit_domains(Xs, ys, Xt)
    with pytest.raises(ConfigError, match="classes"):
        PRIMA(epsilon=2.0, delta=1e-5, source_release="dpsgd_heads", subspace_size=4, epochs=1).fit_domains(Xs, ys, Xt)
    with pytest.raises(ValueError, match="public label set"):
        PRIMA(epsilon=2.0, delta=1e-5, classes=(0, 1)).fit_domains(Xs, ys, Xt)
    only_two = ys % 2  # the data hold 2 labels; the public set has 4: every shape says 4
    est = PRIMA(epsilon=2.0, delta=1e-5, classes=(0, 1, 2, 3), source_release="dpsgd_heads", subspace_size=4,
                epochs=1, random_state=0).fit_domains(Xs, only_two, Xt)
    assert est.classes_.tolist() == [0, 1, 2, 3] and est.decision_function(Xt).shape == (60, 4)
    assert est.model_release_["head0_p0"].shape[0] == 4
    stats_est = PRIMA(epsilon=2.0, delta=1e-5, classes=(0, 1, 2, 3), basis_dim=4, random_state=0).fit_domains(Xs, only_two, Xt)
    assert stats_est.model_release_["sums"].shape[0] == 4 and stats_est.classes_.tolist() == [0, 1, 2, 3]


def test_plan_once_and_release_errors(rng):
    Xs, ys, Xt, _ = _toy(rng, n=60)
    est = PRIMA(epsilon=2.0, delta=1e-5, classes=CLASSES, basis_dim=4, random_state=0).fit_domains(Xs, ys, Xt)
    with pytest.raises(ReleaseError):
        prima.adapt_class_statistics(est.model_release_.__class__(
            "dpot", "source_projection", "source", {}, est.model_release_.guarantee), Xt, est.make_config())
    with pytest.raises(ReleaseError):
        predict_prima(est.model_release_, Xt)
    with pytest.raises(ConfigError):
        PRIMA(epsilon=2.0, privacy_mode="paper", source_release="class_statistics", classes=CLASSES).fit_domains(Xs, ys, Xt)
    from sklearn.base import clone

    assert clone(PRISA(epsilon=1.0)).get_params()["alignment"] == "sa"


# --- end-to-end ------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [PRIMA, PRISA])
def test_estimator_vote_shapes_and_guarantees(rng, cls):
    Xs, ys, Xt, _ = _toy(rng)
    est = cls(epsilon=2.0, delta=1e-5, classes=CLASSES, source_release="dpsgd_heads", subspace_size=4, epochs=3,
              sa_dim=2, random_state=0).fit_domains(Xs, ys, Xt)
    pred = est.predict(Xt)
    assert pred.shape == (Xt.shape[0],) and set(pred) <= set(ys)
    scores = est.decision_function(Xt)
    assert scores.shape == (Xt.shape[0], 3)
    assert np.all(scores.sum(axis=1) >= 3) and np.all(scores.sum(axis=1) <= 4 + 1e-9)  # 3 heads vote
    assert est.guarantees_["target"].valid and est.guarantees_["source"].valid
    assert est.guarantees_["source"].epsilon <= 2.0 + 1e-3
    assert "target" in est.privacy_report()


def test_heads_learn_separable_problem_with_weak_privacy(rng):
    Xs, ys, Xt, yt = _toy(rng, n=300, shift=0.0)
    est = PRIMA(epsilon=50.0, delta=1e-5, classes=CLASSES, source_release="dpsgd_heads", subspace_size=6, epochs=4,
                random_state=1, reproducible_noise=True).fit_domains(Xs, ys, Xt)
    assert est.score(Xt, yt) > 0.8


def test_no_raw_rows_or_raw_covariance_in_releases(rng, tmp_path):
    Xs, ys, Xt, _ = _toy(rng)
    plan = _heads_plan(len(Xs), len(Xt), Xt.shape[1], epsilon=1.0, subspace_size=5, epochs=2)
    public, noise = random_streams(None)
    rel = prima.release_target(plan, Xt, public, noise)
    assert_no_raw_rows(rel, Xt)
    parts = np.split(rel["partition"], np.cumsum(rel["block_sizes"])[:-1])
    exact = cov.block_second_moments(cov.clip_rows_any(Xt), parts)
    sigma = rel.params["sigma_entry"]
    for i, C in enumerate(exact):
        assert np.linalg.norm(rel[f"cov_{i}"] - C) > 0.1 * sigma * C.shape[0]
    model = prima.release(plan, {"Xs": Xs, "ys": ys, "target_release": rel}, public, noise)
    assert_no_raw_rows(model, Xs)
    assert model.guarantee.party == "source" and model.owner == "source"
    path = model.save(tmp_path / "model.npz")
    loaded = Release.load(path, expect_method="prima", expect_kind="source_models")
    np.testing.assert_array_equal(predict_prima(loaded, Xt), predict_prima(model, Xt))
    rel.save(tmp_path / "t.npz")
    assert Release.load(tmp_path / "t.npz").guarantee == rel.guarantee


def test_paper_mode_and_forward_selection_are_flagged(rng):
    Xs, ys, Xt, _ = _toy(rng, n=60)
    est = PRIMA(epsilon=2.0, delta=1e-5, classes=CLASSES, partition="forward", privacy_mode="paper", psd_repair="shrink",
                epochs=2, random_state=0).fit_domains(Xs, ys, Xt)
    g_t = est.target_release_.guarantee
    assert not g_t.valid and g_t.mode == "paper" and any("forward selection" in r for r in g_t.reasons)
    assert not _heads_plan(60, 60, 12, partition="forward").calibration["target_guarantee"].valid
    assert not est.model_release_.guarantee.valid
    assert est.predict(Xt).shape == (60,)


def test_sparse_counts_and_ablation_variants(rng):
    Xs = sp.random(80, 10, density=0.3, random_state=1, format="csr") * 5
    Xt = sp.random(80, 10, density=0.3, random_state=2, format="csr") * 5
    ys = np.arange(80) % 2
    for part, repair in (("full", "none"), ("random", "none"), ("full", "shrink"), ("random", "eig_clip")):
        est = PRIMA(epsilon=None, source_release="dpsgd_heads", subspace_size=4, partition=part, psd_repair=repair, log_counts=True,
                    epochs=2, random_state=0)
        assert est.fit_domains(Xs, ys, Xt).predict(Xt).shape == (80,)
    est = PRIMA(epsilon=2.0, delta=1e-5, classes=(0, 1), log_counts=True, basis_dim=4, random_state=0)
    assert est.fit_domains(Xs, ys, Xt).predict(Xt).shape == (80,)


def test_baselines_coral_and_sa(rng):
    Xs, ys, Xt, yt = _toy(rng, n=200, shift=1.0)
    assert CORAL().fit_domains(Xs, ys, Xt).score(Xt, yt) > 0.6
    assert SubspaceAlignment(k=5).fit_domains(Xs, ys, Xt).score(Xt, yt) > 0.6
    assert CORAL().fit_domains(Xs, ys, Xt).guarantees_ == {}


def test_bad_inputs(rng):
    Xs, ys, Xt, _ = _toy(rng, n=40)
    for bad in ({"epsilon": 0.0}, {"partition": "greedy"}, {"psd_repair": "magic"}, {"privacy_mode": "loose"},
                {"epsilon": math.inf}, {"refinement": "magic"}):
        with pytest.raises(ConfigError):
            prima.PrimaConfig(**{"epsilon": 1.0, **bad})
    with pytest.raises(ValueError):
        PRIMA(epsilon=1.0, delta=1e-5, classes=CLASSES).fit_domains(Xs, ys, np.full_like(Xt, np.nan))
    plan = _heads_plan(40, 40, Xt.shape[1], subspace_size=4)
    public, noise = random_streams(None)
    rel = prima.release_target(plan, Xt, public, noise)
    with pytest.raises(ValueError, match="features"):
        prima.release_source_heads(plan, rel, Xs[:, :5], ys, public, noise)
    with pytest.raises(ReleaseError, match="mode"):
        paper = _heads_plan(40, 40, Xt.shape[1], subspace_size=4, privacy_mode="paper")
        prima.release_source_heads(paper, rel, Xs, ys, public, noise)
    with pytest.raises(ReleaseError):
        predict_prima(rel, Xt)
    with pytest.raises(ValueError):
        cov.check_partition([np.array([0, 1]), np.array([1, 2])], 3)
    with pytest.raises(ValueError):
        cov.shrink_to_psd(-np.eye(2), target=-np.eye(2))


def test_decaf_w_to_d_runs_end_to_end(data_root):
    from dpadapt.datasets import load_pair

    pair = load_pair("decaf6", "W", "D", root=data_root)
    classes = tuple(range(10))
    est = PRIMA(epsilon=2.0, delta=1e-5, classes=classes, random_state=0, reproducible_noise=True)
    est.fit_domains(pair.Xs, pair.ys, pair.Xt)
    assert est.score(pair.Xt, pair.yt) > 0.5  # the class-statistics protocol adapts (5-seed numbers in the bench)
    cols = slice(0, 512)  # a column slice keeps the heads variant fast
    heads = PRIMA(epsilon=2.0, delta=1e-5, classes=classes, source_release="dpsgd_heads", subspace_size=128, epochs=2,
                  random_state=0).fit_domains(pair.Xs[:, cols], pair.ys, pair.Xt[:, cols])
    assert heads.guarantees_["source"].valid and heads.target_release_.params["n_blocks"] == 4


def test_cli_method_plans_match_releases(rng, tmp_path):
    import argparse

    from dpadapt.cli.methods import methods
    from dpadapt.io import load_table, save_table

    commands = methods()["prima"]
    Xs, ys, Xt, yt = _toy(rng, n=80)
    save_table(tmp_path / "t.npz", Xt, yt)
    save_table(tmp_path / "s.npz", Xs, ys)
    target, source = load_table(tmp_path / "t.npz"), load_table(tmp_path / "s.npz")
    p = argparse.ArgumentParser()
    commands.add_release_arguments(p)
    # class statistics: the source releases, the target adapts
    args = p.parse_args(["--classes", "0,1,2", "--basis-dim", "8"])
    args.epsilon, args.delta, args.seed = 2.0, 1e-5, 1
    planned = commands.plan_release(args, source)
    rel = planned.execute()
    assert rel.guarantee.to_dict() == planned.guarantee.to_dict()
    q = argparse.ArgumentParser()
    commands.add_adapt_arguments(q)
    b = q.parse_args(["--epochs", "2", "--classes", "0,1,2"])
    b.epsilon, b.delta, b.seed = None, None, 2
    final = commands.adapt(b, target, [rel])
    assert final.metrics["accuracy"] > 0.6 and final.return_release is None
    # the heads protocol: target → source → target
    args = p.parse_args(["--subspace-size", "4", "--source-release", "dpsgd_heads"])
    args.epsilon, args.delta, args.seed = 2.0, 1e-5, 1
    planned = commands.plan_release(args, target)
    rel = planned.execute()
    assert rel.guarantee.to_dict() == planned.guarantee.to_dict()  # the driver refuses anything else
    with pytest.raises(ValueError, match="--epsilon"):
        commands.adapt(b, source, [rel])
    b.epsilon, b.delta = 2.0, 1e-5
    outcome = commands.adapt(b, source, [rel])
    back = outcome.return_release.execute()
    assert back.guarantee.to_dict() == outcome.return_release.guarantee.to_dict()
    final = commands.adapt(b, target, [back])
    assert 0.0 <= final.metrics["accuracy"] <= 1.0 and final.return_release is None


# --- paper mode (issue 22) -----------------------------------------------------------------------


def test_paper_mode_heads_learn_without_noise(rng):
    """The paper-mode heads pipeline, noise off, separates well-separated classes in 800 dimensions.

    Fails on the old code, which divided every head input by sqrt(d) (not in the paper): the
    heads then barely moved from zero and the vote was at chance (issue 22).
    """
    d, classes = 800, 3
    centers = rng.uniform(size=(classes, d))
    ys, yt = rng.choice(classes, size=150, p=[0.6, 0.2, 0.2]), rng.integers(classes, size=150)
    Xs = centers[ys] + 0.3 * rng.uniform(size=(150, d))
    Xt = centers[yt] + 0.3 * rng.uniform(size=(150, d))
    est = PRIMA(epsilon=None, classes=CLASSES, source_release="dpsgd_heads", privacy_mode="paper", partition="random",
                subspace_size=200, psd_repair="shrink", epochs=5, random_state=0)
    assert est.fit_domains(Xs, ys, Xt).score(Xt, yt) > 0.9


def test_paper_mode_median_clip_is_each_runs_own(rng):
    """Separate DP-SGD runs (paper mode) clip at their own median gradient norm, not at that of all heads joined."""
    from dpadapt.alignment.dp_training import median_gradient_norm

    Z = np.abs(rng.normal(size=(80, 6)))
    Z[:, :3] *= 10.0  # head 0 sees ten times larger inputs
    y = rng.integers(2, size=80)
    tr = train_heads(Z, y, [3, 3], 2, epochs=1, batch_size=10, noise_multiplier=1.0, joint=False, clip_rule="median",
                     seed=3)
    own = [median_gradient_norm(Z[:, :3], y, [3], 2, "logreg", (), 3000),
           median_gradient_norm(Z[:, 3:], y, [3], 2, "logreg", (), 3001)]
    assert tr.clip_norms == pytest.approx(own)
    assert tr.clip_norms[0] > 5 * tr.clip_norms[1]
    joined = median_gradient_norm(Z, y, [3, 3], 2, "logreg", (), 3000)
    assert tr.clip_norms[1] < 0.5 * joined
    with pytest.raises(ValueError, match="clip_rule"):
        train_heads(Z, y, [3, 3], 2, epochs=1, batch_size=10, clip_rule="mean")


def test_clip_rows_any_clips_rows_whose_norm_overflows():
    """A finite row whose ℓ2 norm overflows float64 is clipped onto the sphere (dense and CSR), never zeroed or NaN:
    the receiver's own hostile row once turned PRIMA's class-statistics model into NaN (the attack suite, CI)."""
    big = np.finfo(np.float64).max / 2
    X = np.array([[big] * 6, [3.0, 4.0, 0, 0, 0, 0], [0.1] * 6])
    for Y in (cov.clip_rows_any(X), cov.clip_rows_any(sp.csr_matrix(X)).toarray()):
        norms = np.linalg.norm(Y, axis=1)
        assert np.all(np.isfinite(Y)) and norms[0] == pytest.approx(1.0) and norms[1] == pytest.approx(1.0)
        np.testing.assert_allclose(Y[0], np.full(6, 1 / np.sqrt(6)))
        np.testing.assert_array_equal(Y[2], X[2])  # inside the ball: unchanged


def test_paper_readings_of_the_dp_sgd_budget():
    """Issue 31: Thm. 3's σ and the per-class split are paper-mode readings with their own noise and reasons."""
    from dpadapt.privacy.families.prima import PER_CLASS_REASON, THEOREM3_REASON

    base = _heads_plan(157, 295, 12, privacy_mode="paper", epochs=3)
    thm3 = _heads_plan(157, 295, 12, privacy_mode="paper", epochs=3, paper_calibration="theorem3")
    split = _heads_plan(157, 295, 12, privacy_mode="paper", epochs=3, per_class_budget=True)
    assert thm3.calibration["noise_multiplier"] == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 2.0)  # 2.42
    assert THEOREM3_REASON in thm3.guarantee.reasons and not thm3.guarantee.valid
    # each of the 3 one-vs-rest models gets ε/3: more noise than one model at ε, and the split is a reason
    assert split.calibration["noise_multiplier"] > 1.5 * base.calibration["noise_multiplier"]
    assert split.guarantee.details["epsilon_per_model"] == pytest.approx(2.0 / 3)
    assert PER_CLASS_REASON in split.guarantee.reasons
    with pytest.raises(ConfigError, match="paper mode only"):
        _heads_plan(157, 295, 12, paper_calibration="theorem3")
    with pytest.raises(ConfigError, match="logreg"):
        _heads_plan(157, 295, 12, privacy_mode="paper", per_class_budget=True, head="mlp")


def test_one_vs_rest_heads_score_like_their_binary_models(rng):
    """The stacked one-vs-rest head gives class c the logit difference of class c's binary model."""
    from dpadapt.alignment.dp_training import head_scores, train_one_vs_rest_heads

    Xs, ys, _, _ = _toy(rng, n=90, d=6)
    trained = train_one_vs_rest_heads(Xs, ys, [4, 2], 3, epochs=3, batch_size=10, noise_multiplier=None, seed=5)
    for i, cols in enumerate((slice(0, 4), slice(4, 6))):
        W, b = trained.params[i]
        assert W.shape == (3, cols.stop - cols.start) and b.shape == (3,)
        for c in range(3):
            binary = train_heads(Xs, (ys == c).astype(int), [4, 2], 2, epochs=3, batch_size=10, noise_multiplier=None,
                                 seed=5).params[i]
            logits = head_scores(binary, Xs[:, cols])
            assert head_scores([W, b], Xs[:, cols])[:, c] == pytest.approx(logits[:, 1] - logits[:, 0])
    # noisy: one DP-SGD run per class (joint over the subspaces here), each recorded
    noisy = train_one_vs_rest_heads(Xs, ys, [4, 2], 3, epochs=1, batch_size=10, noise_multiplier=1.0, seed=5)
    assert len(noisy.events) == 3 and len(noisy.clip_norms) == 3 * 2  # one joint run per class; a bound per head
    est = PRIMA(epsilon=2.0, delta=1e-5, classes=CLASSES, privacy_mode="paper", partition="random", subspace_size=3,
                psd_repair="shrink", epochs=1, per_class_budget=True, random_state=0).fit_domains(Xs, ys, Xs)
    assert est.predict(Xs).shape == (90,) and est.model_release_.params["dpsgd_runs"] == 3 * 2
