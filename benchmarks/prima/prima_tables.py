"""Markdown tables of the PRIMA suites' result rows (mean ± std over seeds, ε, validity, paper, s/run).

Usage: python benchmarks/prima/prima_tables.py benchmarks/results/prima-*.json
"""

from __future__ import annotations

import math
import sys

from dpadapt.bench import load_rows, summarise


def table(path: str) -> str:
    rows = load_rows(path)
    summary = sorted(summarise(rows), key=lambda s: (s["task"], s["epsilon"], s["method"], s["mode"]))
    lines = [
        f"`{path}`",
        "",
        "| task | method | mode | ε (each party) | valid | accuracy (mean ± std) | runs | paper | s/run |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        eps = "∞" if math.isinf(s["epsilon"]) else f"{s['epsilon']:g}"
        acc = f"{100 * s['mean']:.1f} ± {100 * s['std']:.1f}" if s["n"] else f"error ×{s['errors']}"
        paper = "—" if s["paper"] is None else f"{100 * s['paper']:.1f}"
        valid = "—" if math.isinf(s["epsilon"]) else ("yes" if s["valid"] else "no")
        lines.append(f"| {s['task']} | {s['method']} | {s['mode']} | {eps} | {valid} | {acc} | {s['n']} | {paper} | {s['seconds']:.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print("\n\n".join(table(p) for p in sys.argv[1:]))
