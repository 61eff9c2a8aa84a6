"""The sound SSP design (issue 23): its receiver-side math, the guard, the rule and the estimator."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from dpadapt.release import ReleaseError
from dpadapt.sound import SoundDA, basis, plan, release
from dpadapt.sound import Config as SoundConfig
from dpadapt.sound.guard import guarded
from dpadapt.sound.rule import choose
from dpadapt.sound.spaces import mapped_rows
from dpadapt.sound.ssp import lda_from_moments, ridge_from_moments


def _two_gaussians(rng, n=400, d=5, shift=1.5, scale=None):
    scale = np.ones(d) if scale is None else scale
    y = np.arange(n) % 2
    X = rng.normal(size=(n, d)) * scale
    X[:, 0] += np.where(y == 1, shift, -shift)
    return X, y


def _moments(Z, y, K=2):
    S = np.zeros((K, Z.shape[1]))
    np.add.at(S, y, Z)
    return S, np.bincount(y, minlength=K).astype(float), Z.T @ Z


def test_lda_from_exact_moments_uses_the_within_class_covariance(rng):
    # the class signal sits on a low-variance axis next to a high-variance nuisance axis: LDA must whiten
    X, y = _two_gaussians(rng, shift=0.3, scale=np.array([0.1, 3.0, 1.0, 1.0, 1.0]))
    X[:, 1] += 2.0 * X[:, 0]  # correlated nuisance: a nearest-mean rule is fooled, LDA is not
    W, b = lda_from_moments(*_moments(X, y), lam=1e-6)
    lda = np.mean(np.argmax(X @ W.T + b, axis=1) == y)
    S, c, _ = _moments(X, y)
    mu = S / c[:, None]
    ncm = np.mean(np.argmin(((X[:, None, :] - mu[None]) ** 2).sum(-1), axis=1) == y)
    assert lda > 0.95 and lda > ncm + 0.1


def test_ridge_classifier_is_least_squares_on_the_class_indicators(rng):
    X, y = _two_gaussians(rng, n=200, d=4)
    S, _, M = _moments(X, y)
    W, b = ridge_from_moments(S, M, lam=3.0)
    Y = np.eye(2)[y]
    assert np.allclose(W.T, np.linalg.solve(X.T @ X + 3.0 * np.eye(4), X.T @ Y)) and not b.any()
    # noise can make M indefinite: only its PSD part is inverted, so a negative eigenvalue near -λ cannot blow up
    bad = M - (np.linalg.eigvalsh(M)[0] + 3.0 - 1e-9) * np.outer(*(2 * [np.linalg.eigh(M)[1][:, 0]]))
    assert np.abs(ridge_from_moments(S, bad, lam=3.0)[0]).max() < 1e3  # 1/(−3 + 3 + 1e-9) would be ~1e9·|S|
    assert np.mean(np.argmax(X @ W.T, axis=1) == y) > 0.8


def test_heavy_ridge_tends_to_the_nearest_mean_rule_not_to_the_majority_class(rng):
    # 3:1 class imbalance; with a huge ridge the classifier must still separate the classes (the scale
    # of the covariance is kept), not predict the larger class everywhere
    X, y = _two_gaussians(rng, n=400, d=3, shift=1.0)
    y = (X[:, 0] > -0.7).astype(int)
    W, b = lda_from_moments(*_moments(X, y), lam=1e9)
    pred = np.argmax(X @ W.T + b, axis=1)
    assert np.unique(pred).size == 2 and np.mean(pred == y) > 0.8


def test_guard_rejects_a_refinement_that_follows_clusters_unlike_the_classes(rng):
    # two tight clusters along axis 1; the DP classifier separates along axis 0 (the class axis)
    n = 300
    Z = rng.normal(scale=0.05, size=(n, 2))
    Z[:, 1] += np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    Z[:, 0] += rng.normal(scale=0.3, size=n)
    W, b = np.array([[-1.0, 0.0], [1.0, 0.0]]), np.zeros(2)
    kept = guarded(Z, W, b, min_agreement=0.9)
    assert not kept.kept and kept.agreement < 0.9
    assert np.array_equal(kept.W, W)
    loose = guarded(Z, W, b, min_agreement=0.0)
    assert loose.kept  # the same refinement passes a guard with no threshold: the guard is what stops it


def test_rule_reads_only_public_facts_and_covers_every_type_and_epsilon():
    import inspect

    from dpadapt.sound.rule import DESIGNS, RULE, grid_point

    assert set(inspect.signature(choose).parameters) == {"feature_type", "n", "n_classes", "n_features", "epsilon"}
    assert {f["design"] for f in RULE.values()} <= set(DESIGNS)
    c = choose(feature_type="table", n=300, n_classes=2, n_features=25, epsilon=8.0)
    assert c.space == "features"  # a declared table is small: no basis needed
    for ft in ("dense", "counts", "table"):
        for eps in (None, 0.5, 1.0, 3.0, 8.0, 20.0):
            assert (ft, grid_point(eps)) in RULE
    assert grid_point(3.0) == 2.0 and grid_point(0.5) == 1.0 and grid_point(20.0) == 8.0
    with pytest.raises(ValueError, match="features"):  # the SSP design's d × d moment in the feature space
        choose(feature_type="table", n=300, n_classes=2, n_features=10000, epsilon=None)
    with pytest.raises(TypeError):
        choose(X=np.zeros((3, 3)))  # no private rows can be passed


def test_box_map_refuses_values_outside_the_declared_range():
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        mapped_rows(np.array([[0.5, 1.5]]), log1p=False, norm="box")
    assert np.linalg.norm(mapped_rows(np.ones((2, 4)), log1p=False, norm="box"), axis=1) == pytest.approx(1.0)


def test_estimator_private_nonprivate_and_release_contents(rng):
    Xs, ys = _two_gaussians(rng, n=600, d=30)
    Xt, yt = _two_gaussians(rng, n=300, d=30)
    Xt = Xt + 0.2
    nonpriv = SoundDA(epsilon=None, random_state=0).fit_domains(Xs, ys, Xt)
    assert nonpriv.score(Xt, yt) > 0.85
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        priv = SoundDA(epsilon=8.0, classes=(0, 1), random_state=0).fit_domains(Xs, ys, Xt)
    assert priv.design_ == "ssp"
    rel = priv.release_
    assert set(rel.arrays) == {"sums", "counts", "second"}  # aggregates only, never a row
    assert rel.arrays["second"].shape[0] == rel.arrays["sums"].shape[1] and rel.guarantee.epsilon == pytest.approx(8.0)
    assert priv.score(Xt, yt) > 0.6
    assert priv.predict_proba(Xt).shape == (300, 2)


def test_release_refuses_a_basis_it_was_not_planned_with(rng):
    Xs, ys = _two_gaussians(rng, n=100, d=30)
    cfg = SoundConfig(epsilon=1.0, classes=(0, 1))
    p = plan(cfg, {"n_source": 100, "n_features": 30})
    assert p.calibration["choice"].space == "pca"
    from dpadapt.privacy.mechanisms import random_streams

    with pytest.raises(ReleaseError, match="basis"):
        release(p, Xs, ys, random_streams(0)[1])
    b = basis(Xs, cfg, p.calibration["choice"])
    assert release(p, Xs, ys, random_streams(0)[1], basis_release=b).params["basis_sha256"] == b.params["sha256"]


def test_sound_da_in_a_skada_pipeline():
    skada = pytest.importorskip("skada")
    from sklearn.base import clone
    from skada.datasets import make_shifted_datasets

    X, y, sd = make_shifted_datasets(n_samples_source=30, n_samples_target=20, shift="covariate_shift", noise=None, random_state=0)
    pipe = skada.make_da_pipeline(SoundDA(epsilon=8.0, classes=(0, 1), random_state=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X, y, sample_domain=sd)
    target = sd < 0
    assert pipe.predict(X[target]).shape == (target.sum(),)
    assert clone(pipe).get_params()["soundda__epsilon"] == 8.0


def test_two_party_cli_basis_release_adapt(tmp_path, monkeypatch, rng):
    from dpadapt.cli.main import main
    from dpadapt.io import save_table
    from dpadapt.release import Release

    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    Xs, ys = _two_gaussians(rng, n=400, d=30)
    Xt, yt = _two_gaussians(rng, n=200, d=30)
    save_table(tmp_path / "s.npz", Xs, ys)
    save_table(tmp_path / "t.npz", Xt, yt)
    from dpadapt.privacy.ledger import Ledger, fingerprint

    Ledger(tmp_path / "ledger.sqlite").set_budget("source", fingerprint(tmp_path / "s.npz"), 10.0, 1e-5)
    p = str(tmp_path)
    assert main(["basis", "--method", "sound", "--data", f"{p}/t.npz", "--out", f"{p}/b.release"]) == 0
    assert main(["release", "sound", "--data", f"{p}/s.npz", "--basis", f"{p}/b.release", "--classes", "0,1",
                 "--epsilon", "8", "--delta", "1e-5", "--out", f"{p}/m.release", "--seed", "0"]) == 0
    rel = Release.load(f"{p}/m.release")
    assert rel.kind == "class_moments" and rel.guarantee.epsilon == pytest.approx(8.0)
    assert main(["adapt", "sound", "--release", f"{p}/m.release", "--release", f"{p}/b.release",
                 "--data", f"{p}/t.npz", "--out", f"{p}/model.dpadapt"]) == 0
    from dpadapt.modelio import load_model

    assert np.mean(load_model(f"{p}/model.dpadapt").predict(Xt) == yt) > 0.7


@pytest.mark.parametrize("feature_type, epsilon, design, model_type", [
    ("dense", 1.0, "ssp", "SoundModel"),
    ("dense", 2.0, "classstats", "ClassStatsModel"),
    ("table", 4.0, "ssp", "SoundModel"),
    ("table", 4.0, "ncm", "DPNearestClassMean"),  # designs the selection may name (round 3 names them in no cell)
    ("table", 1.0, "dplr", "DPLogisticRegression"),
])
def test_estimator_dispatches_once_to_the_rules_route_and_carries_its_guarantee(monkeypatch, feature_type, epsilon, design, model_type):
    import dpadapt.sound as sound
    from dpadapt.datasets.synthetic import contract_blobs
    from dpadapt.sound import rule

    if design in ("ncm", "dplr"):
        monkeypatch.setitem(rule.RULE, (feature_type, epsilon), {**rule.RULE[(feature_type, epsilon)], "design": design})
    choice = choose(feature_type=feature_type, n=60, n_classes=3, n_features=6, epsilon=epsilon)
    assert choice.design == design
    calls = []
    routes = {name: (lambda f, name=name: lambda *a: calls.append(name) or f(*a))(f) for name, f in sound.ROUTES.items()}
    monkeypatch.setattr(sound, "ROUTES", routes)
    d = contract_blobs(0)
    m = SoundDA(epsilon=epsilon, classes=(0, 1, 2), feature_type=feature_type, random_state=0).fit_domains(d["Xs"], d["ys"], d["Xt"])
    assert calls == [design] and m.design_ == design and type(m.model_).__name__ == model_type
    g = m.guarantee_
    assert g.party == "source" and g.epsilon == pytest.approx(epsilon) and g.valid
    if design == "dplr":  # the route's own guarantee (noisy GD composition), not the SSP release's
        assert g == m.model_.guarantees_["source"] and m.release_ is None
    else:
        assert g == m.release_.guarantee and m.release_.method == ("classstats" if design != "ssp" else "sound")
    assert (m.basis_release_ is not None) == (design != "ncm" and design != "dplr" and choice.space == "pca")


def test_the_two_party_sound_method_refuses_a_cell_whose_design_is_not_ssp():
    with pytest.raises(ValueError, match="'classstats'"):
        plan(SoundConfig(epsilon=2.0, classes=(0, 1)), {"n_source": 300, "n_features": 25})


def test_guard_takes_sparse_rows_like_dense_ones(rng):
    import scipy.sparse as sp

    X, y = _two_gaussians(rng, n=200, d=4)
    W, b = lda_from_moments(*_moments(X, y), lam=1.0)
    dense, sparse = guarded(X, W, b, min_agreement=0.5), guarded(sp.csr_matrix(X), W, b, min_agreement=0.5)
    assert dense.kept == sparse.kept and np.allclose(dense.W, sparse.W) and dense.agreement == sparse.agreement
