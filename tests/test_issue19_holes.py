"""Issue 19: every way around the guarantee found by the review, each run as the attack (D vs D′).

Each test reproduces the attack of one item and would fail on the code before the fix: a hostile
basis (1), float32 overflow (3), a one-class source (4), δ ≥ 1/n (7), reproducible noise (8), ...
The ledger kill loop (5) lives in ``tests/test_ledger_kill_loop.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpadapt import classstats
from dpadapt.classstats import _digest
from dpadapt.privacy.mechanisms import NonFiniteError, class_statistics, clip_rows, moment_statistics, random_streams
from dpadapt.release import Release, ReleaseError

CL = (0, 1, 2)


class _NoNoise:
    """A stand-in noise source: any attempt to draw from it is a test failure."""

    def __getattr__(self, name):
        raise AssertionError("noise was drawn")


def _neighbours(rng, n=60, d=8, feature=2):
    """D: feature ``feature`` is 0 in every row; D′: one row of class 0 has it set (the record to detect)."""
    X = np.abs(rng.normal(size=(n, d))) + 0.1
    X[:, feature] = 0.0
    y = np.arange(n) % len(CL)
    Xp = X.copy()
    Xp[0, feature] = 1.0
    return (X, y), (Xp, y)


def _crafted_basis(honest: Release, mean: np.ndarray, comp: np.ndarray) -> Release:
    """The receiver's basis with its arrays replaced (and a matching digest: the digest proves nothing)."""
    params = dict(honest.params, sha256=_digest(mean, comp))
    return Release(method=honest.method, kind=honest.kind, owner="target", arrays={"mean": mean, "components": comp},
                   guarantee=honest.guarantee, params=params)


# --- item 1: a foreign basis is untrusted input -----------------------------------------------


def test_item1_hostile_basis_is_refused_on_both_neighbours(rng):
    (X, y), (Xp, yp) = _neighbours(rng)
    d = X.shape[1]
    cfg = classstats.Config(epsilon=2.0, classes=CL, k=2, random_state=0)
    honest = classstats.basis(rng.normal(size=(40, d)), cfg)
    plan = classstats.plan(cfg, {"n_source": len(y), "n_features": d, "k": 2})
    inf_comp = np.zeros((d, 2))
    inf_comp[0, 0] = inf_comp[1, 1] = 1.0
    inf_comp[2, 0] = np.inf  # the attack of the issue: NaN sums exactly when a row has feature 2 ≠ 0
    huge = np.zeros((d, 2))
    huge[0, 0], huge[2, 1], huge[1, 1] = 1.0, 1.7e308, 1.7e308  # finite: passes a finiteness check
    far_mean = np.zeros(d)
    far_mean[1] = -1e300
    hostile = {
        "inf": (np.zeros(d), inf_comp),
        "huge finite": (np.zeros(d), huge),
        "crafted mean": (far_mean, np.eye(d)[:, :2]),
        "not orthonormal": (np.zeros(d), 3.0 * np.eye(d)[:, :2]),
        "wrong shape": (np.zeros(d + 1), np.eye(d + 1)[:, :2]),
    }
    for name, (mean, comp) in hostile.items():
        basis = _crafted_basis(honest, mean, comp)
        for Xa, ya in ((X, y), (Xp, yp)):  # the same answer on D and D′: a refusal, before any noise
            with pytest.raises(ReleaseError, match="basis"):
                classstats.release(plan, Xa, ya, _NoNoise(), basis_release=basis)
    _, noise = random_streams(0)
    rel = classstats.release(plan, X, y, noise, basis_release=honest)  # an honest basis still works
    assert np.all(np.isfinite(rel["sums"]))


def test_item1_non_finite_rows_never_reach_the_noise():
    bad = np.array([[np.nan, 0.0], [0.5, 0.5]])
    with pytest.raises(NonFiniteError):
        clip_rows(bad, 1.0)  # NaN > 1 is false: the clip used to let it through
    # a finite row whose norm overflows is clipped, not refused (a refusal would reveal it: issue 27)
    clipped = clip_rows(np.array([[1e308, 1e308], [3.0, 4.0]]), 1.0)
    assert np.allclose(clipped, [[2**-0.5, 2**-0.5], [0.6, 0.8]])
    with pytest.raises(NonFiniteError):
        class_statistics(bad, np.array([0, 1]), 2, sigma=1.0, relation="replace_one", noise=_NoNoise())
    with pytest.raises(NonFiniteError):
        moment_statistics(bad, sigma=1.0, relation="replace_one", noise=_NoNoise())


# --- item 3: clipping enforced in the dtype the computation runs in ---------------------------


def test_item3_dpda_row_finite_in_float64_but_inf_in_float32_is_refused(rng):
    from dpadapt.deep.dpda import DPDA

    Xs, Xt = rng.normal(size=(20, 4)), rng.normal(size=(20, 4))
    ys = np.arange(20) % 2
    Xt_prime = Xt.copy()
    Xt_prime[3, 1] = 1e39  # passes the float64 check; ∞ once the network casts to float32
    kw = dict(epsilon=5.0, delta=1e-5, noise_multiplier=1.0, epochs=1, batch_size=5, hidden=(3,), random_state=0)
    model = DPDA(**kw).fit_domains(Xs, ys, Xt)
    assert all(np.all(np.isfinite(p.detach().numpy())) for p in model.network_.parameters())
    with pytest.raises(ValueError, match="float32"):  # before: NaN parameters exactly when the row was used
        DPDA(**kw).fit_domains(Xs, ys, Xt_prime)


def test_item3_dpswd_target_round_and_dpsgd_norms_refuse_overflow(rng):
    import torch

    from dpadapt.deep import swd_da
    from dpadapt.deep.dpsgd import clip_weights
    from dpadapt.privacy.mechanisms import torch_gaussian_noise
    from dpadapt.transport import swd

    g = swd_da.mlp_feature_extractor(6, hidden=(8,), out=4)
    Xt = rng.standard_normal((32, 6))
    Xt[5, 0] = 1e39
    U = swd.directions(4, 10, rng)
    with pytest.raises(ValueError, match="float32"):  # before: NaN rows in the release iff row 5 was sampled
        swd_da.target_projections(g, Xt, U, batch_size=8, sigma=0.5, clip_norm=1.0, noise=_NoNoise())
    with pytest.raises(NonFiniteError):  # clamp keeps NaN: the clip would not bound this example
        clip_weights(torch.tensor([1.0, float("nan"), float("inf")]), 1.0)
    with pytest.raises(NonFiniteError):
        torch_gaussian_noise(torch.tensor([1.0, float("inf")]), 1.0, _NoNoise())


def test_item3_prima_hostile_target_covariance_is_refused(rng):
    from dpadapt.alignment import prima

    Xs, Xt = np.abs(rng.normal(size=(40, 6))), np.abs(rng.normal(size=(40, 6)))
    ys = np.arange(40) % 3
    config = prima.PrimaConfig(source_release="dpsgd_heads", epsilon=2.0, delta=1e-5, classes=CL, subspace_size=3, epochs=1)
    plan = prima.plan(config, {"n_source": 40, "n_target": 40, "n_features": 6})
    public, noise = random_streams(0)
    target = prima.release_target(plan, Xt, public, noise)
    hostile = dict(target.arrays)
    C = hostile["cov_0"].copy()
    C[0, 0] = 1e78  # shape-checked only before: NaN heads on D′ (8/10), never on D
    hostile["cov_0"] = C
    bad = Release(method=target.method, kind=target.kind, owner="target", arrays=hostile, guarantee=target.guarantee,
                  params=target.params)
    with pytest.raises(ReleaseError, match="norm"):
        prima.release_source_heads(plan, bad, Xs, ys, public, noise)
    nan = dict(target.arrays, cov_0=np.full_like(target["cov_0"], np.nan))
    with pytest.raises(ReleaseError, match="NaN"):
        prima.release_source_heads(plan, Release(method=target.method, kind=target.kind, owner="target", arrays=nan,
                                                 guarantee=target.guarantee, params=target.params), Xs, ys, public, noise)


# --- item 4: a one-class source is a valid input wherever the label set is public -------------


def _one_record_of_class_1(rng, n=30, d=6):
    X = np.abs(rng.normal(size=(n, d)))
    y = np.zeros(n, dtype=int)
    y[0] = 1  # D: one record of class 1; D′: that record relabelled 0 (a one-class source)
    return X, y, np.zeros(n, dtype=int), np.abs(rng.normal(size=(n, d)))


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", ["ClassStatsDA", "DPNearestClassMean", "DPLogisticRegression", "DPOTAdapter", "PRIMA"])
def test_item4_one_class_neighbour_is_released_too(rng, name):
    from dpadapt.alignment.estimators import PRIMA
    from dpadapt.classstats import ClassStatsDA, DPLogisticRegression, DPNearestClassMean
    from dpadapt.transport.da import DPOTAdapter

    cls = {"ClassStatsDA": ClassStatsDA, "DPNearestClassMean": DPNearestClassMean,
           "DPLogisticRegression": DPLogisticRegression, "DPOTAdapter": DPOTAdapter, "PRIMA": PRIMA}[name]
    kw = {"epsilon": 2.0, "delta": 1e-5, "classes": (0, 1), "random_state": 0}
    if name == "ClassStatsDA":
        kw["k"] = 3
    if name == "PRIMA":
        kw.update(source_release="dpsgd_heads", subspace_size=3, epochs=1)
    X, y, y_prime, Xt = _one_record_of_class_1(rng)
    guarantees = []
    for labels in (y, y_prime):  # before: D released, D′ raised "at least 2 classes" — δ = 1 for that pair
        est = cls(**kw).fit_domains(X, labels, Xt)
        guarantees.append(est.guarantee_ if name != "PRIMA" else est.guarantees_["source"])
    assert guarantees[0].to_dict() == guarantees[1].to_dict() and guarantees[0].valid


def test_item4_check_labels_with_a_public_label_set():
    from dpadapt.validation import check_labels

    assert check_labels([0, 0, 0], 3, classes=(0, 1)).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="public label set"):
        check_labels([0, 2], 2, classes=(0, 1))
    with pytest.raises(ValueError, match="at least 2"):
        check_labels([0, 0], 2)  # non-private fits that infer the label set keep the requirement


# --- item 11: noise from a vetted sampler (no floating-point support gap) ---------------------


def _gap_fraction(outputs: np.ndarray) -> float:
    """Share of outputs in (−1, 1) that are not multiples of 2⁻⁵³.

    ``fl(1 + L)`` with |fl(1 + L)| < 1 is always a multiple of 2⁻⁵³ (Sterbenz), so such an output of
    ``mechanism(0)`` can never come from ``mechanism(1)`` with ``value + float noise`` (Mironov 2012):
    a test with ε = ∞.
    """
    small = outputs[np.abs(outputs) < 1]
    return float(np.mean(np.ldexp(small, 53) != np.round(np.ldexp(small, 53))))


def test_item11_vetted_samplers_have_no_support_gap():
    from dpadapt.privacy.mechanisms import NoiseSource, lattice, laplace_mechanism, vetted_gaussian

    n = 2000
    old = np.random.default_rng(0)  # the old ``value + numpy noise`` samplers
    for draw in (lambda v: v + old.laplace(0.0, 1.0, n), lambda v: v + old.normal(0.0, 1.0, n)):
        assert _gap_fraction(draw(np.zeros(n))) > 0.2 and _gap_fraction(draw(np.ones(n))) == 0.0
    for draw, (scale, sens, spread) in (
        (lambda v: laplace_mechanism(v, 1.0, 1.0, NoiseSource(), party="source").value, (1.0, 1.0, float(n))),
        (lambda v: vetted_gaussian(v, 1.0, NoiseSource(), sensitivity=1.0), (1.0, 1.0, n**0.5)),
    ):
        step, _ = lattice(scale, sens, spread)  # public: from the scale, the sensitivity and the size only
        for value in (0.0, 1.0, 0.3):
            out = draw(np.full(n, value))
            assert np.array_equal(out / step, np.round(out / step))  # every output, whatever the input, on gℤ
            assert np.unique(out).size > n // 2


def test_item11_vetted_gaussian_audit_passes_and_undernoised_control_fails():
    """The one-release mechanisms' sampler, audited on the worst-case shift Δ at the claimed (ε, δ).

    Class statistics (Δ = 2), moments (√6) and sliced histograms (√(2k)) all add i.i.d. noise of
    σ = z·Δ to a vector that moves by Δ: one coordinate shifted by Δ is the worst case for each.
    """
    from dpadapt.privacy import accounting
    from dpadapt.privacy.audit import epsilon_lower_bound
    from dpadapt.privacy.mechanisms import NoiseSource, vetted_gaussian

    eps, delta, n, sens = 1.0, 1e-5, 20_000, 2.0
    for stated, should_pass in ((sens, True), (sens / 3, False)):
        sigma = accounting.analytic_gaussian_sigma(eps, delta, stated)
        a = vetted_gaussian(np.zeros(n), sigma, NoiseSource(), sensitivity=stated)
        b = vetted_gaussian(np.full(n, sens), sigma, NoiseSource(), sensitivity=stated)
        assert abs(a.std() / sigma - 1) < 0.03
        assert epsilon_lower_bound(a, b, delta=delta).passes(eps) == should_pass


def test_item11_one_release_mechanisms_use_the_vetted_sampler(monkeypatch):
    from dpadapt.privacy import mechanisms as mech

    calls = []
    real = mech.vetted_gaussian
    monkeypatch.setattr(mech, "vetted_gaussian", lambda v, s, n, **kw: calls.append(np.size(v)) or real(v, s, n, **kw))
    noise = mech.NoiseSource()
    Z = np.eye(3)
    mech.class_statistics(Z, np.array([0, 1, 1]), 2, sigma=1.0, relation="replace_one", noise=noise)
    mech.moment_statistics(Z, sigma=1.0, relation="replace_one", noise=noise)
    mech.sliced_histogram_release(Z, np.eye(3)[:, :2], np.linspace(-1, 1, 5), sigma=1.0, noise=noise)
    assert calls == [2 * 3 + 2, 1 + 3 + 6, 2 * 4]


# --- item 8: reproducible noise is recorded ----------------------------------------------------


def test_item8_reproducible_noise_marks_the_guarantee_invalid(rng):
    from dpadapt.classstats import ClassStatsDA, DPLogisticRegression
    from dpadapt.privacy.guarantee import REPRODUCIBLE_NOISE_REASON

    X, y = rng.normal(size=(30, 5)), np.arange(30) % 3
    for cls in (ClassStatsDA, DPLogisticRegression):
        kw = {"epsilon": 2.0, "classes": CL, "random_state": 7}
        secret = cls(**kw).fit_domains(X, y, X)
        replayable = cls(**kw, reproducible_noise=True).fit_domains(X, y, X)
        assert secret.guarantee_.valid
        assert not replayable.guarantee_.valid and REPRODUCIBLE_NOISE_REASON in replayable.guarantee_.reasons
    cfg = classstats.Config(epsilon=2.0, classes=CL, k=0, random_state=7, reproducible_noise=True)
    plan = classstats.plan(cfg, {"n_source": 30, "n_features": 5, "k": 0})
    assert not plan.guarantee.valid  # the release carries the reason too
    _, noise = random_streams(7, reproducible_noise=True)
    assert classstats.release(plan, X, y, noise).guarantee.reasons == plan.guarantee.reasons


# --- item 7: δ ≥ 1/n refused on every sound path -----------------------------------------------


def test_item7_delta_above_one_over_n_is_refused_in_sound_mode(rng):
    from dpadapt.deep.swd_marginals import plan_marginals
    from dpadapt.discrepancy.private import noisy_frank_wolfe
    from dpadapt.privacy.families.dpda import plan_party
    from dpadapt.transport import swd

    X = rng.normal(size=(20, 4))  # n = 20: δ = 0.1 ≥ 1/n
    refusals = {
        "release_projections": lambda: swd.release_projections(X, epsilon=1.0, delta=0.1, k=2),
        "dp_swd": lambda: swd.dp_swd(X, X, epsilon=1.0, delta=0.1, k=2),
        "plan_marginals": lambda: plan_marginals(1.0, 0.1, n=20, k=2, bins=4),
        "noisy_frank_wolfe": lambda: noisy_frank_wolfe(X, X, 1.0, 0.1, r=1.0, K=3),
        "GDPDA source_delta": lambda: plan_party("source", 20, 5, 1.0, 0.1, 1.0, 1.0, "sound", (("label",),),
                                                 (("label",),), 10),
    }
    for name, call in refusals.items():
        with pytest.raises(ValueError, match="1/n"):
            call()
    with pytest.warns(UserWarning, match="1/n"):  # paper mode reproduces the publication: a warning only
        noisy_frank_wolfe(X, X, 1.0, 0.1, r=1.0, K=3, privacy_mode="paper")


# --- item 9: request / slices disclose un-noised summaries only of data declared public ---------


def test_item9_request_refuses_a_dataset_with_a_budget_unless_declared_public(rng, tmp_path):
    from dpadapt.cli.main import main
    from dpadapt.io import save_table
    from dpadapt.privacy.ledger import Ledger, fingerprint

    data, ledger = tmp_path / "target.npz", tmp_path / "ledger.sqlite"
    save_table(data, rng.normal(size=(30, 6)))
    args = ["request", "--data", str(data), "--classes", "0,1", "--n-source", "30", "--ledger", str(ledger)]
    assert main([*args, "--out", str(tmp_path / "a.release")]) == 0  # no budget: an unprotected receiver
    Ledger(ledger).set_budget("target", fingerprint(data), 1.0, 1e-6)
    assert main([*args, "--out", str(tmp_path / "b.release")]) == 1  # before: written silently
    assert not (tmp_path / "b.release").exists()
    assert main([*args, "--out", str(tmp_path / "c.release"), "--declare-public"]) == 0


# --- item 6: add/remove guarantees say that n is treated as public --------------------------------


def test_item6_add_remove_guarantee_states_that_n_is_public(rng):
    from dpadapt.classstats import DPLogisticRegression
    from dpadapt.privacy.guarantee import ADD_REMOVE_N_PUBLIC

    from dpadapt.api import ConfigError
    from dpadapt.classstats import DPNearestClassMean
    from dpadapt.privacy.guarantee import ADD_REMOVE_N_PRIVATE

    X, y = rng.normal(size=(30, 5)), np.arange(30) % 3
    # issue 27, item 3: DP-LR divides by n, so add/remove is not offered; the class statistics make it genuine
    with pytest.raises(ConfigError, match="add_remove"):
        DPLogisticRegression(epsilon=1.0, classes=CL, relation="add_remove").fit_domains(X, y)
    add = DPNearestClassMean(epsilon=1.0, delta=1e-4, classes=CL, relation="add_remove").fit_domains(X, y)
    rep = DPLogisticRegression(epsilon=1.0, classes=CL).fit_domains(X, y)
    assert ADD_REMOVE_N_PRIVATE in add.guarantee_.report() and ADD_REMOVE_N_PUBLIC not in add.guarantee_.report()
    assert ADD_REMOVE_N_PUBLIC not in rep.guarantee_.report()


# --- item 10: what PRIMA's target keeps is said in its Guarantee ------------------------------


def test_item10_prima_target_guarantee_says_the_model_keeps_the_exact_target_mean(rng):
    from dpadapt.alignment.estimators import PRIMA
    from dpadapt.privacy.families.prima import TARGET_KEEPS

    X, y = np.abs(rng.normal(size=(40, 6))), np.arange(40) % 3
    est = PRIMA(epsilon=2.0, delta=1e-5, classes=CL, basis_dim=4).fit_domains(X, y, X + 1.0)
    g_t = est.guarantees_["target"]
    assert g_t.epsilon == 0.0 and "target_mean" in g_t.report() and g_t.details["kept by the target"] == TARGET_KEEPS
    assert est.model_.target_mean is not None  # the exact target mean is kept, and now said to be


# --- item 12: the receiver's label set, a huge ε, the --seed help --------------------------------


def test_item12_receiver_label_set_huge_epsilon_and_seed_help(rng, capsys):
    from dpadapt.cli.main import main
    from dpadapt.privacy.guarantee import LARGE_EPSILON_WORDS, analytic_gaussian_guarantee

    X, y = rng.normal(size=(30, 5)), np.arange(30) % 3
    cfg = classstats.Config(epsilon=2.0, classes=CL, k=0)
    plan = classstats.plan(cfg, {"n_source": 30, "n_features": 5, "k": 0})
    _, noise = random_streams(0)
    rel = classstats.release(plan, X, y, noise)
    classstats.adapt(rel, X, cfg)
    with pytest.raises(ReleaseError, match="label set"):  # before: accepted silently
        classstats.adapt(rel, X, cfg.replace(classes=(0, 1, 2, 3)))
    huge = analytic_gaussian_guarantee(1e9, 1e-5, 1e-9, party="source", unit="record", relation="replace_one",
                                       theorem="t")
    assert LARGE_EPSILON_WORDS in huge.report()
    with pytest.raises(SystemExit):
        main(["adapt", "dpswd", "--help"])
    out = capsys.readouterr().out
    assert "seed of the noise" not in out and "fresh OS entropy" in out


def test_item4_cli_releases_a_one_class_source(rng, tmp_path, monkeypatch):
    from dpadapt.cli.main import main
    from dpadapt.io import save_table
    from dpadapt.privacy.ledger import Ledger, fingerprint

    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    X, y, y_prime, Xt = _one_record_of_class_1(rng)
    save_table(tmp_path / "target.npz", Xt)
    assert main(["request", "--data", str(tmp_path / "target.npz"), "--classes", "0,1", "--n-source", str(len(y)),
                 "--epsilon", "1", "--delta", "1e-6", "--design", "prototypes", "--out", str(tmp_path / "req.release")]) == 0
    for name, labels in (("d", y), ("d_prime", y_prime)):
        data = tmp_path / f"{name}.npz"
        save_table(data, X, labels)
        Ledger(tmp_path / "ledger.sqlite").set_budget("source", fingerprint(data), 4.0, 1e-5)
        assert main(["release", "dpot", "--data", str(data), "--request", str(tmp_path / "req.release"), "--epsilon", "1",
                     "--delta", "1e-6", "--n-classes", "2", "--out", str(tmp_path / f"{name}.release")]) == 0


def test_item1_cli_refuses_a_hostile_request_before_charging(rng, tmp_path, monkeypatch, capsys):
    from dpadapt import sound
    from dpadapt.cli.main import main
    from dpadapt.io import save_table
    from dpadapt.privacy.ledger import Ledger, fingerprint

    ledger = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("DPADAPT_LEDGER", str(ledger))
    (X, y), _ = _neighbours(rng, n=30, d=6)
    save_table(tmp_path / "source.npz", X, y)
    Ledger(ledger).set_budget("source", fingerprint(tmp_path / "source.npz"), 4.0, 1e-5)
    cfg = sound.Config(epsilon=1.0, delta=1e-6, classes=CL, design="prototypes")
    honest = sound.request(rng.normal(size=(20, 6)), cfg, len(y))
    comp = honest["components"].copy()
    comp[2, 0] = np.inf
    Release(method=honest.method, kind=honest.kind, owner="target", arrays={"mean": honest["mean"], "components": comp},
            guarantee=honest.guarantee, params=honest.params).save(tmp_path / "req.release")
    assert main(["release", "dpot", "--request", str(tmp_path / "req.release"), "--data", str(tmp_path / "source.npz"),
                 "--epsilon", "1", "--delta", "1e-6", "--n-classes", "3", "--out", str(tmp_path / "s.release")]) == 1
    err = capsys.readouterr().err
    assert "basis" in err and "NaN or infinite" in err, err
    assert not (tmp_path / "s.release").exists() and Ledger(ledger).history() == []


@pytest.mark.parametrize("design", ["prototypes", "selection"])
def test_item1_hostile_basis_is_refused_by_the_sound_design_too(rng, design):
    """The same attack on the sound default's request (either design a source this small may get): a crafted
    basis in the receiver's release request is refused as untrusted input for D and D′ alike, before any
    source row is read."""
    from dpadapt import sound
    from dpadapt.sound.request import Request

    (X, y), (Xp, yp) = _neighbours(rng, d=30)
    cfg = sound.Config(epsilon=0.5, classes=CL, random_state=0, design=design)
    honest = sound.request(rng.normal(size=(60, 30)), cfg, len(y))
    assert honest.params["space"] == "basis"
    k = honest.params["k"]
    inf_comp = np.eye(30)[:, :k]
    inf_comp[2, 0] = np.inf
    far_mean = np.zeros(30)
    far_mean[1] = -1e300
    for mean, comp in ((np.zeros(30), inf_comp), (far_mean, np.eye(30)[:, :k]), (np.zeros(30), 3.0 * np.eye(30)[:, :k])):
        hostile = Release(method=honest.method, kind=honest.kind, owner="target", arrays={"mean": mean, "components": comp},
                          guarantee=honest.guarantee, params=honest.params)
        for Xa, ya in ((X, y), (Xp, yp)):
            with pytest.raises(ReleaseError, match="basis"):
                sound.release(sound.plan(cfg, {"request": honest, "n_source": len(ya)}), hostile, Xa, ya, _NoNoise())
    plan = sound.plan(cfg, {"request": honest, "n_source": len(y)})
    released = sound.release(plan, Request.from_release(honest), X, y, random_streams(0)[1])
    assert np.all(np.isfinite(released["sums" if design == "prototypes" else "candidate_counts"]))


@pytest.mark.parametrize("family", ["classstats"])  # the sound default: tests/test_sound.py (forged releases)
def test_item1_hostile_statistics_are_refused_by_the_receiver_before_its_rows_are_mapped(rng, family, monkeypatch):
    """The other direction: the SOURCE's release is untrusted input for the receiver. Statistics with a
    NaN, an overflow, the wrong shape or an impossible σ are refused with one line before any target row
    is mapped; the honest release adapts."""
    import importlib

    mod = importlib.import_module(f"dpadapt.{family}")
    Xs, ys = np.abs(rng.normal(size=(90, 30))) + 0.1, np.arange(90) % len(CL)
    Xt = np.abs(rng.normal(size=(40, 30))) + 0.1
    cfg = mod.Config(epsilon=1.0, classes=CL, random_state=0)
    basis_rel, honest, _ = mod.run_parties(cfg, Xs, ys, Xt)
    k = honest["sums"].shape[1]
    nan_sums = honest["sums"].copy()
    nan_sums[0, 0] = np.nan
    hostile = [{"sums": nan_sums}, {"sums": np.full_like(honest["sums"], 1e309)}, {"counts": np.ones(len(CL) + 1)},
               {"sums": honest["sums"][:, : k - 1]}]
    calls = []
    monkeypatch.setattr(mod, "row_map", lambda *a, **kw: calls.append(1))
    for change in hostile:
        rel = Release(method=honest.method, kind=honest.kind, owner="source", arrays={**honest.arrays, **change},
                      guarantee=honest.guarantee, params=honest.params)
        with pytest.raises(ReleaseError, match="release"):
            mod.adapt(rel, Xt, cfg, basis_release=basis_rel)
    assert calls == []  # no target row was mapped for any hostile release
    monkeypatch.undo()
    assert mod.adapt(honest, Xt, cfg, basis_release=basis_rel).predict(Xt).shape == (40,)
