"""Tests of DP-SWD (spec 02): sensitivity bounds, calibration fixtures, distance, release, DA, audit."""

from __future__ import annotations

import dataclasses
import math

import dp_accounting
import numpy as np
import pytest
import torch
from dp_accounting import rdp

from dpadapt.privacy.guarantee import REPRODUCIBLE_NOISE_REASON
from dpadapt.datasets.synthetic import gaussian_mean_shift
from dpadapt.deep import swd_da
from dpadapt.deep.swd_marginals import marginal_quantiles
from dpadapt.privacy import accounting
from dpadapt.privacy.audit import epsilon_lower_bound
from dpadapt.privacy.mechanisms import NoiseSource
from dpadapt.release import Release, assert_no_raw_rows
from dpadapt.transport import swd

# --- Lemma 1 and the sensitivity bounds -------------------------------------------------------------


@pytest.mark.parametrize("d", [5, 40])
def test_beta_moments_monte_carlo(rng, d):
    n = 200_000
    U = swd.directions(d, n, rng)
    z = rng.standard_normal(d)
    z /= np.linalg.norm(z)
    h = (z @ U) ** 2
    mean, var = swd.beta_moments(d)
    assert abs(h.mean() - mean) < 5 * math.sqrt(var / n)
    assert abs(h.var() - var) / var < 0.03
    # a shorter z scales the variable by ‖z‖² (not ‖z‖, the paper's Remark 4 typo)
    assert abs(((0.5 * z) @ U) ** 2).mean() / mean - 0.25 < 0.01


def test_projection_bounded_by_operator_norm(rng):
    U = swd.directions(30, 50, rng)
    Z = rng.standard_normal((2000, 30)) * rng.uniform(0.1, 3, size=(2000, 1))
    op = swd.operator_norm(U)
    assert np.all(np.linalg.norm(Z @ U, axis=1) <= np.linalg.norm(Z, axis=1) * op * (1 + 1e-12))
    v = np.linalg.svd(U.T)[2][0]  # the bound is attained: it is the exact conditional sensitivity
    assert np.linalg.norm(v @ U) == pytest.approx(op, rel=1e-8)
    assert swd.projection_sensitivity("spectral", U=U).squared == pytest.approx(op**2)
    # for random unit columns ‖U‖op² ≈ (1 + sqrt(k/d))²
    assert op**2 == pytest.approx((1 + math.sqrt(50 / 30)) ** 2, rel=0.25)


@pytest.mark.parametrize("method", ["chernoff_beta", "bernstein"])
def test_beta_bounds_hold_empirically(rng, method):
    d, k, fail = 10, 8, 0.02
    w = swd.projection_sensitivity(method, k=k, d=d, failure=fail).squared
    z = np.zeros(d)
    z[0] = 1.0
    H = np.array([((z @ swd.directions(d, k, rng)) ** 2).sum() for _ in range(20_000)])
    assert (H >= w).mean() <= fail
    if method == "chernoff_beta":  # ... and the Chernoff bound is not vacuous (Bernstein is looser)
        assert (H >= 0.6 * w).mean() > fail
    else:
        assert w >= swd.projection_sensitivity("chernoff_beta", k=k, d=d, failure=fail).squared


def test_sensitivity_fixtures_of_spec():
    # spec 02, soundness 3 table (squared sensitivities, δ = 1e-5, T = 7900 for digits)
    table = {(320, 200): (9.07, 15.15, 0.90, 1.12), (784, 200): (8.52, 14.54, 0.37, 0.46)}
    T = 7900
    for (d, k), expected in table.items():
        got = [
            swd.projection_sensitivity("bernstein", k=k, d=d, failure=5e-6).squared,
            swd.projection_sensitivity("bernstein", k=k, d=d, failure=5e-6 / T).squared,
            swd.projection_sensitivity("clt", k=k, d=d, failure=5e-6).squared,
            swd.projection_sensitivity("chernoff_beta", k=k, d=d, failure=5e-6 / T).squared,
        ]
        np.testing.assert_allclose(got, expected, atol=0.01)
    office = swd.projection_sensitivity("bernstein", k=100, d=50, failure=5e-4).squared
    assert office == pytest.approx(8.14, abs=0.01)


def _classic_rdp_epsilon(event, delta):
    """ε = min_α RDP(α) + ln(1/δ)/(α−1): the conversion of autodp, used by the paper."""
    acc = rdp.RdpAccountant(orders=accounting.RDP_ORDERS, neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE)
    acc.compose(event)
    orders, values = np.array(acc._orders), np.array(acc._rdp)
    return float(np.min(values + np.log(1 / delta) / (orders - 1)))


@pytest.mark.parametrize(
    "sigma,n,expected_classic,expected_ours",
    [(4.74, 10000, 10.2, 9.41), (5.34, 7438, 10.3, 9.47)]  # spec: 10.2 / 10.3 (autodp),
)
def test_sigma_epsilon_fixtures(sigma, n, expected_classic, expected_ours):
    """Table 4 σ ↔ ε (code's Bernstein formula, d = 784, k = 200, B = 128, 100 epochs, δ = 1e-5)."""
    w = swd.projection_sensitivity("bernstein_code", k=200, d=784, failure=5e-6).squared
    event = swd.steps_event(sigma / math.sqrt(w), n, 128, (n // 128 + 1) * 100)
    assert _classic_rdp_epsilon(event, 5e-6) == pytest.approx(expected_classic, abs=0.1)
    # dp-accounting's tighter RDP→DP conversion gives a smaller ε for the same σ
    ours = swd.paper_epsilon(sigma, delta=1e-5, n=n, batch_size=128, epochs=100, k=200, d=784)
    assert ours == pytest.approx(expected_ours, abs=0.05)


def test_sound_plans_meet_budget():
    kw = {"n": 2000, "batch_size": 100, "steps": 300, "k": 50, "d": 20, "clip_norm": 1.0}
    for method, batch in (("spectral", 100), ("chernoff_beta", 2000)):  # B = n keeps the Chernoff case fast
        plan = swd.plan_releases(4.0, 1e-5, method=method, **{**kw, "batch_size": batch})
        assert plan.guarantee.valid and plan.guarantee.delta == 1e-5
        assert 3.9 <= plan.guarantee.epsilon <= 4.0 + 1e-6
        assert plan.guarantee.relation == "replace_one" and plan.guarantee.party == "target"
    spectral = swd.plan_releases(4.0, 1e-5, **kw)
    U = swd.directions(20, 50, 0)
    assert spectral.sigma(U) == pytest.approx(spectral.noise_multiplier * 2 * swd.operator_norm(U))
    beta = swd.plan_releases(4.0, 1e-5, method="chernoff_beta", **{**kw, "batch_size": 2000})
    assert beta.failure_per_step == pytest.approx(0.5e-5 / 300)
    # the accountant charges the releases actually planned: fewer releases cost less at the same noise
    z = spectral.noise_multiplier
    fewer = accounting.epsilon(swd.steps_event(z, 2000, 100, 30), 1e-5, "replace_one", "rdp")
    assert fewer < 0.6 * spectral.guarantee.epsilon


# --- the distance -------------------------------------------------------------------------------


def test_swd_zero_for_identical_and_increasing_with_shift():
    shifts = [0.0, 0.25, 0.5, 1.0, 2.0]
    plain, smoothed = [], []
    for c in shifts:
        Xs, Xt = gaussian_mean_shift(3000, c, random_state=1)
        plain.append(swd.swd(Xs, Xt, k=100, random_state=2))
        rng = np.random.default_rng(3)
        U = swd.directions(5, 100, rng)
        smoothed.append(swd.sliced_wasserstein(swd.project_rows(Xs, U, 3.0, rng), swd.project_rows(Xt, U, 3.0, rng)))
    assert plain[0] < 0.06 and smoothed[0] < 0.15
    assert np.all(np.diff(plain) > 0) and np.all(np.diff(smoothed) > 0)
    # the population SWD of N(0,I) vs N(c1,I) is c·sqrt(d)·E|u_1| ... at least clearly above noise
    assert plain[-1] > 10 * plain[0]


def test_sorted_matching_equals_pot():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((50, 7)), rng.standard_normal((50, 7)) + 1
    torch_value = swd_da.sliced_wasserstein_torch(torch.as_tensor(A), torch.as_tensor(B)).item()
    assert torch_value == pytest.approx(swd.sliced_wasserstein(A, B), rel=1e-10)


# --- releases -------------------------------------------------------------------------------------


def test_release_round_trip_and_no_raw_rows(tmp_path, rng):
    Xs, Xt = gaussian_mean_shift(300, 1.0, d=8, random_state=rng)
    rel = swd.release_projections(Xt, epsilon=2.0, delta=1e-5, k=8, clip_norm=3.0, random_state=rng)
    assert_no_raw_rows(rel, Xt)
    assert_no_raw_rows(rel, swd.project_rows(Xt, rel["directions"], 0.0, rng, 3.0))  # no exact projection either
    loaded = Release.load(rel.save(tmp_path / "p.npz"), expect_method="dpswd", expect_kind="target_projections")
    assert loaded.guarantee.valid and loaded.guarantee.epsilon <= 2.0 + 1e-6
    value = swd.distance_from_release(loaded, Xs, random_state=1)
    assert value > 0 and np.isfinite(value)
    assert rel.params["sigma"] == pytest.approx(rel.params["sensitivity"] * rel.guarantee.details["noise_multiplier"])

    g = swd_da.mlp_feature_extractor(8, out=8)
    plan = swd.plan_releases(2.0, 1e-5, n=300, batch_size=300, steps=5, k=8, d=8, clip_norm=1.0)
    rounds = swd_da.release_target_rounds(g, Xt.astype(np.float32), [swd.directions(8, 8, rng) for _ in range(3)], plan, rng)
    assert rounds["projections"].shape == (3, 300, 8)
    assert_no_raw_rows(rounds, Xt)
    with torch.no_grad():
        assert_no_raw_rows(rounds, g(torch.as_tensor(Xt, dtype=torch.float32)).numpy())
    assert rounds.guarantee.epsilon < plan.guarantee.epsilon  # 3 of the 5 planned rounds


def test_projection_release_audit():
    """Worst-case pair: the differing row is ±R·v with v the top singular direction of Uᵀ."""
    rng = np.random.default_rng(7)
    d, k, R, eps, delta = 6, 10, 1.0, 1.0, 1e-5
    U = swd.directions(d, k, rng)
    plan = swd.plan_projection_release(1, d, epsilon=eps, delta=delta, k=k, clip_norm=R)
    v = np.linalg.svd(U.T)[2][0]
    x, x_prime = np.tile(5 * v, (100_000, 1)), np.tile(-5 * v, (100_000, 1))  # rows above R are clipped to ±R·v
    direction = U.T @ v / np.linalg.norm(U.T @ v)

    def audit(sigma):
        a = swd.project_rows(x, U, sigma, rng, R) @ direction
        b = swd.project_rows(x_prime, U, sigma, rng, R) @ direction
        return epsilon_lower_bound(a, b, delta=delta)

    assert audit(plan.sigma(U)).passes(eps)
    assert not audit(plan.sigma(U) / 3).passes(eps)  # an under-noised release is caught


# --- DA: stop-gradient and the estimator ---------------------------------------------------------


def _grads(module):
    return torch.cat([p.grad.flatten().clone() for p in module.parameters()])


def test_stop_gradient_target_inputs_do_not_reach_g(rng):
    torch.manual_seed(0)
    g = swd_da.mlp_feature_extractor(6, hidden=(8,), out=4)
    xs = torch.as_tensor(rng.standard_normal((32, 6)), dtype=torch.float32)
    Xt = rng.standard_normal((32, 6)).astype(np.float32)
    U = swd.directions(4, 10, rng)
    P_t = torch.as_tensor(swd_da.target_projections(g, Xt, U, batch_size=32, sigma=0.5, clip_norm=1.0, noise=NoiseSource()))
    assert not P_t.requires_grad

    def grad_given(P):
        g.zero_grad()
        swd_da.source_alignment_loss(g(xs), P, torch.as_tensor(U), sigma=0.5, clip_norm=1.0,
                                     generator=torch.Generator().manual_seed(1)).backward()
        return _grads(g)

    base = grad_given(P_t)
    Xt_other = (Xt * -3 + 7).astype(np.float32)  # completely different raw target inputs, same release
    assert torch.equal(grad_given(P_t), base)
    assert not torch.equal(grad_given(P_t + 1.0), base)  # the gradient does depend on the release
    # the trainer's sound step uses exactly this path: with the same randomness it reproduces the gradient
    cfg = swd_da.SWDDAConfig(mode="sound", k=10)
    plan = swd.plan_releases(5.0, 1e-5, n=32, batch_size=32, steps=2, k=10, d=4, clip_norm=1.0)
    for X in (Xt, Xt_other):
        r1 = NoiseSource(5, reproducible=True)
        P = torch.as_tensor(swd_da.target_projections(g, X, U, batch_size=32, sigma=plan.sigma(U), clip_norm=1.0, noise=r1))
        g.zero_grad()
        swd_da._alignment(cfg, plan, g, g(xs), torch.as_tensor(X), U, np.random.default_rng(5),
                          NoiseSource(5, reproducible=True), torch.Generator().manual_seed(1), []).backward()
        g_trainer = _grads(g)
        g.zero_grad()
        swd_da.source_alignment_loss(g(xs), P, torch.as_tensor(U), sigma=plan.sigma(U), clip_norm=1.0,
                                     generator=torch.Generator().manual_seed(1)).backward()
        torch.testing.assert_close(g_trainer, _grads(g))
    # control: the paper's loss differentiates through the target branch
    cfg_p = swd_da.SWDDAConfig(mode="paper", k=10)
    plan_p = swd.plan_releases(5.0, 1e-5, n=32, batch_size=32, steps=2, k=10, d=4, clip_norm=0.5, method="clt", mode="paper")
    grads = []
    for X in (Xt, Xt_other):
        g.zero_grad()
        swd_da._alignment(cfg_p, plan_p, g, g(xs).detach(), torch.as_tensor(X), U, np.random.default_rng(5),
                          NoiseSource(), torch.Generator().manual_seed(1), []).backward()
        grads.append(_grads(g))
    assert grads[0].abs().sum() > 0 and not torch.equal(grads[0], grads[1])


def _blobs(rng, n=240, shift=0.0):
    y = rng.integers(0, 2, n)
    X = rng.standard_normal((n, 5)) + 2.0 * y[:, None] + shift
    return X, y


def test_estimator_modes(rng):
    Xs, ys = _blobs(rng)
    Xt, yt = _blobs(rng, n=40, shift=0.5)  # B = n_t keeps the accounting fast
    common = {"epochs": 3, "min_steps": 0, "batch_size": 40, "lr": 5e-3, "lam": 0.5, "k": 20, "start_align": 1,
              "random_state": 0, "reproducible_noise": True}
    sound = swd_da.DPSWDAdapter(privacy_mode="sound", design="per-step", epsilon=3.0, delta=1e-4,
                                **common).fit_domains(Xs, ys, Xt)
    g = sound.guarantee_
    assert g.reasons == (REPRODUCIBLE_NOISE_REASON,)  # only reason: reproducible noise (issue 19, item 8)
    assert g.epsilon <= 3.0 + 1e-6 and g.details["steps"] == sound.train_result_.releases == 12
    assert sound.train_result_.sigma_mean > 0
    assert sound.score(Xt, yt) > 0.7
    paper = swd_da.DPSWDAdapter(privacy_mode="paper", epsilon=3.0, delta=1e-4, paper_method="clt", **common).fit_domains(Xs, ys, Xt)
    reasons = paper.guarantee_.reasons
    assert not paper.guarantee_.valid and len(reasons) >= 5 and any("CLT" in r for r in reasons)
    assert any("target branch" in r for r in reasons) and any("charges" in r for r in reasons)
    plain = swd_da.DPSWDAdapter(epsilon=None, **common).fit_domains(Xs, ys, Xt)
    assert plain.guarantee_ is None and plain.score(Xt, yt) > 0.7


# --- bad inputs -----------------------------------------------------------------------------------


def test_bad_inputs(rng):
    kw = {"n": 100, "batch_size": 10, "steps": 5, "k": 5, "d": 5, "clip_norm": 1.0}
    with pytest.raises(ValueError, match="not a valid bound"):
        swd.plan_releases(1.0, 1e-5, method="clt", **kw)
    with pytest.raises(ValueError, match="pass U"):
        swd.projection_sensitivity("spectral")
    with pytest.raises(ValueError, match="batch_size"):
        swd.plan_releases(1.0, 1e-5, **{**kw, "batch_size": 101})
    with pytest.raises(ValueError):
        swd.plan_releases(-1.0, 1e-5, **kw)
    with pytest.raises(ValueError):
        swd.plan_releases(1.0, 1e-5, **{**kw, "clip_norm": 0.0})
    with pytest.raises(ValueError, match="method"):
        swd.projection_sensitivity("gaussian", k=5, d=5, failure=0.1)
    with pytest.raises(ValueError, match="U must have shape"):
        swd.release_projections(rng.standard_normal((20, 5)), epsilon=1.0, delta=1e-5, k=5, U=np.eye(4))
    with pytest.raises(ValueError, match="same number of directions"):
        swd.sliced_wasserstein(np.zeros((5, 3)), np.zeros((5, 4)))
    with pytest.raises(ValueError, match="equal shapes"):
        swd_da.sliced_wasserstein_torch(torch.zeros(5, 3), torch.zeros(6, 3))
    Xs, ys = _blobs(rng, 40)
    with pytest.raises(ValueError, match="privacy_mode"):
        swd_da.DPSWDAdapter(privacy_mode="private").fit_domains(Xs, ys, Xs)
    with pytest.raises(ValueError, match="28×28"):  # the digits CNN refuses 16×16 rows instead of silently shrinking
        swd_da.DPSWDAdapter(network="digits").fit_domains(rng.uniform(size=(40, 256)), ys, rng.uniform(size=(40, 256)))
    with pytest.raises(ValueError):
        gaussian_mean_shift(0, 1.0)


def test_cli_one_shot_release_and_adapt(tmp_path, rng):
    import argparse

    from dpadapt.cli.methods import dpswd as cli
    from dpadapt.io import Table

    Xs, Xt = gaussian_mean_shift(200, 1.0, d=4, random_state=rng)
    p = argparse.ArgumentParser()
    cli.add_release_arguments(p)
    args = p.parse_args(["--epsilon", "3", "--k", "20", "--clip-norm", "4", "--seed", "1"])
    planned = cli.plan_release(args, Table(Xt, None, tmp_path / "t.npz"))
    assert planned.guarantee.valid and planned.guarantee.epsilon == pytest.approx(3.0)
    rel = Release.load(planned.execute().save(tmp_path / "r.npz"), expect_method="dpswd")
    assert rel.guarantee.to_dict() == planned.guarantee.to_dict()
    assert_no_raw_rows(rel, Xt)
    q = argparse.ArgumentParser()
    cli.add_adapt_arguments(q)
    out = cli.adapt(q.parse_args(["--seed", "2"]), Table(Xs, None, tmp_path / "s.npz"), [rel])
    far = out.metrics["dpswd"]
    near = cli.adapt(q.parse_args(["--seed", "2"]), Table(Xt[::-1].copy(), None, tmp_path / "s2.npz"), [rel]).metrics["dpswd"]
    assert out.guarantees["target"].valid and near < far


def test_generator_sound_smoke(tmp_path, rng):
    from dpadapt.deep import generator as gen

    X = rng.uniform(0, 1, size=(60, 784)).astype(np.float32)
    y = np.arange(60) % 10
    cfg = gen.GeneratorConfig(steps=3, batch_size=60, k=20, epsilon=2.0, delta=1e-4, classes=tuple(range(10)))
    res = gen.train_generator(X, y, cfg, rng)
    assert res.guarantee.valid and res.guarantee.epsilon <= 2.0 + 1e-6 and res.guarantee.details["d"] == 794
    Xg, yg = gen.sample(res.generator, 3, rng)
    assert Xg.shape == (30, 784) and np.all((Xg >= 0) & (Xg <= 1)) and np.array_equal(np.bincount(yg), [3] * 10)
    assert gen.save_grid(res.generator, tmp_path / "g.png", rng).stat().st_size > 0
    with pytest.raises(ValueError, match="mode"):
        gen.train_generator(X, y, gen.GeneratorConfig(mode="paper", classes=tuple(range(10))), rng)
    with pytest.raises(ValueError, match="classes"):  # the label set is public: never inferred from private labels
        gen.train_generator(X, y, gen.GeneratorConfig(steps=1, batch_size=60, k=20), rng)
    with pytest.raises(ValueError, match="outside"):
        gen.train_generator(X, y, gen.GeneratorConfig(steps=1, batch_size=60, k=20, classes=tuple(range(9))), rng)


def test_generator_from_one_release_of_sliced_marginals(tmp_path, rng):
    from dpadapt.deep import generator as gen

    X = rng.uniform(0, 1, size=(200, 784)).astype(np.float32)
    y = np.arange(200) % 10
    cfg = gen.MarginalsConfig(epsilon=2.0, delta=1e-4, k=30, bins=20, steps=3, batch_size=50, classes=tuple(range(10)))
    res = gen.train_generator_from_marginals(X, y, cfg, np.random.default_rng(0))
    g = res.guarantee
    assert g.valid and g.epsilon == 2.0 and g.details["releases"] == 1
    assert g.sensitivity == pytest.approx(math.sqrt(60))  # sqrt(2k): does not grow with n
    Xg, yg = gen.sample(res.generator, 2, rng)
    assert Xg.shape == (20, 784)
    with pytest.raises(ValueError, match="classes"):
        gen.train_generator_from_marginals(X, y, gen.MarginalsConfig(steps=1, k=5), rng)
    counts = np.array([[0.0, 10.0, -3.0, 10.0]])
    edges, levels = np.array([0.0, 1, 2, 3, 4]), np.array([0.25, 0.75])
    np.testing.assert_allclose(marginal_quantiles(counts, edges, levels), [[1.5, 3.5]])  # negative counts read as 0
    tail = np.array([[2.0, 10.0, 0.0, 10.0]])  # a noise-sized count in an empty tail bin
    np.testing.assert_allclose(marginal_quantiles(tail, edges, levels, floor=3.0), [[1.5, 3.5]])
    assert marginal_quantiles(tail, edges, levels)[0, 0] < 1.5
    per_class = marginal_quantiles(np.stack([counts, tail]), edges, levels, floor=3.0)  # K × k × b
    np.testing.assert_allclose(per_class, [[[1.5, 3.5]], [[1.5, 3.5]]])


def test_per_class_marginals_generator_learns_each_class(rng):
    """Per-class histograms tie each class's samples to that class's images: two classes of flat dark /
    bright images give dark / bright samples; the release is one Gaussian with the joint design's σ."""
    from dpadapt.deep import generator as gen

    y = np.arange(400) % 2
    X = (np.where(y[:, None] == 0, 0.15, 0.85) + rng.uniform(-0.05, 0.05, size=(400, 784))).astype(np.float32)
    cfg = gen.MarginalsConfig(epsilon=None, k=40, bins=80, low=-4.0, high=4.0, steps=150, batch_size=40,
                              classes=(0, 1), per_class=True)
    res = gen.train_generator_from_marginals(X, y, cfg, np.random.default_rng(0))
    Xg, yg = gen.sample(res.generator, 20, rng)
    dark, bright = Xg[yg == 0].mean(), Xg[yg == 1].mean()
    assert dark < 0.35 and bright > 0.65, (dark, bright)
    private = gen.train_generator_from_marginals(X, y, dataclasses.replace(cfg, epsilon=2.0, delta=1e-4, steps=1),
                                                 np.random.default_rng(0))
    assert private.guarantee.sensitivity == pytest.approx(math.sqrt(2 * 40))


def test_adversarial_alignment_is_the_papers_dann_row(rng):
    """alignment='adversarial': DANN's domain loss behind a gradient reversal in SWD's loop; it changes the
    model against the same loop with λ = 0, releases nothing and is non-private only."""
    Xs, ys = _blobs(rng, 120)
    Xt, _ = _blobs(rng, 120, shift=1.5)
    common = {"epochs": 6, "min_steps": 0, "batch_size": 40, "lr": 5e-3, "random_state": 0, "epsilon": None}
    dann = swd_da.DPSWDAdapter(alignment="adversarial", lam=1.0, start_align=2, **common).fit_domains(Xs, ys, Xt)
    source_only = swd_da.DPSWDAdapter(lam=0.0, start_align=2, **common).fit_domains(Xs, ys, Xt)
    assert dann.guarantee_ is None and dann.train_result_.releases == 0
    assert np.abs(dann.decision_function(Xt) - source_only.decision_function(Xt)).max() > 1e-3
    with pytest.raises(ValueError, match="non-private"):
        swd_da.DPSWDAdapter(alignment="adversarial", epsilon=5.0, epochs=1, min_steps=2).fit_domains(Xs, ys, Xt)



def test_mlp_standardisation_survives_features_constant_in_the_source(rng):
    """Issue 23: source std + 1e-6 turned a feature constant in the source into z-scores of ~1e6 on the
    target (the source-only network fell to 8 % on MNIST→USPS); the scale is now floored."""
    Xs, ys = _blobs(rng)
    Xt, yt = _blobs(rng, n=120)
    Xs = np.hstack([Xs, np.zeros((Xs.shape[0], 10))])  # 'border pixels': blank in every source row ...
    Xt = np.hstack([Xt, rng.random((Xt.shape[0], 10))])  # ... but lit on the target
    model = swd_da.DPSWDAdapter(epsilon=None, lam=0.0, epochs=3, min_steps=0, batch_size=40, random_state=0).fit_domains(Xs, ys, Xt)
    assert np.abs(model._transform(Xt)).max() < 50.0
    assert model.score(Xt, yt) > 0.85
