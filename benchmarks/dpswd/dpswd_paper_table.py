"""The ``dpadapt bench`` tables (measured, then paper | paper mode | no noise | sound | cause) of the
``dpswd-digits-paper`` rows recorded one run at a time by ``benchmarks/dpswd/digits_paper.py``.

Reads ``results/digits-paper.jsonl`` (issue 13: source-only, SWD, DANN rows, sound marginals) and
``results/digits-paper-mode.jsonl`` (issue 31: the paper's per-step DP-SWD in paper mode), joins them to
the suite's current rows (paper row, cause, paper number) and prints the suite's two tables. Rows of a
direction that has a ``$DPADAPT_DIGITS_PAPER_EPOCHS`` override (the 100-epoch M→U runs) are left out.
Usage: python benchmarks/dpswd/dpswd_paper_table.py [JSONL ...]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from dpadapt.bench.runner import format_table
from dpadapt.bench.suites.dpswd import build_digits_paper

RESULTS = Path(__file__).parent / "results"
DEFAULT = (RESULTS / "digits-paper.jsonl", RESULTS / "digits-paper-mode.jsonl")


def bench_rows(paths) -> list[dict]:
    tasks = {(t.task, t.method, t.mode): t for t in build_digits_paper(False)}
    rows = []
    for path in paths:
        for line in Path(path).read_text().splitlines():
            r = json.loads(line)
            task = tasks.get((r["task"], r["method"], r["mode"]))
            if task is None or r["params"].get("epochs") != task.params.get("epochs"):
                continue  # a row of another protocol length (e.g. the 100-epoch M→U runs)
            rows.append({
                "task": r["task"], "method": r["method"], "mode": r["mode"], "epsilon_target": task.epsilon,
                "epsilon_spent": r["epsilon_spent"] if r["epsilon_spent"] is not None else math.inf,
                "seed": r["seed"], "value": r["accuracy"], "guarantee_valid": bool(r.get("valid")),
                "paper_value": task.paper_value, "paper_row": task.paper_row, "cause": task.cause,
                "blocked": task.blocked, "metric": "accuracy", "seconds": r["seconds"], "error": None,
            })
    return rows


if __name__ == "__main__":
    print(format_table(bench_rows(sys.argv[1:] or [p for p in DEFAULT if p.exists()])))
