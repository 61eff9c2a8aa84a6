"""The selection design for tiny sources (``SoundDA(design="selection")``, issue 37): the Laplace table of counts by
(label, nearest public candidate) — its ℓ1 sensitivity at the worst case (brute force, hostile rows included), a
statistical audit that fails for an under-noised control, its pure-ε accounting, the request's and the receiver's
checks of untrusted input, and the receiver's matching on data whose classes are the receiver's clusters."""

from __future__ import annotations

import numpy as np
import pytest

from dpadapt.privacy import accounting
from dpadapt.privacy.audit import epsilon_lower_bound
from dpadapt.privacy.families.sound import candidate_histogram_plan
from dpadapt.privacy.mechanisms import (
    CANDIDATE_HISTOGRAM_SENSITIVITY,
    NoiseSource,
    observe_draws,
    release_candidate_histogram,
)
from dpadapt.release import ReleaseError
from dpadapt.sound import SoundDA
from dpadapt.sound.request import Request
from dpadapt.sound.spaces import RowMap
from dpadapt.stream.sums import CandidateCounts

EPS = 1.0


def _table(X, y, C, K=3):
    return CandidateCounts(tuple(range(K)), RowMap(False), C).add(X, y).counts


def test_candidate_table_sensitivity_brute_force():
    """Every replace-one neighbour — any row, hostile values included — moves the table by ≤ 2 in ℓ1 (exactly 2 when the
    label or the nearest candidate changes, 0 otherwise); removing a row moves it by exactly 1."""
    rng = np.random.default_rng(0)
    K, M, d, n = 3, 5, 4, 30
    C = rng.normal(size=(M, d))
    C /= np.linalg.norm(C, axis=1, keepdims=True)
    X, y = rng.normal(size=(n, d)), rng.integers(0, K, n)
    base = _table(X, y, C)
    moved = set()
    for t in range(300):
        X2, y2 = X.copy(), y.copy()
        i = rng.integers(n)
        X2[i] = rng.normal(size=d) * 10.0 ** rng.integers(-300, 300) if t % 3 else 0.0  # huge, tiny and zero rows
        y2[i] = rng.integers(K)
        moved.add(round(float(np.abs(_table(X2, y2, C) - base).sum()), 12))
    assert moved == {0.0, CANDIDATE_HISTOGRAM_SENSITIVITY["replace_one"]}
    assert np.abs(_table(X[1:], y[1:], C) - base).sum() == CANDIDATE_HISTOGRAM_SENSITIVITY["add_remove"]
    with pytest.raises(ValueError):
        _table(np.where(np.arange(n)[:, None] == 0, np.nan, X), y, C)  # a non-finite row is refused
    with pytest.raises(ValueError):
        _table(X, np.where(y == 0, K, y), C)  # a label outside the public set


def test_release_states_its_sensitivity_scale_and_pure_epsilon():
    draws = []
    scale, g = candidate_histogram_plan(EPS, classes=(0, 1), num_candidates=4)
    with observe_draws(draws.append):
        out = release_candidate_histogram(np.zeros((2, 4)), epsilon=EPS, relation="replace_one", noise=NoiseSource())
    assert draws[0].sensitivity == 2.0 and draws[0].norm == "l1" and draws[0].scale == pytest.approx(2.0 / EPS)
    assert scale == pytest.approx(2.0 / EPS) and g.epsilon == EPS and g.delta == 0.0 and g.valid
    assert accounting.epsilon(out.event, 1e-9, relation="replace_one", method="pld") == pytest.approx(EPS, rel=0.02)
    assert candidate_histogram_plan(EPS, classes=(0, 1), num_candidates=4, relation="add_remove")[0] == pytest.approx(1 / EPS)


def _audit(relation: str, M: int = 2, n: int = 20000):
    """The replace-one worst case: one record moves from (class 0, candidate 0) to (class 1, candidate M − 1); statistic:
    the noisy table's move x[1,M−1] − x[0,0]. ``relation="add_remove"`` calibrates for Δ₁ = 1: under-noised for this pair
    (its true ε is 2ε). Reproducible noise keeps the draws fast (the audit is of the calibration, not the sampler)."""
    noise = NoiseSource(37, reproducible=True)
    stats = []
    for cell in ((0, 0), (1, M - 1)):
        table = np.zeros((2, M))
        table[cell] = 1.0
        big = np.tile(table, (n, 1))  # n independent tables released as one draw
        noisy = release_candidate_histogram(big, epsilon=EPS, relation=relation, noise=noise).value.reshape(n, 2, M)
        stats.append(noisy[:, 1, M - 1] - noisy[:, 0, 0])
    return epsilon_lower_bound(stats[0], stats[1], delta=0.0)


@pytest.mark.parametrize("M", [2, 8])  # M = K and more candidates than classes (c = 4): the same Δ₁
def test_audit_passes_and_an_under_noised_control_fails(M):
    good = _audit("replace_one", M)
    assert good.passes(EPS), good
    assert good.epsilon_lower_bound > 0.4 * EPS  # not vacuous
    bad = _audit("add_remove", M)
    assert not bad.passes(EPS), bad


def _clusters(seed: int, n_s: int = 60, n_t: int = 60):
    rng = np.random.default_rng(seed)
    centers = 5.0 * np.eye(3, 6)
    ys, yt = np.arange(n_s) % 3, np.arange(n_t) % 3
    return centers[ys] + rng.normal(0, 0.3, (n_s, 6)), ys, centers[yt] + 0.5 + rng.normal(0, 0.3, (n_t, 6)), yt


def test_selection_matches_classes_to_the_receivers_clusters():
    from dpadapt.sound import design

    Xs, ys, Xt, yt = _clusters(0)
    for eps in (1.0, None):
        est = SoundDA(epsilon=eps, classes=(0, 1, 2), design="selection", random_state=0).fit_domains(Xs, ys, Xt)
        assert est.design_["design"] == "selection" and est.design_["readout"] == design.SELECTION_READOUT
        assert est.request_["candidates"].shape[0] == 3 * design.CANDIDATES_PER_CLASS == 6  # the chosen c = 2
        assert est.score(Xt, yt) == 1.0
        assert len(set(est.model_.details["selected"])) == 3  # the matching: one distinct candidate a class


def _subclusters(seed: int, n: int = 120):
    """Three classes of two well-separated sub-clusters each, on both sides: one candidate a class cannot cover them."""
    rng = np.random.default_rng(seed)
    centers = 5.0 * np.eye(6)
    y, sub = np.arange(n) % 3, (np.arange(n) // 3) % 2
    X = centers[2 * y + sub] + rng.normal(0, 0.3, (n, 6))
    return X, y


def test_more_candidates_than_classes_readouts(monkeypatch):
    """M = 2K candidates: the weighted readout gives each class one prototype between both its sub-clusters and
    classifies every row; the one-to-one matching keeps one sub-cluster a class and cannot. Both read the one released
    table (post-processing)."""
    from dpadapt import sound
    from dpadapt.sound import design

    Xs, ys = _subclusters(0)
    Xt, yt = _subclusters(1)
    monkeypatch.setattr(design, "CANDIDATES_PER_CLASS", 2)
    est = SoundDA(epsilon=None, classes=(0, 1, 2), design="selection", random_state=0).fit_domains(Xs, ys, Xt)
    assert est.request_["candidates"].shape[0] == 6
    req, stats = Request.from_release(est.request_), [r for r in est.releases_ if r.kind == sound.STATS_KIND]
    got = {r: sound._adapt_selection(req, stats, Xt, r) for r in design.READOUTS}
    assert got["weighted"].score(Xt, yt) == 1.0 and got["matching"].score(Xt, yt) < 0.9
    assert got["weighted"].W.shape == got["matching"].W.shape == (3, req.k)
    with pytest.raises(ValueError, match="readout"):
        sound._adapt_selection(req, stats, Xt, "vote")


def test_a_request_that_states_no_readout_is_read_by_the_matching(monkeypatch):
    """A selection request made before the readout was stated (its design has no ``readout``) keeps the design it was
    made for, the one-to-one matching."""
    from dpadapt import sound
    from dpadapt.sound import design

    Xs, ys = _subclusters(0)
    Xt, _ = _subclusters(1)
    monkeypatch.setattr(design, "CANDIDATES_PER_CLASS", 2)
    est = SoundDA(epsilon=None, classes=(0, 1, 2), design="selection", random_state=0).fit_domains(Xs, ys, Xt)
    req, stats = Request.from_release(est.request_), [r for r in est.releases_ if r.kind == sound.STATS_KIND]
    assert req.design["readout"] == "weighted" == est.model_.details["readout"]
    req.design.pop("readout")
    assert sound._adapt_selection(req, stats, Xt).details["readout"] == "matching"


def test_a_selection_model_round_trips(tmp_path):
    from dpadapt.modelio import load_model, save_model

    Xs, ys = _subclusters(0)
    Xt, _ = _subclusters(1)
    est = SoundDA(epsilon=8.0, classes=(0, 1, 2), design="selection", random_state=0).fit_domains(Xs, ys, Xt)
    save_model(tmp_path / "m.dpadapt", est.model_, {})
    np.testing.assert_array_equal(load_model(tmp_path / "m.dpadapt").predict(Xt), est.predict(Xt))


def test_auto_takes_selection_only_below_the_threshold(monkeypatch):
    from dpadapt.sound import design

    Xs, ys, Xt, _ = _clusters(1, n_s=30)
    monkeypatch.setattr(design, "SELECTION_THRESHOLD", None)
    assert SoundDA(epsilon=1.0, classes=(0, 1, 2), random_state=0).fit_domains(Xs, ys, Xt).design_["design"] != "selection"
    monkeypatch.setattr(design, "SELECTION_THRESHOLD", 6.0)  # q = n/(K·2/ε) = 5 at ε = 1, 20 at ε = 4
    assert SoundDA(epsilon=1.0, classes=(0, 1, 2), random_state=0).fit_domains(Xs, ys, Xt).design_["design"] == "selection"
    assert SoundDA(epsilon=4.0, classes=(0, 1, 2), random_state=0).fit_domains(Xs, ys, Xt).design_["design"] != "selection"
    assert SoundDA(epsilon=None, classes=(0, 1, 2), random_state=0).fit_domains(Xs, ys, Xt).design_["design"] != "selection"


def test_a_second_gaussian_release_keeps_the_selection_off(monkeypatch):
    """score_share > 0 splits the budget exactly between two Gaussians: `auto` then never takes the Laplace table,
    and an explicit selection design with it is refused before any row of the source is read."""
    from dpadapt import api
    from dpadapt.sound import design

    Xs, ys, Xt, _ = _clusters(1, n_s=30)
    monkeypatch.setattr(design, "SELECTION_THRESHOLD", 6.0)
    est = SoundDA(epsilon=1.0, classes=(0, 1, 2), random_state=0, score_share=0.25).fit_domains(Xs, ys, Xt)
    assert est.design_["design"] != "selection"
    with pytest.raises(api.ConfigError, match="Laplace"):
        SoundDA(epsilon=1.0, classes=(0, 1, 2), design="selection", score_share=0.25).fit_domains(Xs, ys, Xt)


def test_untrusted_request_and_release_are_refused():
    Xs, ys, Xt, _ = _clusters(2)
    est = SoundDA(epsilon=EPS, classes=(0, 1, 2), design="selection", random_state=0).fit_domains(Xs, ys, Xt)
    req = est.request_
    parsed = Request.from_release(req)
    C = parsed.candidates
    for bad in (2.0 * C, C[:2], np.full_like(C, np.nan), C[:, :1]):  # outside the unit ball, fewer than K, not finite, shape
        with pytest.raises(ValueError):
            Request(**{**_fields(parsed), "candidates": bad})
    with pytest.raises(ValueError):  # candidates belong to the candidates statistics only
        Request(**{**_fields(parsed), "statistics": "sums"})
    with pytest.raises(ReleaseError):  # a candidate changed in transit breaks the digest
        Request.from_release(type(req)(**{**_fields(req), "arrays": {**req.arrays, "candidates": 0.5 * C}}))
    from dpadapt import sound

    stats = [r for r in est.releases_ if r.kind == "class_statistics"][0]
    forged = type(stats)(**{**_fields(stats), "params": {**stats.params, "scale": 0.01}})
    with pytest.raises(ReleaseError, match="scale"):
        sound.adapt([req, forged], Xt)
    huge = type(stats)(**{**_fields(stats), "arrays": {"candidate_counts": stats["candidate_counts"] + 1e6}})
    with pytest.raises(ReleaseError):
        sound.adapt([req, huge], Xt)


def _fields(rel) -> dict:
    import dataclasses

    return {f.name: getattr(rel, f.name) for f in dataclasses.fields(rel) if f.init}
