"""The ``decisions`` suite written out: the selection of ``benchmarks/decisions/README.md``, the done-when
tables (prevalence, calibration, decisions) and a reliability diagram (``reliability.png``)."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

CALIBRATIONS = ("none", "temperature")
PREVALENCES = ("em", "mean", "source")


def _eps(e: float) -> str:
    return "None" if not math.isfinite(e) else f"{e:g}"


def _cells(rows: list[dict[str, Any]]) -> dict[tuple, list[dict]]:
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        if r.get("error") is None:
            cells[(r["method"], r["task"], float(r["epsilon_target"]))].append(r)
    return cells


def _mean(rs: list[dict], key: str) -> float:
    vals = [float(r[key]) for r in rs if key in r and r[key] is not None and not math.isnan(float(r[key]))]
    return float(np.mean(vals)) if vals else math.nan


def _calibrated(slope: float, ece: float) -> bool:
    return 0.7 <= slope <= 1.4 and ece <= 0.05


def candidate_scores(rows: list[dict[str, Any]], method: str, calibrations, prevalences) -> tuple[list[str], dict]:
    """Per (calibration, prevalence) candidate of ``method`` over its development cells (ε ∈ {1, 4, None}, every ε
    weighted equally): (calibrated cells, mean ECE, prevalence MAE, 90 % coverage), and the table of them."""
    cells = {k: v for k, v in _cells(rows).items() if k[0] == method and (k[2] in (1.0, 4.0) or not math.isfinite(k[2]))}
    lines = ["| calibration | prevalence | calibrated cells | mean ECE | prevalence MAE | 90 % coverage |", "|---|---|---|---|---|---|"]
    score = {}
    if not cells:  # no rows of this method (a suite run without it): nothing to select on
        return lines, score
    for cal in calibrations:
        for m in prevalences:
            key = f"{cal}|{m}|"
            ok = sum(_calibrated(_mean(rs, key + "slope"), _mean(rs, key + "ece")) for rs in cells.values())
            by_eps = defaultdict(list)
            for (_, _, e), rs in cells.items():
                by_eps[e].append((_mean(rs, key + "abs_error"), _mean(rs, key + "covered"), _mean(rs, key + "ece")))
            mae, cov, ece = (float(np.mean([np.mean([t[i] for t in v]) for v in by_eps.values()])) if by_eps else math.nan
                             for i in range(3))
            score[(cal, m)] = (ok, ece, mae, cov)
            lines.append(f"| {cal} | {m} | {ok}/{len(cells)} | {ece:.3f} | {mae:.3f} | {cov:.2f} |")
    return lines, score


def selection(rows: list[dict[str, Any]]) -> tuple[list[str], tuple[str, str]]:
    """The rule of the README applied to SoundDA's development cells (ε ∈ {1, 4, None})."""
    lines, score = candidate_scores(rows, "sound", CALIBRATIONS, PREVALENCES)
    if score:
        cal = max(CALIBRATIONS, key=lambda c: (max(score[(c, m)][0] for m in PREVALENCES),
                                               -min(score[(c, m)][1] for m in PREVALENCES), c == "none"))
        best = min(score[(cal, m)][2] for m in PREVALENCES)
        near = [m for m in PREVALENCES if score[(cal, m)][2] <= best + 0.005]
        m = max(near, key=lambda m: (score[(cal, m)][3], {"source": 2, "mean": 1, "em": 0}[m]))
        lines += ["", f"Selected by the rule: calibration **{cal}**, prevalence **{m}**."]
        return lines, (cal, m)
    return lines, ("none", "em")


def _table(rows, title: str, cols: list[tuple[str, str]], cal_of, prev: str) -> list[str]:
    cells = _cells(rows)
    out = [f"### {title}", "", "| estimator | pair | ε | n | " + " | ".join(c for c, _ in cols) + " |",
           "|---|---|---|---|" + "---|" * len(cols)]
    for (method, task, e), rs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[0][2])):
        prefix = f"{cal_of(method)}|{prev}|"
        out.append(f"| {method} | {task} | {_eps(e)} | {len(rs)} | " +
                   " | ".join(fmt.format(_mean(rs, prefix + key)) for _, (key, fmt) in
                              [(c, k) for c, k in cols]) + " |")
    return out


def _unit_pair(task: str) -> bool:
    """One of the 12 PhysioNet unit pairs (not a three-units → one-unit case)."""
    return task.startswith("physionet") and "+" not in task


def _pooled(task: str) -> bool:
    return task.startswith("physionet") and "+" in task


def summary(rows, cal_of, prev: str, which=_unit_pair) -> list[str]:
    """Per estimator × ε, over the tasks ``which`` keeps (the 12 PhysioNet pairs): the done-when numbers."""
    cells = _cells(rows)
    groups: dict[tuple, list] = defaultdict(list)
    for (method, task, e), rs in cells.items():
        if which(task):
            groups[(method, e)].append(rs)
    out = ["| estimator | ε | pairs | prevalence MAE | 90 % coverage | calibrated pairs | mean slope | mean ECE | "
           "balanced BA | best BA − balanced BA (max) | best acc − predict acc (max) | max |mean p − rate| | AUC |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (method, e), cell_list in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        p = f"{cal_of(method)}|{prev}|"
        m = {k: [_mean(rs, p + k) for rs in cell_list] for k in
             ("abs_error", "covered", "slope", "ece", "balanced_ba", "best_ba", "accuracy", "best_accuracy", "mean_p",
              "true_rate", "auc")}
        ok = sum(_calibrated(s, x) for s, x in zip(m["slope"], m["ece"]))
        out.append(f"| {method} | {_eps(e)} | {len(cell_list)} | {np.mean(m['abs_error']):.3f} | {np.mean(m['covered']):.2f} | "
                   f"{ok}/{len(cell_list)} | {np.nanmean(m['slope']):.2f} | {np.mean(m['ece']):.3f} | "
                   f"{100 * np.mean(m['balanced_ba']):.1f} | {100 * np.max(np.subtract(m['best_ba'], m['balanced_ba'])):.1f} | "
                   f"{100 * np.max(np.subtract(m['best_accuracy'], m['accuracy'])):.1f} | "
                   f"{np.max(np.abs(np.subtract(m['mean_p'], m['true_rate']))):.3f} | {np.mean(m['auc']):.3f} |")
    return out


def done_when_counts(rows, cal_of, prev: str, which=_unit_pair) -> list[str]:
    """Per estimator × ε: in how many pairs each per-pair criterion of the issue is met (means over seeds)."""
    groups: dict[tuple, list] = defaultdict(list)
    for (method, task, e), rs in _cells(rows).items():
        if which(task):
            groups[(method, e)].append(rs)
    out = ["| estimator | ε | pairs | seeds (min) | balanced BA within 2 points of the best | predict acc within 2 points of the "
           "best | mean p within 0.05 of the rate | calibrated (slope 0.7–1.4, ECE ≤ 0.05) |", "|---|---|---|---|---|---|---|---|"]
    for (method, e), cell_list in sorted(groups.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        p = f"{cal_of(method)}|{prev}|"
        m = {k: np.array([_mean(rs, p + k) for rs in cell_list]) for k in
             ("balanced_ba", "best_ba", "accuracy", "best_accuracy", "mean_p", "true_rate", "slope", "ece")}
        n = len(cell_list)
        out.append(f"| {method} | {_eps(e)} | {n} | {min(len(rs) for rs in cell_list)} | "
                   f"{int(np.sum(m['best_ba'] - m['balanced_ba'] <= 0.02))}/{n} | "
                   f"{int(np.sum(m['best_accuracy'] - m['accuracy'] <= 0.02))}/{n} | "
                   f"{int(np.sum(np.abs(m['mean_p'] - m['true_rate']) <= 0.05))}/{n} | "
                   f"{sum(_calibrated(a, b) for a, b in zip(m['slope'], m['ece']))}/{n} |")
    return out


def synthetic_sweep(rows, cal_of) -> list[str]:
    """The synthetic family: per estimator × ε, the absolute error of each prevalence estimator at each target rate
    (mean over seeds) and its largest over the sweep; the done-when is ≤ 0.05 across the sweep at ε = 4."""
    cells = {k: v for k, v in _cells(rows).items() if k[1].startswith("synthetic:")}
    rates = sorted({float(task.rsplit("->", 1)[1]) for _, task, _ in cells})
    out = ["| estimator | ε | prevalence | " + " | ".join(f"{r:g}" for r in rates) + " | max | 90 % coverage | mean slope | seeds |",
           "|---|---|---|" + "---|" * (len(rates) + 4)]
    for method, e in sorted({(m, e) for m, _, e in cells}, key=lambda k: (k[0], -k[1])):
        for prev in (*PREVALENCES, *(("default",) if cal_of(method) == "default" else ())):
            key = f"{cal_of(method)}|{prev}|"
            errs, cov, slope = [], [], []
            for r in rates:
                rs = next((v for (m, task, ee), v in cells.items() if m == method and ee == e and
                           float(task.rsplit("->", 1)[1]) == r), [])
                errs.append(_mean(rs, key + "abs_error"))
                cov.append(_mean(rs, key + "covered"))
                slope.append(_mean(rs, key + "slope"))
            if all(math.isnan(x) for x in errs):  # not recorded for this candidate (the default model: one estimator)
                continue
            n = min((len(v) for (m, _, ee), v in cells.items() if m == method and ee == e), default=0)
            out.append(f"| {method} | {_eps(e)} | {prev} | " + " | ".join(f"{x:.3f}" for x in errs) +
                       f" | **{np.nanmax(errs):.3f}** | {np.nanmean(cov):.2f} | {np.nanmean(slope):.2f} | {n} |")
    return out


def reliability_figure(rows, path: Path, cal_of) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 4))
    for ax, method in zip(axes, ("sound", "dpot-cs")):
        by_eps: dict[float, np.ndarray] = defaultdict(lambda: np.zeros((10, 3)))
        for r in rows:
            if r.get("error") is None and r["method"] == method and "reliability" in r:
                R = np.nan_to_num(np.asarray(r["reliability"], dtype=float))
                acc = by_eps[float(r["epsilon_target"])]
                acc[:, 0] += R[:, 0]
                acc[:, 1] += R[:, 0] * R[:, 1]
                acc[:, 2] += R[:, 0] * R[:, 2]
        for e, acc in sorted(by_eps.items()):
            keep = acc[:, 0] > 0
            ax.plot(acc[keep, 1] / acc[keep, 0], acc[keep, 2] / acc[keep, 0], "o-", label=f"ε = {_eps(e)}")
        ax.plot([0, 1], [0, 1], "k:", lw=1)
        ax.set_title(f"{method} ({cal_of(method)}): target rows pooled", fontsize=9)
        ax.set_xlabel("predicted probability of death")
        ax.set_ylabel("observed rate")
        if by_eps:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


SCORE_CALIBRATIONS = ("platt", "temperature")
SCORE_PREVALENCES = ("match", "match-ls", "em", "mean")


def score_selection(rows: list[dict[str, Any]]) -> tuple[list[str], tuple[str, str]]:
    """The README's rule for the second release (task ``sound-scores``) on its development cells (ε ∈ {1, 4, None})."""
    lines, score = candidate_scores(rows, "sound-scores", SCORE_CALIBRATIONS, SCORE_PREVALENCES)
    if not score:
        return lines, ("platt", "match")

    def best_of(c: str) -> tuple:
        return max((score[(c, m)][0], -score[(c, m)][1]) for m in SCORE_PREVALENCES)

    cal = max(SCORE_CALIBRATIONS, key=lambda c: (*best_of(c), c == "temperature"))
    best = min(score[(cal, m)][2] for m in SCORE_PREVALENCES)
    near = [m for m in SCORE_PREVALENCES if score[(cal, m)][2] <= best + 0.005]
    m = max(near, key=lambda m: (score[(cal, m)][3], m == "match"))
    lines += ["", f"Selected by the rule: calibration **{cal}**, prevalence **{m}**."]
    return lines, (cal, m)


def write_report(rows: list[dict[str, Any]], out: Path, selected: tuple[str, str] | None = None) -> list[Path]:
    """The tables and the figure; ``selected`` (calibration, prevalence) fixes the candidates the tables show (the
    defaults already chosen) instead of applying the rule to ``rows`` (which is still tabulated)."""
    sel, (chosen_cal, prev) = selection(rows)
    if selected is not None:
        chosen_cal, prev = selected
        sel = [*sel, "", f"Tables below: the defaults as chosen (calibration **{chosen_cal}**, prevalence **{prev}**), "
                         "not re-selected on these rows."]

    def cal_of(method: str) -> str:
        return chosen_cal if method == "sound" else "none"

    stem = Path(out).with_suffix("")
    md = Path(f"{stem}-tables.md")
    cols = [("est. rate", ("prevalence", "{:.3f}")), ("low", ("low", "{:.3f}")), ("high", ("high", "{:.3f}")),
            ("true rate", ("true_rate", "{:.3f}")), ("covered", ("covered", "{:.2f}")), ("AUC", ("auc", "{:.3f}")),
            ("slope", ("slope", "{:.2f}")), ("ECE", ("ece", "{:.3f}")), ("mean p", ("mean_p", "{:.3f}")),
            ("balanced BA", ("balanced_ba", "{:.3f}")), ("best BA", ("best_ba", "{:.3f}")),
            ("predict acc", ("accuracy", "{:.3f}")), ("best acc", ("best_accuracy", "{:.3f}"))]
    text = ["# decisions suite", "", "## Selection (SoundDA, development cells)", "", *sel, "",
            f"## Summary over the PhysioNet pairs (selected: SoundDA calibration {chosen_cal}, prevalence {prev})", "",
            *summary(rows, cal_of, prev), "",
            "### Per-pair criteria of the issue: pairs meeting each (PhysioNet pairs)", "",
            *done_when_counts(rows, cal_of, prev), "",
            *(["## Summary over the four three-units → one-unit cases (selected: as above)", "",
               *summary(rows, cal_of, prev, _pooled), ""] if any(_pooled(r["task"]) for r in rows) else []),
            *(["## The synthetic family: absolute error of the estimated target positive rate (mean over seeds)", "",
               *synthetic_sweep(rows, cal_of), ""] if any(r["task"].startswith("synthetic:") for r in rows) else []),
            *_table(rows, "Every cell (selected candidates; mean over seeds)", cols, cal_of, prev), ""]
    if any(r.get("method") == "sound-scores" for r in rows):
        score_sel, (score_cal, score_prev) = score_selection(rows)
        mine = [r for r in rows if r.get("method") == "sound-scores"]
        text += ["## The second release (`sound-scores`: per-class score histograms, 20 % of the budget)", "", *score_sel, "",
                 f"### Summary over the PhysioNet pairs (selected: calibration {score_cal}, prevalence {score_prev})", "",
                 *summary(mine, lambda method: score_cal, score_prev), ""]
        for cal in SCORE_CALIBRATIONS:
            for m in SCORE_PREVALENCES:
                if (cal, m) != (score_cal, score_prev):
                    text += [f"#### candidate: calibration {cal}, prevalence {m}", "", *summary(mine, lambda method, c=cal: c, m), ""]
    md.write_text("\n".join(text), encoding="utf-8")
    return [md, reliability_figure(rows, Path(f"{stem}-reliability.png"), cal_of)]
