"""Plots for the PRIMA suites: accuracy vs ε (Fig. 2 style) and the ablation bars (Fig. 3 style).

Usage: python benchmarks/prima/plot_prima.py benchmarks/prima/results/prima-sweep.json benchmarks/prima/results/prima-ablation.json
Writes PNGs beside the JSON files.
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from dpadapt.bench import load_rows, summarise


def plot_sweep(path: Path) -> Path:
    rows = [r for r in load_rows(path) if r.get("error") is None]
    summary = summarise(rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    curves = defaultdict(list)
    flat = {}
    for s in summary:
        if math.isinf(s["epsilon"]):
            flat[s["method"]] = s["mean"]
        else:
            curves[f"{s['method']} ({s['mode']})"].append((s["epsilon"], s["mean"], s["std"]))
    for label, pts in sorted(curves.items()):
        pts.sort()
        e, m, sd = map(np.array, zip(*pts))
        ax.errorbar(e, m, yerr=sd, marker="o", capsize=3, label=label)
    for name, value in sorted(flat.items()):
        ax.axhline(value, linestyle="--", linewidth=1, color="grey" if name == "source-only" else "black")
        ax.text(ax.get_xlim()[0], value, f" {name} (non-private)", va="bottom", fontsize=8)
    task = summary[0]["task"] if summary else ""
    ax.set_xlabel("ε (each party)")
    ax.set_ylabel("target accuracy")
    ax.set_title(f"PRIMA/PRISA vs ε — {task} (δ = 1e-5)")
    ax.legend(fontsize=8)
    out = path.with_suffix(".png")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return out


def plot_ablation(path: Path) -> Path:
    rows = [r for r in load_rows(path) if r.get("error") is None]
    summary = sorted(summarise(rows), key=lambda s: s["mean"])
    fig, ax = plt.subplots(figsize=(6, 4))
    names = [s["method"] + ("" if s["valid"] else "*") for s in summary]
    ax.bar(names, [s["mean"] for s in summary], yerr=[s["std"] for s in summary], capsize=3)
    ax.set_ylabel("target accuracy")
    task = summary[0]["task"] if summary else ""
    ax.set_title(f"Ablation at ε = 2 — {task} (* = not a valid DP guarantee)")
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    out = path.with_suffix(".png")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return out


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        p = Path(arg)
        print(plot_ablation(p) if "ablation" in p.name else plot_sweep(p))
