"""The ``sound`` benchmark matrix (issue 23): its rows, its flags, its heat maps, its baselines."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpadapt.bench import registry
from dpadapt.bench.suites import sound, sound_report, sound_rows


def _row(task, method, kind, eps, value, seed=0, split="dev"):
    return {"task": task, "method": method, "mode": "sound", "epsilon_target": eps, "epsilon_spent": eps,
            "value": value, "seconds": 0.0, "guarantee_valid": True, "paper_value": None, "error": None,
            "seed": seed, "split": split, "kind": kind}


def _matrix_rows():
    rows = []
    for seed, jitter in enumerate((0.0, 0.01)):
        for eps, design, ncm, lr in ((1.0, 0.60, 0.605, 0.50), (8.0, 0.70, 0.60, 0.715), (math.inf, 0.79, 0.78, 0.75)):
            rows += [_row("a:X->Y", "dpot-cs", "design", eps, design + jitter, seed),
                     _row("a:X->Y", "dp-ncm", "dp-source-only", eps, ncm + jitter, seed),
                     _row("a:X->Y", "dp-logreg", "dp-source-only", eps, lr + jitter, seed)]
        rows.append(_row("a:X->Y", "source-only", "non-private", math.inf, 0.81 + jitter, seed))
    return rows


def test_flags_mark_cells_more_than_one_point_below_the_reference():
    m = sound_report.Matrix(_matrix_rows())
    assert m.gap_dp("a:X->Y", 1.0, "dpot-cs") == pytest.approx(-0.5)  # within 1 point: not flagged
    assert m.flag("a:X->Y", 1.0, "dpot-cs") == ""
    assert m.gap_dp("a:X->Y", 8.0, "dpot-cs") == pytest.approx(-1.5)  # best DP-SO is dp-logreg here
    assert m.flag("a:X->Y", 8.0, "dpot-cs") == "< DP-SO"
    assert m.gap_source_only("a:X->Y", math.inf, "dpot-cs") == pytest.approx(-2.0)
    assert m.flag("a:X->Y", math.inf, "dpot-cs") == "< SO"
    md = sound_report.markdown(_matrix_rows(), design="dpot-cs")
    assert "| a:X->Y | 8 | 70.5 ± 0.5 |" in md and "Flagged cells: 2." in md


def test_report_writes_markdown_and_two_heat_maps(tmp_path):
    paths = sound_report.write_report(_matrix_rows(), tmp_path / "sound.json")
    assert [p.name for p in paths] == ["sound.md", "sound-vs-dp-source-only.png", "sound-vs-source-only.png"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert paths[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_row_registry_refuses_duplicates_bad_kinds_and_deterministic_private_rows():
    with pytest.raises(ValueError, match="registered twice"):
        sound_rows.register_row("dp-ncm", "dp-source-only", lambda p: None, "dup")
    with pytest.raises(ValueError, match="kind"):
        sound_rows.register_row("x-new", "oracle", lambda p: None, "bad kind")
    with pytest.raises(ValueError, match="deterministic"):
        sound_rows.register_row("x-new", "design", lambda p: None, "noisy", deterministic=True)
    assert sound_rows.DEFAULT_DESIGN in sound_rows.ROWS and sound_rows.ROWS[sound_rows.DEFAULT_DESIGN].kind == "design"


def test_pairs_are_the_issues_development_and_report_pairs():
    dev = {p.task for p in sound_rows.DEV_PAIRS}
    report = {p.task for p in sound_rows.REPORT_PAIRS}
    assert len(dev) == 12 and len(report) == 6 and not dev & report
    assert {"googlenet1024:A->D", "surf:C->W", "bow5000:E->D"} <= dev
    assert report == {"decaf6:D->W", "decaf6:W->D", "bow5000:K->D", "bow5000:D->B", "bow5000:B->E", "bow5000:E->K"}
    decaf = next(p for p in sound_rows.REPORT_PAIRS if p.dataset == "decaf6")
    assert decaf.delta(157) == pytest.approx(1 / (1.2 * 157)) and decaf.feature_type == "dense"
    assert next(p for p in sound_rows.DEV_PAIRS if p.dataset == "bow5000").feature_type == "counts"


def test_suite_tasks_cover_rows_pairs_and_epsilons(data_root):
    tasks = registry.get_suite("sound").build(False, None)
    heart = {p.task for p in sound_rows.HEART_PAIRS if p.available()}
    assert {t.task for t in tasks} == {p.task for p in sound_rows.DEV_PAIRS + sound_rows.REPORT_PAIRS} | heart
    eps = {(t.method, t.epsilon) for t in tasks if t.task == "decaf6:D->W"}
    assert {e for m, e in eps if m == "dp-logreg"} == {1.0, 2.0, 4.0, 8.0, math.inf}
    assert {e for m, e in eps if m == "coral"} == {math.inf}
    assert {t.method for t in tasks} == set(sound_rows.ROWS)
    quick = registry.get_suite("sound").build(True, None)
    assert {t.task for t in quick} == set(sound.QUICK_PAIRS) and max(t.epsilon for t in quick if t.mode == "sound") == 8.0


def test_deterministic_row_is_fitted_once_and_private_rows_carry_their_guarantee(data_root, monkeypatch):
    monkeypatch.setattr(sound_rows, "ROWS", {})
    monkeypatch.setattr(sound, "_REUSED", {})
    fits = []

    def counting(p):
        fits.append(p.seed)
        return sound_rows._one_nn(p)

    rows = [sound_rows.register_row("count-1nn", "non-private", counting, "1-NN, counted", deterministic=True),
            sound_rows.register_row("dp-ncm", "dp-source-only", sound_rows._dp_source_only("DPNearestClassMean"), "DP-NCM")]
    spec = next(p for p in sound_rows.DEV_PAIRS if p.task == "googlenet1024:A->D")
    tasks = sound.tasks_for([spec], (2.0,), rows)
    outs = {(t.method, t.epsilon, s): t.run(s) for t in tasks for s in (0, 1)}
    assert fits == [0]  # seed 1 reuses seed 0's fit
    assert outs[("count-1nn", math.inf, 0)].value == outs[("count-1nn", math.inf, 1)].value
    assert outs[("count-1nn", math.inf, 1)].extra["reused_fit"]
    dp = outs[("dp-ncm", 2.0, 0)]
    assert dp.guarantees["source"].epsilon <= 2.0 + 1e-9 and dp.guarantee_valid
    assert dp.delta_spent == pytest.approx(1 / (10 * 958))
    assert not outs[("dp-ncm", math.inf, 0)].guarantees  # the noise-free pipeline claims nothing


def test_ot_mapping_that_stops_at_its_iteration_cap_is_an_error(monkeypatch):
    from dpadapt.baselines import skada_wrappers

    rng = np.random.default_rng(0)
    spec = sound_rows.PairSpec("surf", "amazon", "caltech", "dev")
    problem = sound_rows.Problem(spec, rng.random((60, 4)), np.repeat([0, 1], 30), rng.random((60, 4)) + 0.5,
                                 (0, 1), None, None, 0)
    fit = sound_rows._skada("ot_mapping")
    assert fit(problem).predict(problem.Xt).shape == (60,)  # converges under the default cap (1e7)
    monkeypatch.setattr(skada_wrappers, "OT_MAX_ITER", 3)
    with pytest.raises(UserWarning, match="numItermax"):
        fit(problem)


def test_heart_pairs_read_the_raw_tables_through_the_declared_schema(data_root):
    spec = sound_rows.HEART_PAIRS[0]
    if not spec.available():
        pytest.skip("the Heart schema (examples/heart.schema.toml) or raw tables are absent")
    pair = spec.load()
    assert spec.task == "heart:cleveland->hungarian" and spec.split == "dev"
    assert pair.Xs.shape == (303, pair.Xt.shape[1]) and pair.Xt.shape[0] == 294  # every row: missing cells imputed
    assert np.abs(pair.Xs).max() <= 1.0 and np.abs(pair.Xt).max() <= 1.0  # public ranges → [-1, 1], one-hot codes
    assert set(np.unique(pair.ys)) == {0, 1} and pair.n_classes == 2
