"""Issue 11 holes 1, 2, 3, 5 for the deep families, the one DP-SGD engine (Opacus as oracle), and
issue 13's small-data defaults. Each hole test states what the old code did and fails on it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from dpadapt.deep import dann as dann_mod
from dpadapt.deep.dpda import DPDA, GDPDA
from dpadapt.deep.swd_da import DPSWDAdapter
from dpadapt.transport import swd


def _reconstruct(release, sigma_replay):
    """The attacker's de-noising: P − V (V replayed), then least squares for the clipped rows."""
    U = release["directions"]
    return np.linalg.lstsq(U.T, (release["projections"] - sigma_replay).T, rcond=None)[0].T


def _old_same_generator_release(X, seed, k, clip, sigma):
    """What main did: U, the row order and the noise were consecutive draws of ONE generator."""
    rng = np.random.default_rng(seed)
    U = swd.directions(X.shape[1], k, rng)
    perm = rng.permutation(X.shape[0])
    P = swd.clip_rows(X[perm], clip) @ U + rng.normal(0.0, sigma, size=(X.shape[0], k))
    return {"directions": U, "projections": P}


def _attack(release, n, k, sigma, seeds=range(50)):
    """Brute-force the seed from the released U, then replay the same generator's next draws."""
    U = release["directions"]
    for s in seeds:
        rng = np.random.default_rng(s)
        if np.allclose(swd.directions(U.shape[0], k, rng), U):
            perm = rng.permutation(n)
            V = rng.normal(0.0, sigma, size=(n, k))
            return s, perm, _reconstruct(release, V)
    return None, None, None


def test_hole1_dpswd_noise_cannot_be_replayed_from_the_seed(rng):
    n, d, k, clip = 40, 5, 12, 1.0
    X = swd.clip_rows(rng.standard_normal((n, d)), clip)
    rel = swd.release_projections(X, epsilon=1.0, delta=1e-4, k=k, clip_norm=clip, random_state=17)
    sigma = rel.params["sigma"]
    # the old behaviour: the seed is found from U and every row is recovered to float precision
    old = _old_same_generator_release(X, 17, k, clip, sigma)
    s, perm, rec = _attack(old, n, k, sigma)
    assert s == 17 and np.max(np.abs(rec - X[perm])) < 1e-10
    # now: the seed still reproduces U (public randomness), but replaying gives noise-sized errors
    s, perm, rec = _attack(rel, n, k, sigma)
    assert s == 17
    err = np.sqrt(np.mean((rec - X[perm]) ** 2))
    assert err > 0.1 * sigma and np.max(np.abs(rec - X[perm])) > 1.0
    # two releases with the same integer seed share U but not noise
    rel2 = swd.release_projections(X, epsilon=1.0, delta=1e-4, k=k, clip_norm=clip, random_state=17)
    assert np.array_equal(rel2["directions"], rel["directions"])
    assert not np.allclose(np.sort(rel2["projections"], 0), np.sort(rel["projections"], 0))


@pytest.mark.parametrize("method", ["chernoff_beta", "bernstein"])
def test_hole3_foreign_directions_get_spectral_sensitivity(rng, method):
    n, d, k, R = 50, 200, 20, 1.0
    X = rng.standard_normal((n, d))
    plan = swd.plan_projection_release(n, d, epsilon=4.0, delta=1e-5, k=k, clip_norm=R, method=method)
    u = rng.standard_normal(d)
    U = np.repeat((u / np.linalg.norm(u))[:, None], k, axis=1)  # all-equal columns: Σ_j (zᵀu_j)² = k at z = u
    assert plan.unit_squared_sensitivity < k  # the Beta bound assumed for a uniformly random U
    rel = swd.release_projections(X, U=U, plan=plan)
    true_sensitivity = 2 * R * np.sqrt(k)
    # the noise multiplier with respect to the sensitivity this U really has is at least the planned z
    assert rel.params["sigma"] / true_sensitivity >= plan.noise_multiplier * (1 - 1e-9)
    assert rel.params["foreign_directions"]
    # old code: σ = z·2R·sqrt(w) whatever U was, i.e. a multiplier below z for this U
    assert plan.noise_multiplier * 2 * R * np.sqrt(plan.unit_squared_sensitivity) / true_sensitivity < plan.noise_multiplier
    # a U the party drew itself keeps the Beta-bound σ
    own = swd.release_projections(X, plan=plan, random_state=0)
    assert own.params["sigma"] == pytest.approx(plan.sigma())


def _toy(rng, n=60, d=6):
    Xs = rng.normal(size=(n, d))
    ys = (Xs[:, 0] > 0).astype(int)
    return Xs, ys, rng.normal(size=(n, d)) + 1.0


def test_hole5_dpda_keeps_no_realised_batch_sizes(rng):
    Xs, ys, Xt = _toy(rng)
    m = DPDA(epsilon=4.0, epochs=2, batch_size=8, hidden=(4,), random_state=0).fit_domains(Xs, ys, Xt)
    assert {f.name for f in dataclasses.fields(m.train_log_)} == {"steps", "seconds", "steps_per_epoch"}
    n_steps = m.n_steps_

    def lists_of_step_length(obj, depth=0):
        if depth > 3:
            return []
        if isinstance(obj, (list, tuple)) and len(obj) == n_steps and all(isinstance(v, (int, np.integer)) for v in obj):
            return [obj]
        if isinstance(obj, dict):
            return [x for v in obj.values() for x in lists_of_step_length(v, depth + 1)]
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return [x for f in dataclasses.fields(obj) for x in lists_of_step_length(getattr(obj, f.name), depth + 1)]
        return []

    assert lists_of_step_length(vars(m)) == []


def test_hole2_gdpda_label_set_is_public(rng):
    Xs, ys, Xt = _toy(rng)
    with pytest.raises(ValueError, match="classes"):
        GDPDA(epochs=1, batch_size=8, hidden=(3,)).fit_domains(Xs, ys, Xt)
    with pytest.raises(ValueError, match="outside|public label set"):
        GDPDA(classes=(0, 2), epochs=1, batch_size=8, hidden=(3,)).fit_domains(Xs, ys, Xt)
    # the head width is the public label set's, even when a class is absent from the private labels
    m = GDPDA(classes=(0, 1, 2), epochs=1, batch_size=8, hidden=(3,), random_state=0).fit_domains(Xs, ys, Xt)
    assert m.network_.label_head.out_features == 3 and list(m.classes_) == [0, 1, 2]


def test_dpda_spends_the_epsilon_asked_for(rng):
    """Issue 13: ε = 8 and ε = 3 give different models spending ≈ 8 and ≈ 3 (σ calibrated, not a cap)."""
    Xs, ys, Xt = _toy(rng, n=80)
    kw = dict(epochs=2, batch_size=8, hidden=(4,), random_state=0, reproducible_noise=True)
    m8 = DPDA(epsilon=8.0, **kw).fit_domains(Xs, ys, Xt)
    m3 = DPDA(epsilon=3.0, **kw).fit_domains(Xs, ys, Xt)
    assert m8.guarantee_.epsilon == pytest.approx(8.0, abs=0.05)
    assert m3.guarantee_.epsilon == pytest.approx(3.0, abs=0.05)
    assert m8.n_steps_ == m3.n_steps_ == 20
    assert not np.allclose(m8.predict_proba(Xt), m3.predict_proba(Xt))
    # a fixed noise multiplier makes ε a cap, only when the user asks for it
    capped = DPDA(epsilon=8.0, noise_multiplier=8.0, **kw).fit_domains(Xs, ys, Xt)
    assert capped.guarantee_.epsilon < 1.0


def test_min_steps_floor_and_small_target_batch(rng):
    """Issue 13: a training length in steps holds on small data; B is capped at the domain sizes."""
    Xs, ys, Xt = _toy(rng, n=100)
    m = DPSWDAdapter(epsilon=None, epochs=1, min_steps=30, k=8, random_state=0).fit_domains(Xs, ys, Xt)
    assert m.train_result_.steps == 30  # 1 epoch of 100 rows at B = 100 would be a single step
    p = DPSWDAdapter(epsilon=5.0, design="per-step", epochs=1, min_steps=6, k=8, random_state=0).fit_domains(Xs, ys, Xt)
    assert p.guarantee_.valid and p.guarantee_.details["batch_size"] == 100
    d = dann_mod.DANN(epochs=1, min_steps=25, batch_size=50, hidden=(3,), random_state=0).fit_domains(Xs, ys, Xt)
    assert d.n_steps_ == 25


def test_prima_dpsgd_matches_opacus_per_sample_clipped_sums(rng):
    """One DP-SGD engine: our per-example clipped sums equal Opacus' (the oracle) on PRIMA's heads."""
    opacus = pytest.importorskip("opacus")
    from dpadapt.alignment.dp_training import SubspaceHeads, _loss
    from dpadapt.deep.dpsgd import per_example_clipped_sum

    torch.manual_seed(0)
    model = SubspaceHeads([3, 4], 3, "mlp", (5,))
    x = torch.as_tensor(rng.standard_normal((11, 7)) * 3, dtype=torch.float32)
    y = torch.as_tensor(rng.integers(0, 3, 11))
    C = 0.7
    ours, norms = per_example_clipped_sum(model, _loss, x, y, C)
    gsm = opacus.GradSampleModule(model, loss_reduction="mean")
    gsm.zero_grad()
    _loss(gsm(x), y).backward()  # mean reduction: Opacus rescales grad_sample to each example's own gradient
    per = {n: p.grad_sample for n, p in gsm.named_parameters()}
    sq = sum(g.flatten(1).pow(2).sum(1) for g in per.values())
    w = torch.clamp(C / sq.sqrt(), max=1.0)
    torch.testing.assert_close(norms, sq.sqrt(), rtol=1e-4, atol=1e-5)
    for name, g in per.items():
        torch.testing.assert_close(ours[name.removeprefix("_module.")], torch.einsum("i,i...->...", w, g), rtol=1e-4, atol=1e-5)
    assert float(norms.max()) > C  # clipping was active


def test_families_plan_release_adapt(rng):
    """The dpswd and dpda families run plan → release → adapt; no raw row released; shared U, fresh noise."""
    from dpadapt.deep import families as fam
    from dpadapt.configs.deep import DPDAConfig, DPSWDConfig
    from dpadapt.release import assert_no_raw_rows

    X = rng.standard_normal((60, 4))
    cfg = DPSWDConfig(epsilon=2.0, k=10, clip_norm=3.0, random_state=5)
    plan = fam.plan_dpswd(cfg, {"n": 60, "d": 4})
    assert plan.guarantee.valid and plan.guarantee.epsilon == pytest.approx(2.0)
    r1, r2 = fam.release_dpswd(plan, X), fam.release_dpswd(plan, X)
    assert_no_raw_rows(r1, X)
    assert np.array_equal(r1["directions"], r2["directions"]) and not np.allclose(r1["projections"], r2["projections"])
    weak = DPSWDConfig(epsilon=50.0, k=10, clip_norm=3.0, random_state=5)  # small σ: the distance sees a shift
    r3 = fam.release_dpswd(fam.plan_dpswd(weak, {"n": 60, "d": 4}), X)
    assert fam.adapt_dpswd(r3, X + 3.0, weak) > fam.adapt_dpswd(r3, X, weak)
    Xs, ys, Xt = _toy(rng, n=60)
    dcfg = DPDAConfig(epsilon=3.0, epochs=2, batch_size=10, hidden=(4,), random_state=0)
    dplan = fam.plan_dpda(dcfg, {"n_source": 60, "n_target": 60})
    assert dplan.guarantee.epsilon == pytest.approx(3.0, abs=0.05)
    rel = fam.release_dpda(dplan, (Xs, ys, Xt))
    assert_no_raw_rows(rel, Xt)
    model = fam.adapt_dpda(rel)
    assert model.predict(Xt).shape == (60,) and model.guarantee.to_dict() == dplan.guarantee.to_dict()
    from dpadapt.api import families

    assert {"dpswd", "dpda"} <= set(families())
