"""The ``sound`` matrix written out: a markdown table (mean ± std over seeds, flags) and two heat maps.

Flags:

* at every finite ε, ``< DP-SO`` marks a cell where the default sound design
  (:data:`~dpadapt.bench.suites.sound_rows.DEFAULT_DESIGN`) is more than :data:`TOLERANCE` points
  below the best DP source-only row at the same (ε, δ);
* at ε = ∞ (``epsilon=None``), ``< SO`` marks a pair where the design's noise-free pipeline is more
  than :data:`TOLERANCE` points below non-private source-only.

Heat maps: "default minus best DP source-only" and "default minus non-private source-only" (points),
one cell per pair × ε.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from dpadapt.bench.suites import sound_rows
from dpadapt.bench.runner import summarise

#: Points a cell may fall short before it is flagged.
TOLERANCE = 1.0
SOURCE_ONLY = "source-only"


def _eps_label(eps: float) -> str:
    return "∞" if math.isinf(eps) else f"{eps:g}"


class Matrix:
    """Means and stds (in points) indexed by (task, method, ε), with each task's split and each method's kind."""

    def __init__(self, rows: list[dict[str, Any]]):
        self.mean: dict[tuple, float] = {}
        self.std: dict[tuple, float] = {}
        self.n: dict[tuple, int] = {}
        for s in summarise(rows):
            key = (s["task"], s["method"], float(s["epsilon"]))
            self.mean[key], self.std[key], self.n[key] = 100 * s["mean"], 100 * s["std"], s["n"]
        self.split = {r["task"]: r.get("split", "") for r in rows}
        self.kind = {r["method"]: r.get("kind", "") for r in rows}
        pairs = {p.task: i for i, p in enumerate((*sound_rows.DEV_PAIRS, *sound_rows.HEART_PAIRS, *sound_rows.REPORT_PAIRS))}
        rank = {name: i for i, name in enumerate(sound_rows.ROWS)}
        seen = list(dict.fromkeys(r["task"] for r in rows))
        self.tasks = sorted(seen, key=lambda t: (pairs.get(t, len(pairs)), seen.index(t)))  # the registry's order
        seen = list(dict.fromkeys(r["method"] for r in rows))
        self.methods = sorted(seen, key=lambda m: (rank.get(m, len(rank)), seen.index(m)))
        self.epsilons = sorted({float(r["epsilon_target"]) for r in rows})

    def get(self, task: str, method: str, eps: float) -> float:
        key = (task, method, eps)
        return self.mean[key] if self.n.get(key) else math.nan

    def cell(self, task: str, method: str, eps: float) -> str:
        key = (task, method, eps)
        if key not in self.n:
            return ""
        return f"{self.mean[key]:.1f} ± {self.std[key]:.1f}" if self.n[key] else "error"

    def best_dp_source_only(self, task: str, eps: float) -> float:
        vals = [self.get(task, m, eps) for m in self.methods if self.kind[m] == "dp-source-only"]
        vals = [v for v in vals if not math.isnan(v)]
        return max(vals) if vals else math.nan

    def gap_dp(self, task: str, eps: float, design: str) -> float:
        """Default design minus the best DP source-only row at the same ε (points)."""
        return self.get(task, design, eps) - self.best_dp_source_only(task, eps)

    def gap_source_only(self, task: str, eps: float, design: str) -> float:
        """Default design at ε minus non-private source-only (points)."""
        return self.get(task, design, eps) - self.get(task, SOURCE_ONLY, math.inf)

    def flag(self, task: str, eps: float, design: str) -> str:
        gap = self.gap_source_only(task, eps, design) if math.isinf(eps) else self.gap_dp(task, eps, design)
        if math.isnan(gap) or gap >= -TOLERANCE:
            return ""
        return "< SO" if math.isinf(eps) else "< DP-SO"


def _fmt(x: float) -> str:
    return "—" if math.isnan(x) else f"{x:+.1f}"


def markdown(rows: list[dict[str, Any]], design: str | None = None) -> str:
    """The matrix as markdown: per split, one line per pair × ε, every row a column; group means."""
    design = design or sound_rows.DEFAULT_DESIGN
    m = Matrix(rows)
    private = [x for x in m.methods if m.kind[x] in ("design", "dp-source-only")]
    public = [x for x in m.methods if m.kind[x] == "non-private"]
    out = [f"Default sound design judged: `{design}`. Cells: accuracy (%) mean ± std over seeds. "
           f"`< DP-SO`: the default is more than {TOLERANCE:g} point below the best DP source-only row at the same "
           f"(ε, δ); `< SO`: at ε = ∞ its noise-free pipeline is more than {TOLERANCE:g} point below non-private source-only.", ""]
    flagged = 0
    for split in dict.fromkeys(m.split[t] for t in m.tasks):
        tasks = [t for t in m.tasks if m.split[t] == split]
        out += [f"### {split or 'pairs'}", "",
                "| pair | ε | " + " | ".join(private) + " | default − best DP-SO | default − source-only | flag |",
                "|---|---|" + "---|" * (len(private) + 3)]
        for t in tasks:
            for eps in m.epsilons:
                if not any((t, x, eps) in m.n for x in private):
                    continue
                f = m.flag(t, eps, design)
                flagged += bool(f)
                out.append(f"| {t} | {_eps_label(eps)} | " + " | ".join(m.cell(t, x, eps) for x in private)
                           + f" | {_fmt(m.gap_dp(t, eps, design))} | {_fmt(m.gap_source_only(t, eps, design))} | {f} |")
        groups = defaultdict(list)
        for t in tasks:
            groups[t.split(":")[0]].append(t)
        out += ["", f"Means over the pairs of each dataset ({split}):", "",
                "| dataset (pairs) | ε | " + " | ".join(private + public) + " |", "|---|---|" + "---|" * len(private + public)]
        for ds, ts in groups.items():
            for eps in m.epsilons:
                vals = []
                for x in private + public:
                    col = [m.get(t, x, eps) for t in ts]
                    vals.append("" if all(math.isnan(v) for v in col) else
                                ("—" if any(math.isnan(v) for v in col) else f"{np.mean(col):.1f}"))
                if any(vals):
                    out.append(f"| {ds} ({len(ts)}) | {_eps_label(eps)} | " + " | ".join(vals) + " |")
        out.append("")
    out += ["### non-private baselines (ε = ∞)", "",
            "| pair | split | " + " | ".join(public) + f" | {design} (noise-free) |", "|---|---|" + "---|" * (len(public) + 1)]
    for t in m.tasks:
        out.append(f"| {t} | {m.split[t]} | " + " | ".join(m.cell(t, x, math.inf) for x in public)
                   + f" | {m.cell(t, design, math.inf)} |")
    out += ["", f"Flagged cells: {flagged}."]
    return "\n".join(out) + "\n"


def heatmap(rows: list[dict[str, Any]], path: Path, versus: str, design: str | None = None) -> Path:
    """Heat map of the default design minus ``versus`` ("dp-source-only" or "source-only"), pair × ε."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    design = design or sound_rows.DEFAULT_DESIGN
    m = Matrix(rows)
    gap = m.gap_dp if versus == "dp-source-only" else m.gap_source_only
    tasks = [t for t in m.tasks if any((t, design, e) in m.n for e in m.epsilons)]
    eps = [e for e in m.epsilons if any((t, design, e) in m.n for t in tasks)]
    G = np.array([[gap(t, e, design) for e in eps] for t in tasks]).reshape(len(tasks), len(eps))
    lim = max(5.0, float(np.nanmax(np.abs(G))) if np.isfinite(G).any() else 5.0)
    fig, ax = plt.subplots(figsize=(1.2 * len(eps) + 3.5, 0.38 * len(tasks) + 1.6))
    im = ax.imshow(G, cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
    for i in range(len(tasks)):
        for j in range(len(eps)):
            ax.text(j, i, "—" if np.isnan(G[i, j]) else f"{G[i, j]:+.1f}", ha="center", va="center", fontsize=8)
    ax.set_xticks(range(len(eps)), [_eps_label(e) for e in eps])
    ax.set_yticks(range(len(tasks)), [f"{t} ({m.split[t]})" for t in tasks])
    ax.set_xlabel("ε  (∞ = noise-free pipeline)")
    what = "best DP source-only (same ε, δ)" if versus == "dp-source-only" else "non-private source-only"
    ax.set_title(f"{design} minus {what}, points", fontsize=10)
    fig.colorbar(im, ax=ax, shrink=0.8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Write ``<out>.md`` and the two heat maps beside the result file ``out``."""
    out = Path(out)
    md = out.with_suffix(".md")
    md.write_text(markdown(rows))
    stem = out.with_suffix("")
    return [md, heatmap(rows, Path(f"{stem}-vs-dp-source-only.png"), "dp-source-only"),
            heatmap(rows, Path(f"{stem}-vs-source-only.png"), "source-only")]
