"""Tests of DANN, DP-SGD streams, DPDA and G-DPDA (spec 05)."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from torch import nn

from dpadapt.deep import dann as dann_mod
from dpadapt.deep.dann import DANN, DANNNetwork, grl_schedule, mlp_network, public_block_gradients
from dpadapt.deep.dpda import DPDA, GDPDA
from dpadapt.deep.dpsgd import (
    CrossExampleModuleError,
    PrivacySpec,
    ghost_supported,
    private_block_gradients,
)
from dpadapt.privacy.mechanisms import NoiseSource
from dpadapt.privacy.mechanisms import poisson_subsample as poisson_sample
from dpadapt.privacy.mechanisms import torch_gaussian_noise as add_gaussian_noise
from dpadapt.privacy import accounting
from dpadapt.privacy.audit import epsilon_lower_bound
from dpadapt.privacy.guarantee import PAPER_ADD_REMOVE_REASON


def _net(seed=0, d=6, hidden=5, n_classes=3):
    torch.manual_seed(seed)
    return mlp_network(d, n_classes, (hidden, 4), "tanh")


def _toy(rng, n=60, d=6, shift=1.5):
    Xs = rng.normal(size=(n, d))
    ys = (Xs[:, 0] + 0.3 * Xs[:, 1] > 0).astype(int)
    Xt = rng.normal(size=(n, d)) + shift
    return Xs, ys, Xt


def _reference_per_example(net, x, y, domain, blocks, nu):
    """Per-example gradient vectors by a plain loop (one backward per example)."""
    vecs = []
    for i in range(x.shape[0]):
        parts = []
        h = net.feature_extractor(x[i : i + 1])
        for b in blocks:
            if b == "label":
                loss = nn.functional.cross_entropy(net.label_head(h), y[i : i + 1])
                ps = [p for p in net.feature_extractor.parameters()] + list(net.label_head.parameters())
                gs = torch.autograd.grad(loss, ps, retain_graph=True)
            else:
                loss = nn.functional.cross_entropy(net.domain_head(h), torch.full((1,), domain))
                ps = list(net.domain_head.parameters()) + list(net.feature_extractor.parameters())
                gd = torch.autograd.grad(loss, ps, retain_graph=True)
                k = len(list(net.domain_head.parameters()))
                gs = list(gd[:k]) + [-nu * g for g in gd[k:]]
            parts += [(p, g) for p, g in zip(ps, gs)]
        vecs.append(parts)
    return vecs


@pytest.mark.parametrize("method", ["ghost", "vmap"])
@pytest.mark.parametrize("blocks", [("domain",), ("label", "domain")])
def test_joint_clipping_bounds_every_example_and_matches_reference(method, blocks):
    net = _net()
    gen = torch.Generator().manual_seed(0)
    x = 4.0 * torch.randn(12, 6, generator=gen)
    y = torch.randint(0, 3, (12,), generator=gen)
    nu, C = 0.7, 0.5
    spec = PrivacySpec(C, 0.0, "joint")
    out, before, after = private_block_gradients(net, x, y, 1, blocks, nu, spec, 1.0, gen, method, return_norms=True)
    ref = _reference_per_example(net, x, y, 1, blocks, nu)
    ref_norms = torch.tensor([math.sqrt(sum(float((g**2).sum()) for _, g in parts)) for parts in ref])
    torch.testing.assert_close(before, ref_norms, rtol=1e-4, atol=1e-6)
    assert (ref_norms > C).sum() >= 6  # the test exercises clipping
    assert torch.all(after <= C * (1 + 1e-5))
    # the clipped sum equals Σ_i min(1, C/‖g_i‖) g_i (blocks kept separate: θ_f appears once per block)
    for b_index, b in enumerate(blocks):
        for p, g in out[b].items():
            expected = torch.zeros_like(p)
            for parts, norm in zip(ref, ref_norms):
                w = min(1.0, C / float(norm))
                block_parts = parts[: len(parts) // len(blocks)] if b_index == 0 else parts[len(parts) // len(blocks) :]
                for q, gq in block_parts:
                    if q is p:
                        expected += w * gq
            torch.testing.assert_close(g, expected, rtol=1e-4, atol=1e-6)


def test_per_group_clipping_bounds_each_group_only():
    net = _net()
    gen = torch.Generator().manual_seed(1)
    x = 5.0 * torch.randn(10, 6, generator=gen)
    C = 0.3
    _, before, after = private_block_gradients(
        net, x, None, 1, ("domain",), 1.0, PrivacySpec(C, 0.0, "per_group"), 1.0, gen, "ghost", return_norms=True
    )
    # each of the 2 groups is clipped to C, so the joint norm can exceed C but never √2·C
    assert torch.all(after <= math.sqrt(2) * C * (1 + 1e-5))
    assert torch.any(after > C * 1.05)


def test_unclipped_noiseless_private_step_equals_dann_gradient():
    net = _net()
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(9, 6, generator=gen)
    y = torch.randint(0, 3, (9,), generator=gen)
    pub = public_block_gradients(net, x, y, 0, ("label", "domain"), 0.4, 9.0)
    for method in ("ghost", "vmap"):
        priv = private_block_gradients(net, x, y, 0, ("label", "domain"), 0.4, PrivacySpec(1e9, 0.0), 9.0, gen, method)
        for b in ("label", "domain"):
            assert set(priv[b]) == set(pub[b])
            for p in pub[b]:
                torch.testing.assert_close(priv[b][p], pub[b][p], rtol=1e-4, atol=1e-6)


def test_ghost_handles_sparse_bow_batches_like_vmap():
    rng = np.random.default_rng(3)
    X = sp.random(16, 300, density=0.02, format="csr", random_state=4) * 3
    x = dann_mod.to_tensor(X, np.arange(16))
    net = mlp_network(300, 2, (8,), "relu")
    gen = torch.Generator().manual_seed(0)
    spec = PrivacySpec(0.05, 0.0)
    a = private_block_gradients(net, x, None, 1, ("domain",), 0.9, spec, 4.0, gen, "ghost")
    b = private_block_gradients(net, x, None, 1, ("domain",), 0.9, spec, 4.0, gen, "vmap")
    for p in a["domain"]:
        torch.testing.assert_close(a["domain"][p], b["domain"][p], rtol=1e-4, atol=1e-7)
    assert rng is not None


@pytest.mark.parametrize("grouping", ["joint", "per_group"])
def test_noise_std_on_summed_gradient_is_sigma_C(grouping):
    torch.manual_seed(0)
    net = mlp_network(2000, 2, (50,), "relu")  # ~100k parameters reached by the domain loss
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(8, 2000, generator=gen)
    sigma, C, M = 1.7, 0.6, 8.0
    clean = private_block_gradients(net, x, None, 1, ("domain",), 1.0, PrivacySpec(C, 0.0, grouping), M, gen)
    noisy = private_block_gradients(net, x, None, 1, ("domain",), 1.0, PrivacySpec(C, sigma, grouping), M, gen)
    diffs = torch.cat([((noisy["domain"][p] - clean["domain"][p]) * M).ravel() for p in clean["domain"]])
    assert diffs.numel() > 100_000
    # the relative standard error of a std estimate from n draws is ≈ 1/sqrt(2n) ≈ 0.2 %
    assert abs(float(diffs.std()) / (sigma * C) - 1) < 0.01
    assert abs(float(diffs.mean())) < 5 * sigma * C / math.sqrt(diffs.numel())


def test_empty_poisson_batch_still_gets_noise_and_sampling_rate():
    net = _net()
    gen = torch.Generator().manual_seed(0)
    out = private_block_gradients(net, torch.zeros(0, 6), None, 1, ("domain",), 1.0, PrivacySpec(1.0, 2.0), 4.0, gen)
    g = torch.cat([v.ravel() for v in out["domain"].values()])
    assert float(g.abs().min()) > 0  # pure noise, nothing skipped
    rng = np.random.default_rng(0)
    sizes = [poisson_sample(1000, 0.05, rng).size for _ in range(400)]
    assert abs(np.mean(sizes) - 50) < 4 * math.sqrt(50 * 0.95 / 400)
    with pytest.raises(ValueError):
        poisson_sample(10, 0.0, rng)


def _rdp_epsilon(z, q, steps, delta):
    """The add/remove RDP ε (the paper's accountant, Opacus')."""
    acc = dp_accounting.rdp.RdpAccountant(orders=accounting.RDP_ORDERS)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), steps)
    return acc.get_epsilon(delta)


def _replace_one_epsilon(event, delta):
    """dp-accounting's replace-one PLD ε of an event (what every DP-SGD Guarantee states)."""
    acc = dp_accounting.pld.PLDAccountant(neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
                                          value_discretization_interval=accounting.PLD_INTERVAL)
    acc.compose(event)
    return acc.get_epsilon(delta)


def _sgm_replace_one(z, q, steps, delta):
    """The replace-one PLD ε of DP-SGD steps (the library's, memoised; equal to :func:`_replace_one_epsilon`, tested in
    ``test_dpsgd_plan_states_dp_accountings_replace_one_pld_and_its_price``)."""
    return accounting.epsilon(accounting.poisson_gaussian_event(z, q, steps), delta, "replace_one", "pld")


def test_accounting_matches_dp_accounting_and_step_budget(rng):
    Xs, ys, Xt = _toy(rng, n=80)
    m = DPDA(epsilon=2.0, delta=1e-5, noise_multiplier=2.0, max_grad_norm=1.0, epochs=50, batch_size=8,
             hidden=(4,), random_state=0).fit_domains(Xs, ys, Xt)
    g = m.guarantee_
    q = 8 / 80
    assert g.valid and g.party == "target" and g.relation == "replace_one" and g.unit == "record" and g.accounting == "pld"
    assert m.n_steps_ < 50 * 10  # the budget, not the epoch cap, stopped training
    assert g.epsilon == pytest.approx(_sgm_replace_one(2.0, q, m.n_steps_, 1e-5), rel=1e-9)
    assert g.epsilon <= 2.0 < _sgm_replace_one(2.0, q, m.n_steps_ + 1, 1e-5) + 1e-3  # maximal (to the search's PLD grid)
    assert m.train_log_.steps == m.n_steps_
    # paper mode: T by the paper's accountant (σ, add/remove RDP); separately clipped θ_d / θ_f groups are charged
    # σ/√2 under replace-one, the paper's claim uses σ under add/remove
    p = DPDA(epsilon=2.0, delta=1e-5, noise_multiplier=2.0, max_grad_norm=1.0, epochs=50, batch_size=8, hidden=(4,),
             privacy_mode="paper", random_state=0).fit_domains(Xs, ys, Xt)
    gp = p.guarantee_
    assert not gp.valid and gp.mode == "paper" and PAPER_ADD_REMOVE_REASON in gp.reasons
    assert gp.details["paper_claimed_epsilon"] == pytest.approx(_rdp_epsilon(2.0, q, p.n_steps_, 1e-5), rel=1e-9)
    assert gp.details["paper_claimed_epsilon"] <= 2.0 < _rdp_epsilon(2.0, q, p.n_steps_ + 1, 1e-5)
    assert gp.epsilon == pytest.approx(_sgm_replace_one(2.0 / math.sqrt(2), q, p.n_steps_, 1e-5), rel=1e-9)
    assert gp.epsilon > gp.details["paper_claimed_epsilon"]


def test_dpsgd_plan_states_dp_accountings_replace_one_pld_and_its_price():
    """Issue 27 item 3: a DP-SGD plan's ε is dp-accounting's replace-one PLD ε of its own events (n public) — larger
    than the add/remove ε at the same σ (the price of a guarantee that does not hide n behind q = B/n), so the σ
    calibrated for a budget is larger too."""
    from dpadapt.privacy.families.dpda import plan_party

    plan = plan_party("target", 400, 20, 4.0, 1e-5, 1.0, 4.0, "sound", (("domain",),), (("domain",),), 100)
    g = plan.guarantee(100)
    assert g.relation == "replace_one" and g.accounting == "pld" and g.events == (plan.event(100),)
    assert g.epsilon == pytest.approx(_replace_one_epsilon(plan.event(100), 1e-5), rel=1e-12)
    assert g.epsilon > 1.3 * accounting.epsilon(plan.event(100), 1e-5, "add_remove", "pld")
    assert "replace-one" in g.theorem and "n public" in g.theorem
    calibrated = plan_party("target", 400, 20, 4.0, 1e-5, None, 4.0, "sound", (("domain",),), (("domain",),), 100)
    assert calibrated.guarantee(100).epsilon == pytest.approx(4.0, abs=0.01) and calibrated.guarantee(100).epsilon <= 4.0
    add_remove_sigma = accounting.calibrate_noise_multiplier(lambda z: accounting.poisson_gaussian_event(z, 0.05, 100),
                                                             4.0, 1e-5, "add_remove", "rdp")  # the former calibration
    assert calibrated.spec.noise_multiplier > add_remove_sigma


def test_calibrated_sigma_spends_the_budget_over_the_fixed_epochs(rng):
    Xs, ys, Xt = _toy(rng, n=80)
    m = DPDA(epsilon=2.0, delta=1e-5, noise_multiplier=None, epochs=3, batch_size=8, hidden=(4,), random_state=0)
    m.fit_domains(Xs, ys, Xt)
    assert m.n_steps_ == 3 * 10
    assert m.guarantee_.epsilon == pytest.approx(2.0, abs=0.01)


def test_gdpda_accounts_source_and_target_separately(rng):
    Xs, ys, Xt = _toy(rng, n=100)
    m = GDPDA(classes=(0, 1), epsilon=3.0, delta=1e-5, source_epsilon=5.0, source_delta=2e-5, noise_multiplier=1.2,
              source_noise_multiplier=0.9, epochs=2, batch_size=10, hidden=(4,), random_state=0).fit_domains(Xs, ys, Xt)
    assert set(m.guarantees_) == {"source", "target"}
    s, t = m.guarantees_["source"], m.guarantees_["target"]
    assert t.epsilon == pytest.approx(_sgm_replace_one(1.2, 0.1, m.n_steps_, 1e-5), rel=1e-9)
    assert s.epsilon == pytest.approx(_sgm_replace_one(0.9, 0.1, m.n_steps_, 2e-5), rel=1e-9)
    assert s.delta == 2e-5 and s.valid and t.valid and s.relation == t.relation == "replace_one"
    with pytest.raises(AttributeError):
        _ = m.guarantee_
    p = GDPDA(classes=(0, 1), epsilon=3.0, source_epsilon=5.0, noise_multiplier=1.2, epochs=2, batch_size=10, hidden=(4,),
              privacy_mode="paper", random_state=0).fit_domains(Xs, ys, Xt)
    two_phases = accounting.compose([accounting.poisson_gaussian_event(1.2 / math.sqrt(2), 0.1, p.n_steps_)] * 2)
    assert p.guarantees_["source"].epsilon == pytest.approx(accounting.epsilon(two_phases, 2e-5, "replace_one"), rel=1e-9)


def test_public_source_step_never_reads_target_rows(rng, monkeypatch):
    """DPDA: the un-noised source stream sees only source rows; target rows only reach the DP stream."""
    Xs, ys, Xt = _toy(rng, n=50)
    Xs = np.abs(Xs) + 0.1  # source rows positive, target rows negative: a row's sign reveals its domain
    Xt = -np.abs(Xt) - 0.1
    seen = {"public": [], "private": []}
    pub, priv = dann_mod.public_block_gradients, dann_mod.clipped_block_sums

    def spy_pub(net, x, *a, **k):
        seen["public"].append(x.clone())
        return pub(net, x, *a, **k)

    def spy_priv(net, x, *a, **k):
        seen["private"].append(x.clone())
        return priv(net, x, *a, **k)

    monkeypatch.setattr(dann_mod, "public_block_gradients", spy_pub)
    monkeypatch.setattr(dann_mod, "clipped_block_sums", spy_priv)
    DPDA(epsilon=5.0, noise_multiplier=1.0, epochs=2, batch_size=5, hidden=(3,), random_state=0).fit_domains(Xs, ys, Xt)
    pub_rows = torch.cat(seen["public"])
    priv_rows = torch.cat(seen["private"])
    assert pub_rows.shape[0] > 0 and priv_rows.shape[0] > 0
    assert torch.all(pub_rows > 0) and torch.all(priv_rows < 0)
    assert len(seen["private"]) == len(seen["public"])  # one private release (one event) per step


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
@pytest.mark.parametrize("under_noised", [False, True])
def test_audit_one_step_neighbouring_target_sets(under_noised, relation):
    """One full-batch (q = 1) private target step on D vs D′ — record 0 replaced (the relation every DP-SGD Guarantee
    states), or x* added — the audit stays within the ε claimed under that relation; a quarter of the noise fails."""
    torch.manual_seed(3)
    net = DANNNetwork(nn.Sequential(nn.Linear(3, 2), nn.Tanh()), nn.Linear(2, 2), nn.Linear(2, 2))
    gen = torch.Generator().manual_seed(7)
    D = torch.randn(4, 3, generator=gen)
    x_star = 50 * torch.ones(1, 3)  # a gradient far above C
    if relation == "replace_one":  # record 0 = −x* replaced by x*: two clipped gradients far apart
        D, D_prime = torch.cat([-x_star, D[1:]]), torch.cat([x_star, D[1:]])
    else:
        D_prime = torch.cat([D, x_star])
    # σ = 2 under replace-one: a replacement moves the sum by up to 2C, so σ = 1 would claim ε ≈ 10, beyond what
    # 10⁵ samples can refute; at σ = 2 it claims what σ = 1 claims under add/remove (4.38)
    sigma, C, delta = (2.0 if relation == "replace_one" else 1.0), 1.0, 1e-5
    claimed = accounting.epsilon(accounting.poisson_gaussian_event(sigma, 1.0, 1), delta, relation, "pld")

    def clipped_sum(x):
        g = private_block_gradients(net, x, None, 1, ("domain",), 1.0, PrivacySpec(C, 0.0), 1.0, gen)
        return torch.cat([v.ravel() for v in g["domain"].values()])

    s, s_prime = clipped_sum(D), clipped_sum(D_prime)
    if relation == "add_remove":
        assert float((s_prime - s).norm()) == pytest.approx(C, rel=1e-4)  # x* contributes exactly C after clipping
    else:
        assert C < float((s_prime - s).norm()) <= 2 * C  # one clipped gradient for another
    n = 100_000
    std = sigma * C / (4 if under_noised else 1)
    out = add_gaussian_noise(s.expand(n, -1).clone(), std, gen)
    out_prime = add_gaussian_noise(s_prime.expand(n, -1).clone(), std, gen)
    u = (s_prime - s) / (s_prime - s).norm()
    result = epsilon_lower_bound((out @ u).numpy(), (out_prime @ u).numpy(), delta=delta)
    if under_noised:
        assert not result.passes(claimed)
    else:
        assert result.passes(claimed)
        assert result.epsilon_lower_bound > 0.5  # the audit has power


def test_batchnorm_on_private_path_is_rejected(rng):
    Xs, ys, Xt = _toy(rng)

    def bn_net(d, k):
        return DANNNetwork(nn.Sequential(nn.Linear(d, 4), nn.BatchNorm1d(4), nn.ReLU()), nn.Linear(4, k), nn.Linear(4, 2))

    DANN(network=bn_net, epochs=1, batch_size=8, random_state=0).fit_domains(Xs, ys, Xt)  # non-private: fine
    with pytest.raises(CrossExampleModuleError, match="BatchNorm1d"):
        DPDA(network=bn_net, epochs=1, batch_size=8).fit_domains(Xs, ys, Xt)

    def bn_label_head(d, k):
        return DANNNetwork(nn.Sequential(nn.Linear(d, 4), nn.ReLU()), nn.Sequential(nn.BatchNorm1d(4), nn.Linear(4, k)), nn.Linear(4, 2))

    DPDA(network=bn_label_head, epochs=1, batch_size=8, random_state=0).fit_domains(Xs, ys, Xt)  # label head is public in DPDA
    with pytest.raises(CrossExampleModuleError, match="label head"):
        GDPDA(classes=(0, 1), network=bn_label_head, epochs=1, batch_size=8).fit_domains(Xs, ys, Xt)


def test_layernorm_network_uses_vmap_and_learns(rng):
    Xs, ys, Xt = _toy(rng, n=120, shift=0.3)

    def ln_net(d, k):
        return DANNNetwork(nn.Sequential(nn.Linear(d, 8), nn.LayerNorm(8), nn.ReLU()), nn.Linear(8, k), nn.Linear(8, 2))

    assert not ghost_supported(ln_net(6, 2)) and ghost_supported(mlp_network(6, 2))
    m = DPDA(network=ln_net, epsilon=8.0, noise_multiplier=0.8, max_grad_norm=1.0, epochs=15, batch_size=12,
             lr=0.2, random_state=0, reproducible_noise=True).fit_domains(Xs, ys, Xt)
    yt = (Xt[:, 0] + 0.3 * Xt[:, 1] > 0).astype(int)
    assert m.score(Xt, yt) > 0.75


def test_dropout_network_trains_under_dp_sgd(rng):
    """Dropout on the private path (the paper's digits CNN has two): per-example gradients draw one mask
    per example inside vmap instead of failing, and the network still learns."""
    Xs, ys, Xt = _toy(rng, n=120, shift=0.3)

    def drop_net(d, k):
        return DANNNetwork(nn.Sequential(nn.Linear(d, 8), nn.ReLU(), nn.Dropout(0.2)), nn.Linear(8, k), nn.Linear(8, 2))

    m = DPDA(network=drop_net, epsilon=8.0, noise_multiplier=0.8, max_grad_norm=1.0, epochs=15, batch_size=12,
             lr=0.2, per_example="vmap", random_state=0, reproducible_noise=True).fit_domains(Xs, ys, Xt)
    yt = (Xt[:, 0] + 0.3 * Xt[:, 1] > 0).astype(int)
    assert m.score(Xt, yt) > 0.75


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"delta": 1.5}, "delta"),
        ({"privacy_mode": "loose"}, "privacy_mode"),
        ({"per_example": "opacus"}, "per_example"),
        ({"max_grad_norm": -1.0}, "max_grad_norm"),
        ({"noise_multiplier": -2.0}, "noise_multiplier"),
        ({"batch_size": 500}, "batch_size"),
        ({"epochs": 0}, "epochs"),
        ({"epsilon": 1e-4, "noise_multiplier": 0.5}, "single step"),
    ],
)
def test_bad_parameters_raise(rng, kwargs, match):
    Xs, ys, Xt = _toy(rng)
    params = {"epochs": 1, "batch_size": 8, "hidden": (3,), **kwargs}
    with pytest.raises(ValueError, match=match):
        DPDA(**params).fit_domains(Xs, ys, Xt)


def test_bad_inputs_raise(rng):
    Xs, ys, Xt = _toy(rng)
    m = DPDA(epochs=1, batch_size=8)
    bad = Xt.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        m.fit_domains(Xs, ys, bad)
    with pytest.raises(ValueError, match="features"):
        m.fit_domains(Xs, ys, Xt[:, :3])
    with pytest.raises(ValueError, match="class"):
        m.fit_domains(Xs, np.zeros(len(ys)), Xt)
    with pytest.raises(TypeError, match="DANNNetwork"):
        DANN(network=lambda d, k: nn.Linear(d, k), epochs=1, batch_size=8).fit_domains(Xs, ys, Xt)
    fitted = DANN(epochs=1, batch_size=8, hidden=(3,), random_state=0).fit_domains(Xs, ys, Xt)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(Xt[:, :2])


def test_dann_schedule_fit_skada_and_clone(rng):
    assert grl_schedule(0.0) == 0.0 and grl_schedule(1.0) == pytest.approx(0.9999092, rel=1e-6)
    assert grl_schedule(0.5) < grl_schedule(0.7) < 1.0
    Xs, ys, Xt = _toy(rng, n=100, shift=0.5)
    X = np.vstack([Xs, Xt])
    y = np.concatenate([ys, -np.ones(len(Xt), int)])
    dom = np.concatenate([np.ones(len(Xs)), -np.ones(len(Xt))])
    m = DPDA(epsilon=4.0, noise_multiplier=1.0, epochs=5, batch_size=10, hidden=(8,), random_state=1,
             reproducible_noise=True).fit(X, y, dom)
    assert m.predict(Xt).shape == (100,) and np.allclose(m.predict_proba(Xt).sum(1), 1)
    again = clone(m).fit(X, y, dom)  # same seed and reproducible noise → same model
    np.testing.assert_allclose(again.predict_proba(Xt), m.predict_proba(Xt))
    fresh = clone(m).set_params(reproducible_noise=False)
    a, b = clone(fresh).fit(X, y, dom), clone(fresh).fit(X, y, dom)  # same seed, secret noise → different models
    assert not np.allclose(a.predict_proba(Xt), b.predict_proba(Xt))
    assert "target" in m.privacy_report()
    assert DANN(epochs=1, batch_size=10).fit_domains(Xs, ys, Xt).guarantees_ == {}


def test_amazon_books_to_dvd_smoke(data_root):
    from dpadapt.datasets import load_pair

    pair = load_pair("bow5000", "books", "dvd", root=data_root)
    m = DPDA(epochs=2, random_state=0).fit_domains(pair.Xs, pair.ys, pair.Xt)
    assert m.score(pair.Xt_test, pair.yt_test) > 0.7
    assert m.guarantee_.valid and 0 < m.guarantee_.epsilon < 8


def test_cli_two_party_dpda_roundtrip(rng, tmp_path):
    import argparse

    from dpadapt.cli.methods import dpda as cli
    from dpadapt.cli.methods import methods
    from dpadapt.io import Table
    from dpadapt.release import Release, assert_no_raw_rows

    assert "dpda" in methods()
    Xs, ys, Xt = _toy(rng, n=80)
    Xs_sparse = sp.csr_matrix(np.abs(Xs))
    parser = argparse.ArgumentParser()
    cli.add_release_arguments(parser)
    with pytest.raises(ValueError, match="declare-public"):
        cli.plan_release(parser.parse_args([]), Table(Xs_sparse, ys, tmp_path / "s.npz"))
    plan = cli.plan_release(parser.parse_args(["--declare-public"]), Table(Xs_sparse, ys, tmp_path / "s.npz"))
    assert not plan.guarantee.valid and plan.guarantee.party == "source"
    path = plan.execute().save(tmp_path / "source.npz")
    release = Release.load(path, expect_method="dpda", expect_kind="public_source")
    X_back, y_back = cli.source_from_release(release)
    assert (X_back != Xs_sparse).nnz == 0 and np.array_equal(y_back, ys)

    aparser = argparse.ArgumentParser()
    cli.add_adapt_arguments(aparser)
    args = aparser.parse_args(["--epsilon", "3", "--noise-multiplier", "1.0", "--epochs", "2", "--batch-size", "8",
                               "--hidden", "4", "--seed", "0"])
    out = cli.adapt(args, Table(np.abs(Xt), None, tmp_path / "t.npz"), [release])
    g = out.guarantees["target"]
    assert g.valid and g.epsilon <= 3.0
    assert out.return_release.guarantee.epsilon == pytest.approx(g.epsilon)
    model_release = out.return_release.execute()
    assert model_release.owner == "target" and "param.feature_extractor.0.weight" in model_release.arrays
    assert_no_raw_rows(model_release, np.abs(Xt))


def test_ghost_refuses_networks_it_cannot_handle():
    net = DANNNetwork(nn.Sequential(nn.Linear(6, 4), nn.LayerNorm(4)), nn.Linear(4, 2), nn.Linear(4, 2))
    gen = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="vmap"):
        private_block_gradients(net, torch.randn(3, 6), None, 1, ("domain",), 1.0, PrivacySpec(1.0, 1.0), 3.0, gen, "ghost")


def test_training_step_noise_merges_independent_draws_with_the_right_variance():
    """One G-DPDA-style step with negligible signal: each parameter moves by N(0, Σ_k (lr_k σC/M_k)²)."""
    torch.manual_seed(0)
    net = mlp_network(300, 2, (50,), "relu")
    before = {n: p.detach().clone() for n, p in net.named_parameters()}
    rng = np.random.default_rng(0)
    Xs, Xt = rng.normal(size=(40, 300)), rng.normal(size=(25, 300))
    ys = rng.integers(0, 2, 40)
    spec = PrivacySpec(1e-9, 1e9)  # σC = 1, clipped signal ≤ 1e-9
    streams = [dann_mod.Stream("s", "source", Xs, ys, 0, ("label", "domain"), 1.0, spec),
               dann_mod.Stream("t", "target", Xt, None, 1, ("domain",), 1.0, spec)]
    lr, lr_d = 0.5, 0.2
    dann_mod.train_streams(net, streams, 1, 1, lr, lr_d, rng, NoiseSource(1, reproducible=True))
    moved = {n: (p.detach() - before[n]).ravel() for n, p in net.named_parameters()}
    expected = {
        "feature_extractor.0.weight": math.sqrt((lr / 40) ** 2 + (lr_d / 40) ** 2 + (lr_d / 25) ** 2),
        "domain_head.weight": math.sqrt((lr_d / 40) ** 2 + (lr_d / 25) ** 2),
        "label_head.weight": lr / 40,
    }
    n = moved["feature_extractor.0.weight"].numel()
    assert abs(float(moved["feature_extractor.0.weight"].std()) / expected["feature_extractor.0.weight"] - 1) < 4 / math.sqrt(2 * n)
    for name in ("domain_head.weight", "label_head.weight"):  # 100 coordinates each: loose check
        assert abs(float(moved[name].std()) / expected[name] - 1) < 0.3
