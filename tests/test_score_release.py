"""The second, calibrating release of the sound default (``dpadapt.sound.scores``): sensitivity at the worst case, a
statistical audit that fails for an under-noised control, the exact budget split and its composition, the receiver's
checks of the received files, and the receiver's estimates on data with a known prior and known calibration."""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings

import numpy as np
import pytest

from dpadapt.privacy import accounting
from dpadapt.privacy.audit import epsilon_lower_bound
from dpadapt.privacy.families.sound import composed_guarantee, score_histogram_plan, split_budget
from dpadapt.privacy.guarantee import REPRODUCIBLE_NOISE_REASON, compose_guarantees
from dpadapt.privacy.mechanisms import (
    SCORE_HISTOGRAM_SENSITIVITY,
    NoiseSource,
    observe_draws,
    release_score_histogram,
    score_histogram,
)
from dpadapt.release import ReleaseError
from dpadapt.sound import SoundDA, scores

EPS, DELTA = 1.0, 1e-5


def test_score_histogram_sensitivity_brute_force():
    """Every replace-one neighbour moves the table by ≤ √2 (exactly √2 when the cell changes), add/remove by 1."""
    rng = np.random.default_rng(0)
    K, B, n = 3, 5, 40
    bins, labels = rng.integers(0, B, n), rng.integers(0, K, n)
    base = score_histogram(bins, labels, K, B)
    moved = []
    for _ in range(300):
        b2, l2 = bins.copy(), labels.copy()
        i = rng.integers(n)
        b2[i], l2[i] = rng.integers(B), rng.integers(K)
        moved.append(np.linalg.norm(score_histogram(b2, l2, K, B) - base))
    assert max(moved) == pytest.approx(SCORE_HISTOGRAM_SENSITIVITY["replace_one"])
    assert set(np.round(moved, 12)) <= {0.0, round(math.sqrt(2.0), 12)}
    removed = score_histogram(bins[1:], labels[1:], K, B)
    assert np.linalg.norm(removed - base) == pytest.approx(SCORE_HISTOGRAM_SENSITIVITY["add_remove"])
    with pytest.raises(ValueError):
        score_histogram(bins, np.where(labels == 0, K, labels), K, B)  # a label outside the public set
    with pytest.raises(ValueError):
        score_histogram(np.full(n, B), labels, K, B)  # a bin outside the public bins


def _three_class_request(M: int = 3) -> scores.ScoreRequest:
    """A K = 3 score request (layout ``class-confidence``, M confidence bins) of a fixed linear model on 4 features."""
    from dpadapt.sound.receiver import SoundModel

    rng = np.random.default_rng(7)
    model = SoundModel(np.arange(3), False, None, None, rng.normal(size=(3, 4)), rng.normal(size=3), "discriminant")
    return scores.request(model, rng.normal(size=(500, 4)) * 2, confidence=M)


def test_class_confidence_layout_sensitivity_brute_force():
    """K > 2: each row — any finite row, extreme values whose scores overflow included — falls in exactly one (class, predicted class ×
    confidence) cell, so a replaced row moves the table by ≤ √2, a removed one by 1; the confusion matrix is its marginal."""
    req = _three_class_request()
    assert req.layout == "class-confidence" and req.num_bins == 3 * 3 and req.edges.size == 2
    rng = np.random.default_rng(1)
    n = 60
    X, y = rng.normal(size=(n, 4)), rng.integers(0, 3, n)
    base = score_histogram(req.bins(X), y, 3, req.num_bins)
    others = np.vstack([rng.normal(size=(200, 4)) * 50, np.full((1, 4), 1e308), np.full((1, 4), -1e308),
                        np.array([[1e308, -1e308, 1e308, -1e308]])])  # non-finite rows are refused before binning
    moved = []
    for row in others:
        i = rng.integers(n)
        X2, y2 = X.copy(), y.copy()
        X2[i], y2[i] = row, rng.integers(3)
        with np.errstate(all="ignore"):
            moved.append(np.linalg.norm(score_histogram(req.bins(X2), y2, 3, req.num_bins) - base))
    assert max(moved) == pytest.approx(SCORE_HISTOGRAM_SENSITIVITY["replace_one"])
    removed = score_histogram(req.bins(X[1:]), y[1:], 3, req.num_bins)
    assert np.linalg.norm(removed - base) == pytest.approx(SCORE_HISTOGRAM_SENSITIVITY["add_remove"])
    pred = np.argmax(req.scores(X), axis=1)
    truth = np.zeros((3, 3))
    np.add.at(truth, (y, pred), 1)
    assert np.array_equal(req.confusion(base), truth)


def test_release_states_its_sensitivity_and_calibrated_noise():
    draws = []
    sigma, g = score_histogram_plan(EPS, DELTA, classes=(0, 1), num_bins=4)
    with observe_draws(draws.append):
        out = release_score_histogram(np.zeros((2, 4)), sigma=sigma, relation="replace_one", noise=NoiseSource())
    assert draws[0].sensitivity == pytest.approx(math.sqrt(2.0)) and draws[0].norm == "l2"
    assert g.details["sigma"] == pytest.approx(sigma) and g.sensitivity == pytest.approx(math.sqrt(2.0))
    assert accounting.epsilon(out.event, DELTA, relation="replace_one", method="pld") == pytest.approx(EPS, rel=0.02)


def _audit(stated: float, layout: str, n: int = 20000):
    """Worst-case pair: one record moves to another label and another cell; the statistic is the table projected on that
    move. ``"logit"``: a (2, 2) table, (class 0, bin 0) → (class 1, bin 1); ``"class-confidence"``: the (3, 9) table of
    :func:`_three_class_request`'s rows, one row replaced by a row of another class in another (predicted class ×
    confidence) cell. Reproducible noise keeps the draws fast (the audit is of the calibration, not the sampler)."""
    noise = NoiseSource(36, reproducible=True)
    sigma = accounting.analytic_gaussian_sigma(EPS, DELTA, stated)
    if layout == "logit":
        D, Dp = np.zeros((2, 2)), np.zeros((2, 2))
        D[0, 0], Dp[1, 1] = 1.0, 1.0
    else:
        req, rng = _three_class_request(), np.random.default_rng(2)
        X, y = rng.normal(size=(30, 4)), rng.integers(0, 3, 30)
        bins = req.bins(X)
        j = int(np.flatnonzero(bins != bins[0])[0])  # row 0 takes the cell and another label
        D = score_histogram(bins, y, 3, req.num_bins)
        bins[0], y[0] = bins[j], (y[0] + 1) % 3
        Dp = score_histogram(bins, y, 3, req.num_bins)
    assert np.linalg.norm(Dp - D) == pytest.approx(math.sqrt(2.0))
    u = (Dp - D).ravel() / math.sqrt(2.0)
    K, B = D.shape
    stats = []
    for table in (D, Dp):
        big = np.repeat(table[None], n, axis=0).reshape(n * K, B)  # n independent tables released as one draw
        noisy = release_score_histogram(big, sigma=sigma, relation="replace_one", noise=noise).value.reshape(n, K * B)
        stats.append(noisy @ u)
    return epsilon_lower_bound(stats[0], stats[1], delta=DELTA)


@pytest.mark.parametrize("layout", scores.LAYOUTS)
def test_audit_passes_and_an_under_noised_control_fails(layout):
    assert _audit(SCORE_HISTOGRAM_SENSITIVITY["replace_one"], layout).passes(EPS)
    bad = _audit(SCORE_HISTOGRAM_SENSITIVITY["replace_one"] / 4, layout)
    assert not bad.passes(EPS), bad


def test_budget_split_composes_exactly_and_the_ledger_rule_agrees():
    e1, e2 = split_budget(EPS, DELTA, 0.2)
    assert e1 < EPS and e2 < EPS
    from dpadapt.privacy.families.sound import class_moments_plan

    _, g1 = class_moments_plan(e1, DELTA, classes=(0, 1))
    _, g2 = score_histogram_plan(e2, DELTA, classes=(0, 1), num_bins=10)
    total = composed_guarantee(g1, g2)
    assert total.epsilon == pytest.approx(EPS, rel=1e-6) and total.delta == DELTA
    by_accounting = compose_guarantees([g1, g2], delta=DELTA, method="pld")  # the ledger's rule, by dp-accounting
    assert by_accounting.epsilon == pytest.approx(EPS, rel=0.03)
    with pytest.raises(ValueError):
        split_budget(EPS, DELTA, 0.0)


def _binary(rng, n, pi, shift=1.2):
    y = (rng.random(n) < pi).astype(int)
    X = rng.normal(size=(n, 4))
    X[:, 0] += shift * y
    return X, y


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(1)
    Xs, ys = _binary(rng, 2500, 0.15)
    Xt, yt = _binary(rng, 1200, 0.4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SoundDA(epsilon=4.0, delta=DELTA, classes=(0, 1), design="discriminant", score_share=0.25,
                      random_state=0, reproducible_noise=True).fit_domains(Xs, ys, Xt)  # replayable: a fixed test
    return est, Xt, yt


def test_sound_with_score_release_states_the_whole_budget_and_estimates_the_prior(fitted):
    est, Xt, yt = fitted
    g = est.guarantees_["source"]
    assert g.epsilon == pytest.approx(4.0, rel=1e-6) and len(g.events) == 2 and g.reasons == (REPRODUCIBLE_NOISE_REASON,)
    kinds = sorted(r.kind for r in est.releases_)
    assert kinds == ["class_statistics", "score_histograms", "score_request"]
    details = est.model_.details
    assert details["calibration"].startswith("Platt") and details["prevalence"]["method"].startswith(scores.PREVALENCE)
    # a pure label shift (the per-class score distributions shared): histogram matching recovers the prior, its interval
    # covers it; the default's gate sees label shift and uses EM, which recovers it too (the mean posterior would only
    # move towards it)
    req = scores.ScoreRequest.from_release(next(r for r in est.releases_ if r.kind == scores.REQUEST_KIND))
    Z = req.model().row_map()(Xt)
    *_, match = scores.estimate(req, scores.combine(req, est.releases_), Z, req.bins(Xt),
                                details["statistics_source_prior"], method="match", n_boot=50)
    assert abs(match["prior"][1] - yt.mean()) < 0.06 and match["low"][1] <= yt.mean() <= match["high"][1]
    assert details["prevalence"]["gate"]["chose"] == scores.GATE_ARM and abs(details["target_prior"][1] - yt.mean()) < 0.05


def test_received_files_are_checked(fitted):
    est, Xt, _ = fitted
    req_rel = next(r for r in est.releases_ if r.kind == scores.REQUEST_KIND)
    rel = next(r for r in est.releases_ if r.kind == scores.KIND)
    req = scores.ScoreRequest.from_release(req_rel, Xt.shape[1])
    scores.combine(req, [rel])  # as released: accepted
    bad_counts = [dataclasses.replace(rel, arrays={"counts": rel["counts"] * 50}),
                  dataclasses.replace(rel, arrays={"counts": rel["counts"][:, :3]}),
                  dataclasses.replace(rel, arrays={"counts": np.full_like(rel["counts"], np.nan)}),
                  dataclasses.replace(rel, params={**rel.params, "sigma": rel.params["sigma"] / 10}),
                  dataclasses.replace(rel, params={**rel.params, "score_request_release_id": "0" * 32})]
    for bad in bad_counts:
        with pytest.raises(ReleaseError):
            scores.combine(req, [bad])
    with pytest.raises(ReleaseError, match="twice"):
        scores.combine(req, [rel, rel])
    edges = req_rel["edges"].copy()
    edges[0] = edges[1] + 1.0
    for bad in (dataclasses.replace(req_rel, arrays={**req_rel.arrays, "edges": edges}),
                dataclasses.replace(req_rel, arrays={**req_rel.arrays, "W": req_rel["W"][:, :2]}),
                dataclasses.replace(req_rel, arrays={**req_rel.arrays, "b": req_rel["b"] + 1.0})):  # id no longer matches
        with pytest.raises(ReleaseError):
            scores.ScoreRequest.from_release(bad, Xt.shape[1])


def test_calibrate_with_a_separate_release_composes_the_guarantees(fitted):
    """The two-step path: fit without the second release, then the sources answer a score request made from the
    fitted model (at their own ε), and the estimator's guarantee composes both."""
    rng = np.random.default_rng(2)
    Xs, ys = _binary(rng, 1200, 0.2)
    Xt, yt = _binary(rng, 800, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SoundDA(epsilon=2.0, delta=DELTA, classes=(0, 1), design="discriminant", random_state=0,
                      reproducible_noise=True).fit_domains(Xs, ys, Xt)
        req = scores.request(est.model_, Xt, bins=8)
        rel = scores.release(scores.plan(req, 1.0, DELTA, n_source=len(ys)), req, Xs, ys, NoiseSource(5, reproducible=True))
        est.calibrate_with([req.to_release(), rel], Xt, prevalence="match", n_boot=20)
    g = est.guarantees_["source"]
    assert 2.0 < g.epsilon < 3.0 and len(g.events) == 2
    assert abs(est.model_.details["target_prior"][1] - yt.mean()) < 0.08


def test_match_and_platt_recover_a_known_prior_and_calibration():
    rng = np.random.default_rng(3)
    C = np.array([[0.5, 0.3, 0.15, 0.05], [0.05, 0.15, 0.3, 0.5]])
    h = 10000 * (0.3 * C[1] + 0.7 * C[0])
    assert scores.match(C, h)[1] == pytest.approx(0.3, abs=1e-4)
    assert scores.match_ls(1000 * C, h)[1] == pytest.approx(0.3, abs=1e-4)
    x = np.linspace(-3, 3, 12)  # counts drawn from P(y=1 | x) = σ(0.5 x − 1)
    w = np.full(12, 4000)
    n1 = rng.binomial(w, 1 / (1 + np.exp(-(0.5 * x - 1))))
    a, c = scores.platt(np.stack([w - n1, n1]).astype(float), x)
    assert a == pytest.approx(0.5, abs=0.05) and c == pytest.approx(-1.0, abs=0.05)


def test_cli_two_releases_are_charged_composed_and_checked(tmp_path, monkeypatch, capsys):
    """`adapt sound --score-request` → `release sound --request` (the source's second release, charged to its ledger,
    which composes both) → `adapt sound` with both: a calibrated model; a score request of another model is refused."""
    from dpadapt.cli.main import main
    from dpadapt.cli.party_cmd import load_model
    from dpadapt.io import save_table
    from dpadapt.privacy.ledger import Ledger, fingerprint

    rng = np.random.default_rng(4)
    Xs, ys = _binary(rng, 800, 0.2)
    Xt, _ = _binary(rng, 500, 0.4)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    save_table("s.npz", Xs, ys)
    save_table("t.npz", Xt)
    Ledger(tmp_path / "ledger.sqlite").set_budget("source", fingerprint("s.npz"), 3.0, 1e-4)
    src = ["--data", "s.npz", "--classes", "0,1", "--delta", "1e-5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["request", "--data", "t.npz", "--classes", "0,1", "--n-source", "800", "--epsilon", "2", "--delta",
                     "1e-5", "--out", "q.release"]) == 0
        assert main(["release", "sound", "--request", "q.release", *src, "--epsilon", "2", "--out", "s.release"]) == 0
        first = Ledger(tmp_path / "ledger.sqlite").spent("source", fingerprint("s.npz")).epsilon
        assert main(["adapt", "sound", "--release", "s.release", "--own-release", "q.release", "--data", "t.npz",
                     "--out", "m.dpadapt", "--score-request", "sr.release", "--score-bins", "6"]) == 0
        assert main(["release", "sound", "--request", "sr.release", *src, "--epsilon", "0.5", "--out", "h.release"]) == 0
        spend = Ledger(tmp_path / "ledger.sqlite").spent("source", fingerprint("s.npz"))
        assert spend.n_releases == 2 and first < spend.epsilon < first + 0.5  # composed by dp-accounting at the budget's δ
        both = ["--release", "s.release", "--release", "h.release", "--own-release", "q.release", "--own-release",
                "sr.release", "--data", "t.npz"]
        assert main(["adapt", "sound", *both, "--out", "m2.dpadapt"]) == 0
        model = load_model("m2.dpadapt")
        assert model["model"].details["calibration"].startswith("Platt") and 2.0 < model["guarantees"]["source"].epsilon < 2.6
        assert model["model"].details["prevalence"]["interval"] == scores.INTERVAL
        assert main(["adapt", "sound", *both, "--prevalence-interval", "hull", "--out", "m4.dpadapt"]) == 0
        from dpadapt.cli.model_cmd import release_prevalence

        line = release_prevalence(load_model("m4.dpadapt")["model"], ["0", "1"])
        assert "interval: the hull of the resample intervals of match, em and mean" in line  # the line says what it includes
        assert main(["release", "sound", "--request", "q.release", *src, "--epsilon", "0.1", "--out", "s2.release"]) == 0
        capsys.readouterr()
        assert main(["adapt", "sound", "--release", "s2.release", *both[2:], "--out", "m3.dpadapt", "--force"]) != 0
        assert "another model" in capsys.readouterr().err


def _tempered_counts(req: scores.ScoreRequest, a_true: float, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """(counts (K, B), scores of n rows) where each row's label is drawn from softmax(a_true · s): a model over-confident
    by the factor 1/a_true, binned by ``req``."""
    X = rng.normal(size=(n, 4)) * 2
    s = req.scores(X)
    P = np.exp(a_true * s - np.logaddexp.reduce(a_true * s, axis=1, keepdims=True))
    y = (rng.random(n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    return score_histogram(req.bins(X), y, 3, req.num_bins), s


@pytest.mark.parametrize("sigma", [0.0, 8.0])
def test_fitted_temperature_recovers_a_known_over_confidence(sigma):
    """K > 2: labels drawn at half the model's confidence (a = 0.5); the fit on the (noisy) counts finds it, the receiver's
    rows standing for the cells (uniform model prior: the whole score is the log-likelihood part)."""
    rng = np.random.default_rng(11)
    req = _three_class_request()
    counts, _ = _tempered_counts(req, 0.5, 20000, rng)
    counts = counts + rng.normal(0.0, sigma, counts.shape)
    s_receiver = req.scores(rng.normal(size=(3000, 4)) * 2)
    log_prior = np.log(np.full(3, 1 / 3))
    a = scores.fit_temperature(counts, *scores._cell_rows(req, s_receiver), log_prior, sigma)
    assert a == pytest.approx(0.5, rel=0.12)
    calibrated = scores.fit_temperature(_tempered_counts(req, 1.0, 20000, rng)[0], *scores._cell_rows(req, s_receiver),
                                        log_prior, 0.0)
    assert calibrated == pytest.approx(1.0, rel=0.12)


def test_a_release_that_shows_no_temperature_keeps_the_model():
    """Counts that are all noise (σ = 40 over a table of 300 rows): no temperature is applied, the model is kept as
    requested; the same counts without noise apply the fitted one."""
    rng = np.random.default_rng(12)
    req = _three_class_request()
    counts, _ = _tempered_counts(req, 0.5, 300, rng)
    Z = rng.normal(size=(400, 4)) * 2
    prior = np.full(3, 1 / 3)
    W, b, _, kept = scores.calibrate(req, counts + rng.normal(0.0, 40.0, counts.shape), Z, prior, sigma=40.0)
    assert kept["temperature_applied"] is False and kept["calibration"].startswith("as requested")
    assert np.array_equal(W, req.W) and np.array_equal(b, req.b)
    _, _, _, fitted = scores.calibrate(req, counts, Z, prior, sigma=0.0)
    assert fitted["temperature_applied"] is True and fitted["fitted_temperature"] > 1.3


def test_class_confidence_files_state_their_layout_and_a_mismatch_is_refused():
    """The request states its layout and confidence bins; a request whose statement disagrees with its label set or its
    edges, and a release binned otherwise than the request asks, are refused in one line."""
    req = _three_class_request()
    rel = req.to_release()
    assert rel.params["score"] == "class-confidence" and rel.params["confidence_bins"] == 3 and rel.params["num_bins"] == 9
    assert scores.ScoreRequest.from_release(rel).digest() == req.digest()
    for params, words in (({"score": "logit"}, "layout 'logit' stated for 3 classes"),
                          ({"confidence_bins": 4}, "9 bins stated"), ({"num_bins": 3}, "3 bins stated")):
        with pytest.raises(ReleaseError, match=words) as info:
            scores.ScoreRequest.from_release(dataclasses.replace(rel, params={**rel.params, **params}))
        assert "\n" not in str(info.value)
    with pytest.raises(ReleaseError, match="strictly increasing"):
        scores.ScoreRequest.from_release(dataclasses.replace(rel, arrays={**rel.arrays, "edges": np.array([0.2, 0.9])}))
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(200, 4)), rng.integers(0, 3, 200)
    out = scores.release(scores.plan(req, 1.0, DELTA, n_source=200), req, X, y, NoiseSource(1, reproducible=True))
    assert out.params["score"] == "class-confidence" and out["counts"].shape == (3, 9)
    assert "predicted class × 3 confidence bins" in out.guarantee.details.get("theorem", str(out.guarantee.to_dict()))
    scores.combine(req, [out])
    with pytest.raises(ReleaseError, match="bins its rows as 'logit'"):
        scores.combine(req, [dataclasses.replace(out, params={**out.params, "score": "logit"})])


def test_three_classes_calibrated_from_the_second_release():
    """End to end, K = 3 with a prior shift: the score release fits a temperature, the confusion matrix (its marginal)
    keeps BBSE working (its interval covers the true prior), and ranking does not pay: every row's ranking of the classes
    by likelihood is unchanged."""
    rng = np.random.default_rng(5)

    def draw(n, pi):
        y = rng.choice(3, n, p=pi)
        X = rng.normal(size=(n, 6))
        X[np.arange(n), y] += 1.6
        return X, y

    Xs, ys = draw(1200, [0.6, 0.3, 0.1])
    Xt, yt = draw(400, [0.2, 0.3, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SoundDA(epsilon=4.0, delta=DELTA, classes=(0, 1, 2), design="discriminant", score_share=0.2, random_state=0,
                      reproducible_noise=True).fit_domains(Xs, ys, Xt)
    d = est.model_.details
    assert d["calibration"].startswith("temperature fitted") and 0.5 < d["fitted_temperature"] < 3.0
    true = np.bincount(yt, minlength=3) / yt.size
    assert d["prevalence"]["method"] == f"{scores.PREVALENCE_MULTICLASS} (score release)"  # K > 2's default
    assert np.abs(np.asarray(d["target_prior"]) - true).max() < 0.1  # the source prior is 0.4 away
    req = scores.ScoreRequest.from_release(next(r for r in est.releases_ if r.kind == scores.REQUEST_KIND))
    H = scores.combine(req, est.releases_)
    Z = req.model().row_map()(Xt)
    W, b, prior, _, bbse = scores.estimate(req, H, Z, req.bins(Xt), d["statistics_source_prior"], method="match-ls",
                                           n_boot=30)
    assert np.abs(np.asarray(bbse["prior"]) - true).max() < 0.1
    assert np.all((np.asarray(bbse["low"]) <= true) & (true <= np.asarray(bbse["high"])))
    log_prior = np.log(prior)  # the likelihood part is tempered, a > 0: its ranking of the classes is every row's own
    assert np.array_equal(np.argmax(Z @ W.T + b - log_prior, axis=1), np.argmax(Z @ req.W.T + req.b - log_prior, axis=1))


def test_dask_sources_count_as_in_memory_ones():
    """The second release on a Dask source (array with labels, or a frame with its label column): per-partition counts
    merged are the in-memory counts (σ = 0 here; the noise is drawn once, after the merge, by the same mechanism)."""
    import dask
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd

    req = _three_class_request()
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(90, 4)), rng.integers(0, 3, 90)
    plan = scores.plan(req, None, None, n_source=90)
    here = scores.release(plan, req, X, y)["counts"]
    frame = dd.from_pandas(pd.DataFrame({**{f"x{i}": X[:, i] for i in range(4)}, "y": y}), npartitions=3)
    with dask.config.set(scheduler="synchronous"):
        on_array = scores.release(plan, req, da.from_array(X, chunks=(30, 4)), da.from_array(y, chunks=30))["counts"]
        on_frame = scores.release(plan, req, frame, label_column="y")["counts"]
    assert here.sum() == 90 and np.array_equal(here, on_array) and np.array_equal(here, on_frame)


@functools.lru_cache(maxsize=4)
def _fit_and_request(neg_shift: float):
    """SoundDA with the score release on a source at rate 0.15 and a target at 0.4 whose negatives' feature 0 is moved by
    ``neg_shift`` (0: pure label shift; else a shift beyond the prior), and what the receiver holds to estimate."""
    est, Xt, yt = _fit_shifted(neg_shift)
    req = scores.ScoreRequest.from_release(next(r for r in est.releases_ if r.kind == scores.REQUEST_KIND))
    args = (req, scores.combine(req, est.releases_), req.model().row_map()(Xt), req.bins(Xt),
            est.model_.details["statistics_source_prior"])
    return args, yt.mean()


def _fit_shifted(neg_shift: float):
    rng = np.random.default_rng(1)
    Xs, ys = _binary(rng, 2500, 0.15)
    yt = (rng.random(1200) < 0.4).astype(int)
    Xt = rng.normal(size=(1200, 4))
    Xt[:, 0] += 1.2 * yt + neg_shift * (1 - yt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = SoundDA(epsilon=4.0, delta=DELTA, classes=(0, 1), design="discriminant", score_share=0.25,
                      random_state=0, reproducible_noise=True).fit_domains(Xs, ys, Xt)
    return est, Xt, yt


def test_the_posteriors_average_to_the_reported_prevalence_whichever_estimator_the_gate_chose():
    """The prior is applied consistently: where the gate falls back to the mean calibrated posterior, the posteriors
    already average to it over the receiver's rows and are not shifted again (a shift would move their mean past the
    reported prevalence); where it chooses EM, the shifted posteriors average to EM's estimate (its fixed point)."""
    for neg_shift, chose, tol in ((-1.0, "mean", 1e-6), (0.0, scores.GATE_ARM, 1e-3)):
        est, Xt, _ = _fit_shifted(neg_shift)
        d = est.model_.details
        assert d["prevalence"]["gate"]["chose"] == chose
        assert abs(est.predict_proba(Xt)[:, 1].mean() - d["prevalence"]["prior"][1]) < tol
        assert d["prior_shift"] is (chose != "mean")


def test_an_interval_that_states_a_shift_beyond_the_prior_covers_where_the_resamples_do_not():
    """Target negatives moved towards the positives: every estimator is biased (mean low, em and match high) and no
    resample contains the bias; the hull of the estimators and the residual-widened interval around the mean cover the
    true rate."""
    args, truth = _fit_and_request(0.6)
    found = {iv: scores.estimate(*args, method="mean", interval=iv, n_boot=30)[-1] for iv in scores.INTERVALS}
    old = found["resample"]
    assert not old["low"][1] <= truth <= old["high"][1]
    for iv in ("hull", "residual"):
        assert found[iv]["low"][1] <= truth <= found[iv]["high"][1], iv
        assert found[iv]["interval"] == iv and found[iv]["includes"] == scores.INCLUDES[iv]
    assert found["residual"]["residual"] > 0.15  # the mixture of the source's histograms does not explain the target's
    with pytest.raises(ValueError, match="interval"):
        scores.estimate(*args, interval="wide")


def test_under_pure_label_shift_the_residual_is_small_and_its_interval_narrow():
    """Per-class score distributions shared: the source's histograms mixed at the consistent estimate (BBSE) explain
    the target's up to noise, so the residual interval around it stays narrow and covers; around the biased mean
    posterior the residual is larger (it states that estimator's bias)."""
    args, truth = _fit_and_request(0.0)
    *_, at_match = scores.estimate(*args, method="match", interval="residual-tv", n_boot=30)
    *_, at_mean = scores.estimate(*args, method="mean", interval="residual-tv", n_boot=30)
    assert at_match["residual"] < 0.08 and at_match["high"][1] - at_match["low"][1] < 0.25
    assert at_match["low"][1] <= truth <= at_match["high"][1]
    assert at_mean["residual"] > at_match["residual"]


def test_the_gate_uses_em_under_label_shift_and_the_mean_when_the_target_scores_differ():
    """``gated``: under pure label shift the mixture-fit residual is what the release noise and the samples put there
    (r − r₀ ≤ τ), so the gate picks EM, right where the mean posterior is pulled to the source's rate; with the target's
    negatives moved away from the positives (their scores from another distribution) the residual exceeds its noise
    share by far and the gate falls back to the mean."""
    args, truth = _fit_and_request(0.0)
    found = {m: scores.estimate(*args, method=m, n_boot=0)[-1] for m in ("gated", "em", "mean")}
    gate = found["gated"]["gate"]
    assert gate["residual"] - gate["null"] <= scores.GATE_THRESHOLD and gate["chose"] == scores.GATE_ARM
    assert found["gated"]["prior"] == found[scores.GATE_ARM]["prior"]
    assert abs(found["gated"]["prior"][1] - truth) < 0.05 < abs(found["mean"]["prior"][1] - truth)
    assert found["gated"]["method"].startswith("gated: ")

    args, _ = _fit_and_request(-1.0)
    shifted = scores.estimate(*args, method="gated", n_boot=0)[-1]
    g = shifted["gate"]
    assert g["residual"] - g["null"] > 0.1 > scores.GATE_THRESHOLD and g["chose"] == "mean"
    assert shifted["prior"] == scores.estimate(*args, method="mean", n_boot=0)[-1]["prior"]
    assert scores.gated_choice(0.3, 0.1, threshold=0.05) == "mean" and scores.gated_choice(0.12, 0.1, threshold=0.05) == scores.GATE_ARM
