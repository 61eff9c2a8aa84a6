"""Run benchmark suites, write result rows, and print measured-vs-paper tables."""

from __future__ import annotations

import csv
import gzip
import json
import math
import time
import traceback
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from dpadapt.bench.registry import BenchTask, get_suite

ROW_FIELDS = (
    "suite",
    "task",
    "method",
    "mode",
    "epsilon_target",
    "epsilon_spent",
    "delta",
    "seed",
    "metric",
    "value",
    "seconds",
    "guarantee_valid",
    "paper_value",
    "paper_row",
    "cause",
    "blocked",
    "error",
)

#: Modes of the paper comparison, in column order (:func:`format_paper_table`).
PAPER_MODE = "paper"
PAPER_NO_NOISE = "paper-no-noise"
#: Paper mode further than this from the paper's number needs a cause.
CAUSE_GAP = 0.05


def select_tasks(tasks: list[BenchTask], patterns: Sequence[str] | None) -> list[BenchTask]:
    """Keep tasks whose task name (or method) contains one of ``patterns`` (case-insensitive)."""
    if not patterns:
        return tasks
    pats = [p.lower() for p in patterns]
    return [t for t in tasks if any(p in t.task.lower() or p == t.method.lower() for p in pats)]


def run_task(task: BenchTask, seed: int) -> dict[str, Any]:
    """Run one task for one seed and return its result row (errors are recorded, not raised)."""
    start = time.perf_counter()
    row: dict[str, Any] = {
        "suite": task.suite,
        "task": task.task,
        "method": task.method,
        "mode": task.mode,
        "epsilon_target": task.epsilon,
        "delta": task.delta,
        "seed": seed,
        "metric": task.metric,
        "paper_value": task.paper_value,
        "paper_row": task.paper_row,
        "cause": task.cause,
        "blocked": task.blocked,
        "error": None,
    }
    try:
        outcome = task.run(seed)
        row.update(
            value=float(outcome.value),
            epsilon_spent=outcome.epsilon_spent,
            guarantee_valid=outcome.guarantee_valid,
        )
        if outcome.delta_spent is not None:
            row["delta"] = outcome.delta_spent
        if len(outcome.guarantees) > 1:
            row["epsilon_by_party"] = {p: g.epsilon for p, g in outcome.guarantees.items()}
        row.update(outcome.extra)
    except Exception as exc:  # a failing row must not kill a long benchmark
        row.update(value=math.nan, epsilon_spent=math.nan, guarantee_valid=False,
                   error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc(limit=5))
    row["seconds"] = time.perf_counter() - start
    return row


def run_suite(
    name: str,
    tasks: Sequence[str] | None = None,
    seeds: int = 3,
    epsilons: Sequence[float] | None = None,
    quick: bool = False,
    out: str | Path | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Run every selected task of suite ``name`` for ``seeds`` seeds; write rows to ``out``.

    ``out`` ending in ``.json`` gets a JSON list of rows (written after every run, so partial
    results survive an interruption); a ``.csv`` twin is written beside it.
    """
    suite = get_suite(name)
    selected = select_tasks(suite.build(quick, epsilons), tasks)
    if not selected:
        raise ValueError(f"suite {name!r}: no task matches {list(tasks or [])}")
    rows: list[dict[str, Any]] = []
    jobs = [(t, s) for t in selected for s in range(seeds)]
    bar = tqdm(jobs, desc=f"bench {name}", unit="run", disable=not progress)
    for task, seed in bar:
        bar.set_postfix_str(f"{task.task} {task.method}/{task.mode} ε={task.epsilon:g} seed={seed}")
        rows.append(run_task(task, seed))
        if out is not None:
            write_rows(rows, out)
    return rows


def run_resumable(jobs: Sequence[tuple[BenchTask, int]], out: str | Path) -> list[dict[str, Any]]:
    """Run the (task, seed) ``jobs`` whose row is not yet in ``out`` (a file of :func:`write_rows`), in order.

    Rows are written after every run and one JSON line per run is printed, so a long study survives an
    interruption and restarts where it stopped. Returns every row of ``out``.
    """
    out = Path(out)
    rows = load_rows(out) if out.exists() else []
    # ε is part of a run's identity: one task name and mode run at several ε (e.g. every private ε is mode "sound")
    done = {(r["task"], r["method"], r["mode"], float(r["epsilon_target"]), r["seed"]) for r in rows if r.get("error") is None}
    for task, seed in jobs:
        if (task.task, task.method, task.mode, float(task.epsilon), seed) in done:
            continue
        row = run_task(task, seed)
        rows.append(row)
        write_rows(rows, out)
        print(json.dumps(_clean({k: row.get(k) for k in ("task", "method", "mode", "seed", "value", "seconds", "error")})),
              flush=True)
    return rows


def _clean(value: Any) -> Any:
    if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (np.floating, np.integer)):
        return _clean(value.item())
    return value


def write_rows(rows: list[dict[str, Any]], out: str | Path) -> Path:
    """Write rows as JSON (and CSV beside it)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    clean = [_clean(r) for r in rows]
    if out.suffix == ".csv":
        csv_path = out
    else:
        out.write_text(json.dumps(clean, indent=1))
        csv_path = out.with_suffix(".csv")
    with open(csv_path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=ROW_FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(clean)
    return out


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean/std of each (task, method, mode, ε) over seeds, with ε spent and the paper's number."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["task"], r["method"], r["mode"], r["epsilon_target"])].append(r)
    out = []
    for (task, method, mode, eps), rs in groups.items():
        vals = np.array([r["value"] for r in rs if r.get("error") is None], dtype=float)
        spent = [r["epsilon_spent"] for r in rs if r.get("error") is None]
        out.append(
            {
                "task": task,
                "method": method,
                "mode": mode,
                "epsilon": eps,
                "mean": float(vals.mean()) if vals.size else math.nan,
                "std": float(vals.std()) if vals.size > 1 else 0.0,
                "n": int(vals.size),
                "errors": sum(r.get("error") is not None for r in rs),
                "epsilon_spent": max(spent) if spent else math.nan,
                "valid": all(r.get("guarantee_valid") for r in rs),
                "paper": rs[0].get("paper_value"),
                "metric": rs[0].get("metric", "accuracy"),
                "paper_row": rs[0].get("paper_row"),
                "cause": rs[0].get("cause"),
                "blocked": rs[0].get("blocked"),
                "seconds": float(np.mean([r["seconds"] for r in rs])),
            }
        )
    return out


#: Rows that are DP source-only baselines: a sound row of the same task and ε that does not beat
#: the best of them is flagged in :func:`format_table`.
DP_SOURCE_ONLY = ("dp-ncm", "dp-logreg", "dp-lr", "dp-lsq")


def _dp_source_only_best(summary: list[dict[str, Any]]) -> dict[tuple, float]:
    best: dict[tuple, float] = {}
    for s in summary:
        if s["method"] in DP_SOURCE_ONLY and s["mode"] == "sound" and s["n"]:
            key = (s["task"], s["epsilon"])
            best[key] = max(best.get(key, -math.inf), s["mean"])
    return best


def format_table(rows: list[dict[str, Any]]) -> str:
    """Measured vs paper table (one line per task × method × mode × ε).

    The last column flags (``< DP-SO``) a sound row that does not beat the best DP source-only row
    (:data:`DP_SOURCE_ONLY`) of the same task at the same ε.
    """
    summary = summarise(rows)
    best = _dp_source_only_best(summary)
    header = f"{'task':<22} {'method':<22} {'mode':<12} {'ε target':>8} {'ε spent':>8} {'valid':>5} {'measured':>15} {'paper':>7} {'s/run':>7}  flag"
    lines = [header, "-" * len(header)]
    for s in sorted(summary, key=lambda s: (s["task"], s["method"], s["mode"], s["epsilon"])):
        eps = "∞" if math.isinf(s["epsilon"]) else f"{s['epsilon']:g}"
        spent = "∞" if math.isinf(s["epsilon_spent"]) else ("—" if math.isnan(s["epsilon_spent"]) else f"{s['epsilon_spent']:.3g}")
        measured = f"{s['mean']:.4f}±{s['std']:.3f}" if s["n"] else f"ERROR×{s['errors']}"
        paper = "—" if s["paper"] is None else f"{s['paper']:.4g}"
        ref = best.get((s["task"], s["epsilon"]))
        flag = ("< DP-SO" if s["mode"] == "sound" and s["method"] not in DP_SOURCE_ONLY and ref is not None
                and s["n"] and s["mean"] <= ref else "")
        if s.get("blocked"):
            flag = f"{flag} blocked on data".strip()
        lines.append(
            f"{s['task']:<22} {s['method']:<22} {s['mode']:<12} {eps:>8} {spent:>8} {'yes' if s['valid'] else 'no':>5} {measured:>15} {paper:>7} {s['seconds']:>7.2f}  {flag}".rstrip()
        )
    paper = format_paper_table(summary)
    return "\n".join(lines + ([""] + paper.splitlines() if paper else []))


def _points(accuracy: float) -> float:
    """Accuracy in percent points (suites report fractions, a few report percent already)."""
    return 100.0 * accuracy if accuracy <= 1.5 else accuracy


def format_paper_table(summary: list[dict[str, Any]]) -> str:
    """One line per (task, paper row, ε): paper, paper mode, paper mode without noise, sound mode, cause.

    Rows join a line through their ``paper_row``; the paper's number is taken from whichever row
    carries it. For accuracy the cause is printed when paper mode is more than :data:`CAUSE_GAP` off
    the paper (``MISSING`` when the suite gave none, so that a gap cannot pass unexplained), or, when
    the line has no paper-mode run, when its no-noise or sound column is and the suite gave one; for other
    metrics (e.g. MSE on a different scale) whenever the suite gives one. A joined non-private row is
    the "no noise" column. A line whose
    paper data is not available here says "blocked on data" with the reason instead.
    """
    lines_by_key: dict[tuple, dict[str, Any]] = {}
    for s in summary:
        if not s.get("paper_row"):
            continue
        key = (s["task"], s["paper_row"])
        line = lines_by_key.setdefault(key, {"paper": None, "cause": None, "blocked": None, "by_mode": {}})
        if s["paper"] is not None:
            line["paper"] = s["paper"]
        line["cause"] = line["cause"] or s.get("cause")
        line["blocked"] = line["blocked"] or s.get("blocked")
        line["metric"] = s.get("metric", "accuracy")
        # a non-private row joined to a paper line is the same pipeline without noise
        mode = PAPER_NO_NOISE if s["mode"] == "non-private" else s["mode"]
        eps = math.inf if mode == PAPER_NO_NOISE else s["epsilon"]
        line["by_mode"].setdefault(mode, {})[eps] = s
    if not lines_by_key:
        return ""

    def fmt(value: float, metric: str) -> str:  # accuracy in percent, other metrics as they are
        return f"{_points(value):.1f}" if metric == "accuracy" else f"{value:.4f}"

    def cell(s: dict[str, Any] | None) -> str:
        if s is None:
            return "—"
        if not s["n"]:
            return f"ERROR×{s['errors']}"
        metric = s.get("metric", "accuracy")
        std = 100 * s["std"] if metric == "accuracy" and s["mean"] <= 1.5 else s["std"]
        return f"{fmt(s['mean'], metric)}±{std:.1f}" if metric == "accuracy" else f"{fmt(s['mean'], metric)}±{std:.4f}"

    header = (f"{'task':<22} {'paper row':<20} {'ε':>5} {'paper':>6} {'paper mode':>13} {'no noise':>13} "
              f"{'sound mode':>13}  cause (paper mode > {100 * CAUSE_GAP:.0f} points off)")
    out = [header, "-" * len(header)]
    for (task, row), line in sorted(lines_by_key.items()):
        modes = line["by_mode"]
        for eps in sorted({e for m, by in modes.items() if m != PAPER_NO_NOISE for e in by} or {math.inf}):
            paper_mode = modes.get(PAPER_MODE, {}).get(eps)
            no_noise = next(iter(modes.get(PAPER_NO_NOISE, {}).values()), None)
            sound = modes.get("sound", {}).get(eps)
            at_eps = [r["paper"] for r in (paper_mode, sound, no_noise if math.isinf(eps) else None)
                      if r is not None and r["paper"] is not None]  # the paper's number at this ε
            paper_value = at_eps[0] if at_eps else line["paper"]
            cause = ""
            accuracy = line["metric"] == "accuracy"
            if paper_value is not None and paper_mode is not None and paper_mode["n"] and \
                    (not accuracy or abs(_points(paper_mode["mean"]) - _points(paper_value)) > 100 * CAUSE_GAP):
                cause = line["cause"] or ("MISSING" if accuracy else "")
            elif paper_value is not None and paper_mode is None and accuracy and line["cause"] and any(
                    r is not None and r["n"] and abs(_points(r["mean"]) - _points(paper_value)) > 100 * CAUSE_GAP
                    for r in (no_noise, sound)):
                cause = line["cause"]  # no paper-mode run here, but the gap is in the other columns too
            if line["blocked"]:
                cause = f"blocked on data: {line['blocked']}"
            paper = "—" if paper_value is None else fmt(paper_value, line["metric"])
            e = "∞" if math.isinf(eps) else f"{eps:g}"
            out.append(f"{task:<22} {row:<20} {e:>5} {paper:>6} {cell(paper_mode):>13} {cell(no_noise):>13} "
                       f"{cell(sound):>13}  {cause}".rstrip())
    return "\n".join(out)


def with_current_causes(rows: list[dict[str, Any]], tasks: Sequence[BenchTask]) -> list[dict[str, Any]]:
    """Rows recorded earlier, with the cause each task gives now (a cause is text of the suite, not a result)."""
    causes = {(t.task, t.method, t.mode): t.cause for t in tasks}
    return [{**r, "cause": causes.get((r["task"], r["method"], r["mode"]), r.get("cause"))} for r in rows]


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """Read rows written by :func:`write_rows` (JSON, or that JSON gzip-compressed: ``*.json.gz``), restoring ∞."""
    path = Path(path)
    rows = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())
    for r in rows:
        for key in ("epsilon_target", "epsilon_spent"):
            if r.get(key) in ("inf", None):
                r[key] = math.inf if r.get(key) == "inf" else math.nan
    return rows
