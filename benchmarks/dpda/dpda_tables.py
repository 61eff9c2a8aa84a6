"""Markdown tables (Table V measured vs paper, ε spent, DP-SGD time ratios) and the ε-sweep plot.

Usage: python benchmarks/dpda/dpda_tables.py benchmarks/dpda/results  (reads dpda*.json written by ``dpadapt bench``,
and the replace-one re-runs ``dpda-calibrated-replace-one*.json``, ``dpda-office-sound-replace-one.json``,
``dpda-sweep-replace-one.json``)
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from dpadapt.bench import load_rows
from dpadapt.bench.suites.dpda import PAPER_COLUMN, TABLE_V, plot_sweep

ABBREV = {"books": "B", "dvd": "D", "electronics": "E", "kitchen": "K"}
COLUMNS = [
    ("dann", "non-private", "DANN"),
    ("nn", "non-private", "NN"),
    ("dpda", "sound", "DPDA sound σ=8"),
    ("dpda", "paper", "DPDA paper σ=8"),
    ("gdpda", "sound", "G-DPDA sound σ=8"),
    ("gdpda", "paper", "G-DPDA paper σ=8"),
    ("dpda-calibrated", "sound", "DPDA sound, ε=8 spent"),
    ("gdpda-calibrated", "sound", "G-DPDA sound, ε=(4,8) spent"),
]


def _ok(rows):
    return [r for r in rows if r.get("error") is None]


def table_v(rows) -> str:
    cells: dict[tuple, list[float]] = defaultdict(list)
    for r in _ok(rows):
        cells[(r["task"], r["method"], r["mode"])].append(r["value"])
    tasks = [f"bow5000:{ABBREV[s]}->{ABBREV[t]}" for s, t in TABLE_V]
    head = "| pair | " + " | ".join(c[2] for c in COLUMNS) + " | paper DANN / NN / DPDA / G-DPDA |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 2)]
    means = defaultdict(list)
    for (s, t), task in zip(TABLE_V, tasks):
        row = [task.split(":")[1]]
        for method, mode, _ in COLUMNS:
            v = cells.get((task, method, mode))
            if v:
                means[(method, mode)].append(np.mean(v))
                row.append(f"{np.mean(v):.3f}±{np.std(v):.3f}")
            else:
                row.append("—")
        row.append(" / ".join(f"{x:.3f}" for x in TABLE_V[(s, t)]))
        lines.append("| " + " | ".join(row) + " |")
    avg = ["**average**"]
    for method, mode, _ in COLUMNS:
        v = means.get((method, mode))
        avg.append(f"**{np.mean(v):.3f}** ({len(v)} pairs)" if v else "—")
    paper_avg = [np.mean([TABLE_V[k][PAPER_COLUMN[m]] for k in TABLE_V]) for m in ("dann", "nn", "dpda", "gdpda")]
    avg.append(" / ".join(f"{x:.3f}" for x in paper_avg))
    lines.append("| " + " | ".join(avg) + " |")
    return "\n".join(lines)


def calibrated_columns(rows) -> str:
    """Table V's two σ-calibrated columns from the replace-one re-run: accuracy, σ, ε spent, seconds per pair."""
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in _ok(rows):
        cells[(r["task"], r["method"])].append(r)
    lines = ["| pair | DPDA sound, ε = 8 spent | G-DPDA sound, ε = (4, 8) spent | seeds | s a run (DPDA / G-DPDA) "
             "| paper DPDA / G-DPDA |", "|---|---|---|---|---|---|"]
    means = defaultdict(list)
    for (s, t) in TABLE_V:
        task = f"bow5000:{ABBREV[s]}->{ABBREV[t]}"
        row, secs, seeds = [task.split(":")[1]], [], []
        for method in ("dpda-calibrated", "gdpda-calibrated"):
            got = cells.get((task, method), [])
            if got:
                v = [r["value"] for r in got]
                means[method].append(np.mean(v))
                row.append(f"{np.mean(v):.3f}" + (f"±{np.std(v):.3f}" if len(v) > 1 else ""))
                secs.append(f"{np.mean([r['seconds'] for r in got]):.0f}")
                seeds.append(str(len(v)))
            else:
                row.append("not run")
                secs.append("—")
        paper = TABLE_V[(s, t)]
        row += ["/".join(sorted(set(seeds))) or "0", " / ".join(secs),
                f"{paper[PAPER_COLUMN['dpda']]:.3f} / {paper[PAPER_COLUMN['gdpda']]:.3f}"]
        lines.append("| " + " | ".join(row) + " |")
    avg = ["**average**"] + [f"**{np.mean(means[m]):.3f}** ({len(means[m])} pairs)" if means[m] else "—"
                             for m in ("dpda-calibrated", "gdpda-calibrated")]
    paper_avg = [np.mean([TABLE_V[k][PAPER_COLUMN[m]] for k in TABLE_V]) for m in ("dpda", "gdpda")]
    avg += ["", "", " / ".join(f"{x:.3f}" for x in paper_avg)]
    lines.append("| " + " | ".join(avg) + " |")
    sig = sorted({(r["method"], round(r["target_sigma"], 3), round(r.get("source_sigma", 0.0), 3),
                   " / ".join(f"{e:.2f}" for e in (r.get("epsilon_by_party") or {"t": r["epsilon_spent"]}).values()))
                  for r in _ok(rows)})
    lines.append("")
    lines.append("σ and ε spent (target / source): " + "; ".join(
        f"{m}: σ {t}" + (f" / {s_}" if s_ else "") + f", ε {e}" for m, t, s_, e in sig))
    return "\n".join(lines)


def epsilon_spent(rows) -> str:
    groups = defaultdict(lambda: defaultdict(list))
    for r in _ok(rows):
        if r["mode"] == "non-private":
            continue
        by_party = r.get("epsilon_by_party") or {"target": r["epsilon_spent"]}
        for party, eps in by_party.items():
            groups[(r["method"], r["mode"])][party].append(float(eps))
        for key in ("target_paper_claimed_epsilon", "source_paper_claimed_epsilon"):
            if key in r:
                groups[(r["method"], r["mode"])][key].append(float(r[key]))
        for key in ("target_sigma", "source_sigma", "steps"):
            if key in r:
                groups[(r["method"], r["mode"])][key].append(float(r[key]))
    lines = ["| method | mode | target ε spent | source ε spent | paper-claimed ε (target / source) | σ (target / source) | steps |",
             "|---|---|---|---|---|---|---|"]

    def rng(v):
        return "—" if not v else (f"{min(v):.3g}" if math.isclose(min(v), max(v), rel_tol=1e-6) else f"{min(v):.3g}–{max(v):.3g}")

    for (method, mode), g in sorted(groups.items()):
        lines.append(
            f"| {method} | {mode} | {rng(g['target'])} | {rng(g.get('source', []))} | "
            f"{rng(g.get('target_paper_claimed_epsilon', []))} / {rng(g.get('source_paper_claimed_epsilon', []))} | "
            f"{rng(g.get('target_sigma', []))} / {rng(g.get('source_sigma', []))} | {rng(g.get('steps', []))} |"
        )
    return "\n".join(lines)


def time_ratios(rows) -> str:
    """Seconds per epoch of each private method relative to DANN on the same (task, seed) of the same run."""
    spe = defaultdict(dict)
    for r in _ok(rows):
        if "seconds_per_epoch" in r:
            spe[(r["task"], r["seed"])][(r["method"], r["mode"])] = r["seconds_per_epoch"]
    ratios = defaultdict(list)
    absolute = defaultdict(list)
    for per in spe.values():
        base = per.get(("dann", "non-private"))
        for key, v in per.items():
            absolute[key].append(v)
            if base:
                ratios[key].append(v / base)
    lines = ["| method | mode | s/epoch (median) | ratio to DANN (median) | ratio IQR | n |", "|---|---|---|---|---|---|"]
    for key in sorted(absolute):
        r = ratios.get(key, [])
        iqr = f"{np.percentile(r, 25):.2f}–{np.percentile(r, 75):.2f}" if r else "—"
        med = f"{np.median(r):.2f}×" if r else "—"
        lines.append(f"| {key[0]} | {key[1]} | {np.median(absolute[key]):.3f} | {med} | {iqr} | {len(absolute[key])} |")
    return "\n".join(lines)


def simple_table(rows) -> str:
    cells = defaultdict(list)
    spent = defaultdict(list)
    for r in _ok(rows):
        key = (r["task"], r["method"], r["mode"], r["epsilon_target"])
        cells[key].append(r["value"])
        spent[key].append(r["epsilon_spent"])
    lines = ["| task | method | mode | ε target | ε spent | accuracy (mean±std) | n |", "|---|---|---|---|---|---|---|"]
    for key in sorted(cells, key=lambda k: (k[0], k[1], k[2], float(k[3]))):
        e = "∞" if math.isinf(float(key[3])) else f"{float(key[3]):g}"
        s = spent[key][0]
        s = "∞" if (isinstance(s, float) and math.isinf(s)) or s == "inf" else f"{float(s):.3g}"
        v = cells[key]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {e} | {s} | {np.mean(v):.3f}±{np.std(v):.3f} | {len(v)} |")
    return "\n".join(lines)


def main(folder: str) -> None:
    folder = Path(folder)
    out = []
    if (folder / "dpda.json").exists():
        rows = load_rows(folder / "dpda.json")
        out += ["## Table V (Amazon bow5000)", table_v(rows), "", "## ε spent", epsilon_spent(rows), "",
                "## DP-SGD time per epoch vs DANN (same task, seed and run)", time_ratios(rows), ""]
    calibrated = list({(r["task"], r["method"], r["mode"], r["seed"]): r
                       for p in sorted(folder.glob("dpda-calibrated-replace-one*.json")) for r in load_rows(p)}.values())
    if calibrated:
        out += ["## Table V σ-calibrated columns, replace-one accounting", calibrated_columns(calibrated), ""]
    for name in ("dpda-timing", "dpda-office", "dpda-sweep", "dpda-office-sound-replace-one", "dpda-sweep-replace-one"):
        path = folder / f"{name}.json"
        if path.exists():
            rows = load_rows(path)
            out += [f"## {name}", simple_table(rows), ""]
            if name == "dpda-timing":
                out += [time_ratios(rows), ""]
            if name == "dpda-sweep" and "replace-one" not in name:
                plot_sweep(rows, str(folder / "dpda-sweep.png"))
                out += [f"plot: {folder / 'dpda-sweep.png'}", ""]
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/dpda/results")
