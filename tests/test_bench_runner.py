"""The benchmark runner: a tiny suite registered here runs, writes JSON + CSV, and tabulates."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from dpadapt.bench import BenchTask, RunOutcome, format_table, load_rows, register_suite, run_suite, summarise
from dpadapt.bench import registry
from dpadapt.privacy import gaussian_mechanism

REQUIRED = (
    "suite", "task", "method", "mode", "epsilon_target", "epsilon_spent",
    "delta", "seed", "metric", "value", "seconds", "guarantee_valid",
)


@pytest.fixture
def tiny_suite(monkeypatch):
    """Register suite 'tiny-test' in an isolated copy of the registry."""
    monkeypatch.setattr(registry, "_SUITES", dict(registry._SUITES))
    monkeypatch.setattr(registry, "_discover", lambda: None)

    def private_run(seed: int) -> RunOutcome:
        from dpadapt.privacy.mechanisms import NoiseSource

        out = gaussian_mechanism(np.zeros(3), 1.0, 2.0, 1e-5, NoiseSource(), party="target")
        return RunOutcome(0.5 + 0.01 * seed, {"target": out.guarantee}, extra={"sigma": out.noise_scale})

    def broken_run(seed: int) -> RunOutcome:
        raise RuntimeError("diverged")

    @register_suite("tiny-test", "a suite for the runner's tests")
    def build(quick, epsilons=None):
        eps_list = epsilons or [2.0]
        tasks = [
            BenchTask("tiny-test", "toy:A->B", "toy-dp", "sound", private_run, epsilon=e, delta=1e-5, paper_value=0.6)
            for e in eps_list
        ]
        tasks.append(BenchTask("tiny-test", "toy:A->B", "toy-baseline", "non-private", lambda s: RunOutcome(0.9)))
        if not quick:
            tasks.append(BenchTask("tiny-test", "toy:B->A", "toy-dp", "sound", broken_run, epsilon=2.0, delta=1e-5))
        return tasks

    return "tiny-test"


def test_run_suite_writes_json_and_csv(tiny_suite, tmp_path):
    out = tmp_path / "res" / "tiny.json"
    rows = run_suite(tiny_suite, seeds=2, out=out, progress=False)
    assert len(rows) == 6  # 3 tasks × 2 seeds
    data = json.loads(out.read_text())
    assert len(data) == 6
    for row in data:
        for field in REQUIRED:
            assert field in row, field
        assert row["suite"] == "tiny-test" and row["seconds"] >= 0
    dp = [r for r in data if r["method"] == "toy-dp" and r["error"] is None]
    assert {r["seed"] for r in dp} == {0, 1}
    assert all(r["guarantee_valid"] and r["epsilon_spent"] == pytest.approx(2.0) and r["delta"] == 1e-5 for r in dp)
    assert all("sigma" in r for r in dp)  # RunOutcome.extra is recorded
    base = [r for r in data if r["method"] == "toy-baseline"]
    assert all(r["epsilon_spent"] == "inf" and r["guarantee_valid"] is False and r["value"] == 0.9 for r in base)
    with open(out.with_suffix(".csv")) as fh:
        csv_rows = list(csv.DictReader(fh))
    assert len(csv_rows) == 6 and set(REQUIRED) <= set(csv_rows[0])


def test_erroring_task_is_recorded_not_raised(tiny_suite, tmp_path):
    rows = run_suite(tiny_suite, tasks=["B->A"], seeds=1, out=tmp_path / "e.json", progress=False)
    assert len(rows) == 1
    row = rows[0]
    assert row["error"] == "RuntimeError: diverged" and "Traceback" in row["traceback"]
    assert math.isnan(row["value"]) and row["guarantee_valid"] is False
    back = load_rows(tmp_path / "e.json")
    assert back[0]["value"] is None and math.isnan(back[0]["epsilon_spent"])
    assert "ERROR×1" in format_table(rows)


def test_quick_and_epsilon_override_and_task_filter(tiny_suite):
    rows = run_suite(tiny_suite, seeds=1, quick=True, epsilons=[1.0, 4.0], progress=False)
    assert sorted(r["epsilon_target"] for r in rows if r["method"] == "toy-dp") == [1.0, 4.0]
    assert not any(r["task"] == "toy:B->A" for r in rows)  # quick drops the extra task
    only = run_suite(tiny_suite, tasks=["toy-baseline"], seeds=1, progress=False)
    assert [r["method"] for r in only] == ["toy-baseline"]
    with pytest.raises(ValueError, match="no task matches"):
        run_suite(tiny_suite, tasks=["nothing"], seeds=1, progress=False)
    with pytest.raises(KeyError, match="unknown benchmark suite"):
        run_suite("no-such-suite", seeds=1, progress=False)


def test_format_table_and_summary(tiny_suite, tmp_path):
    rows = run_suite(tiny_suite, seeds=2, quick=True, out=tmp_path / "t.json", progress=False)
    summary = {(s["method"], s["epsilon"]): s for s in summarise(rows)}
    dp = summary[("toy-dp", 2.0)]
    assert dp["mean"] == pytest.approx(0.505) and dp["std"] == pytest.approx(0.005) and dp["n"] == 2
    assert dp["paper"] == 0.6 and dp["valid"]
    table = format_table(load_rows(tmp_path / "t.json"))
    lines = table.splitlines()
    assert "measured" in lines[0] and "paper" in lines[0]
    dp_line = next(line for line in lines if "toy-dp" in line)
    assert "0.5050±0.005" in dp_line and "0.6" in dp_line and "yes" in dp_line
    base_line = next(line for line in lines if "toy-baseline" in line)
    assert "∞" in base_line and "0.9000" in base_line


def test_duplicate_suite_name_rejected(tiny_suite):
    with pytest.raises(ValueError, match="registered twice"):
        register_suite("tiny-test")(lambda quick, epsilons=None: [])


def test_source_only_suite_is_registered(data_root):  # building the rows reads the pairs' shapes
    suite = registry.get_suite("source-only")
    tasks = suite.build(False, None)
    names = {t.task for t in tasks}
    assert {"decaf6:D->W", "decaf6:W->D"} <= names
    assert sum(t.task.startswith("bow5000:") for t in tasks if t.method == "source-only-logreg") == 12
    assert {t.method for t in tasks} == {"source-only-logreg", "source-only-mlp", "dp-ncm", "dp-logreg"}
    assert all(t.mode == ("sound" if t.method.startswith("dp-") else "non-private") for t in tasks)


def test_format_table_flags_sound_rows_not_beating_dp_source_only():
    def row(method, value, mode="sound", eps=2.0):
        return {"task": "t", "method": method, "mode": mode, "epsilon_target": eps, "epsilon_spent": eps, "value": value,
                "seconds": 0.0, "guarantee_valid": True, "paper_value": None, "error": None}

    rows = [row("dp-ncm", 0.6), row("dp-logreg", 0.7), row("weak", 0.65), row("strong", 0.8),
            row("weak", 0.65, eps=20.0), row("np", 0.5, mode="non-private", eps=math.inf)]
    lines = {(line.split()[1], line.split()[3]): line for line in format_table(rows).splitlines()[2:]}
    assert lines[("weak", "2")].endswith("< DP-SO")  # below the better DP source-only row (0.7)
    assert not lines[("strong", "2")].endswith("< DP-SO")
    assert not lines[("weak", "20")].endswith("< DP-SO")  # no DP source-only row at ε = 20
    assert not lines[("np", "∞")].endswith("< DP-SO") and not lines[("dp-ncm", "2")].endswith("< DP-SO")


def _summary_row(method, mode, eps, mean, paper=None, row="X", cause=None, blocked=None):
    return {"task": "toy:A->B", "method": method, "mode": mode, "epsilon": eps, "mean": mean, "std": 0.0, "n": 1,
            "errors": 0, "paper": paper, "paper_row": row, "cause": cause, "blocked": blocked}


def test_paper_table_shows_cause_only_when_paper_mode_is_far_off():
    from dpadapt.bench.runner import format_paper_table

    rows = [_summary_row("m", "paper", 2.0, 0.60, paper=0.90, cause="noise"), _summary_row("m", "paper-no-noise", math.inf, 0.88),
            _summary_row("ours", "sound", 2.0, 0.80)]
    line = format_paper_table(rows).splitlines()[-1]
    assert "90.0" in line and "60.0" in line and "88.0" in line and "80.0" in line and line.endswith("noise")
    close = format_paper_table([_summary_row("m", "paper", 2.0, 0.87, paper=0.90, cause="noise")]).splitlines()[-1]
    assert not close.endswith("noise")
    missing = format_paper_table([_summary_row("m", "paper", 2.0, 0.10, paper=0.90)]).splitlines()[-1]
    assert missing.endswith("MISSING")
    assert format_paper_table([_summary_row("m", "paper", 2.0, 0.1, row=None)]) == ""
    blocked = format_paper_table([_summary_row("m", "paper", 2.0, 0.88, paper=0.90, blocked="no such data")]).splitlines()[-1]
    assert blocked.endswith("blocked on data: no such data")
    percent = format_paper_table([_summary_row("m", "paper", 10.0, 78.0, paper=95.5, cause="c")]).splitlines()[-1]
    assert " 95.5 " in percent and "78.0" in percent and percent.endswith("c")


def test_causes_are_labelled_measured_or_candidate():
    """Issue 31: a cause says whether a run isolates it; an unlabelled one is refused when the row is declared."""
    from dpadapt.bench.registry import BenchTask
    from dpadapt.bench.suites.dpswd import build_digits_paper

    with pytest.raises(ValueError, match="measured"):
        BenchTask("s", "t", "m", "paper", lambda seed: None, cause="the noise")
    assert BenchTask("s", "t", "m", "paper", lambda seed: None, cause="candidate: the noise").cause
    rows = {(t.task, t.method, t.mode): t for t in build_digits_paper(False)}
    m_to_u = rows[("digits-paper:M->U", "dpswd", "paper")]  # the paper's own procedure is a row now
    assert m_to_u.cause.startswith("candidate: unexplained") and m_to_u.blocked is None
    assert not any(t.blocked for t in rows.values())


def test_paper_table_gives_the_cause_of_a_line_without_a_paper_mode_run():
    """A gap in the no-noise or sound column of a line that has no paper-mode run shows the suite's cause."""
    from dpadapt.bench.runner import format_paper_table

    rows = [_summary_row("swd", "non-private", math.inf, 0.76, paper=0.94, cause="candidate: unexplained"),
            _summary_row("ours", "sound", 10.0, 0.78, paper=0.94, cause="candidate: unexplained")]
    assert format_paper_table(rows).splitlines()[-1].endswith("candidate: unexplained")
    close = [_summary_row("ours", "sound", 10.0, 0.92, paper=0.94, cause="candidate: unexplained")]
    assert not format_paper_table(close).splitlines()[-1].endswith("unexplained")
    silent = [_summary_row("ours", "sound", 10.0, 0.50, paper=0.94)]  # no cause and no paper mode: no MISSING
    assert not format_paper_table(silent).splitlines()[-1].endswith("MISSING")


def test_resumable_runs_tell_two_epsilons_of_one_task_apart(tmp_path):
    """Was: a run at ε = 1 counted as done the same task and seed at ε = 4 (the key had no ε), so a resumed study
    silently skipped every other ε."""
    from dpadapt.bench.runner import run_resumable

    ran = []

    def task(eps):
        return BenchTask("t", "toy:A->B", "toy-dp", "sound", lambda s, e=eps: (ran.append((e, s)), RunOutcome(e))[1],
                         epsilon=eps, delta=1e-5)

    out = tmp_path / "rows.json"
    run_resumable([(task(1.0), 0)], out)
    rows = run_resumable([(task(1.0), 0), (task(4.0), 0), (task(math.inf), 0)], out)
    assert ran == [(1.0, 0), (4.0, 0), (math.inf, 0)] and len(rows) == 3


def test_rows_read_back_from_gzip_compressed_json(tmp_path):
    """A result file kept compressed in the tree (``*.json.gz``) reads as the JSON it compresses, ∞ restored."""
    import gzip
    import math

    from dpadapt.bench.runner import load_rows, write_rows

    rows = [{"task": "t", "method": "m", "mode": "sound", "epsilon_target": math.inf, "seed": 0, "value": 0.5}]
    plain = write_rows(rows, tmp_path / "r.json")
    packed = tmp_path / "r.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert load_rows(packed) == load_rows(plain) and load_rows(packed)[0]["epsilon_target"] == math.inf
