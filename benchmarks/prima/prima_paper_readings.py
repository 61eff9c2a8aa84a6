"""PRIMA / PRISA paper mode (Jin et al., IJCAI 2021) under each budget reading the paper states (issue 31).

Rows of the ``prima`` bench suite (so the numbers are the suite's own), DeCAF6 D→W and W→D, ε = 2 per
party, δ = 1e-5, fresh noise per seed; each row changes one thing against ``prima-heads``/paper
(issue 22: the accountant reading, σ ≈ 3.9 with the paper's σ = 4 epochs rule, one softmax head per
subspace at ε):

* ``prima-heads-thm3``/paper — the noise multiplier of Thm. 3, σ = √(2 ln(1.25/δ))/ε = 2.42, same epochs;
* ``prima-heads-perclass``/paper and its no-noise twin — Sec. 5.2's split: one binary logistic model per
  class and subspace, each at ε/10 (σ = 4 epochs rule at ε/10: 1 epoch; σ calibrated to spend ε/10);
* ``prisa``/paper and its no-noise twin — PRISA (subspace alignment instead of CORAL), never run before.

The ``prima-heads`` rows of issue 22 (``benchmarks/paper_mode/results/prima_heads_bench.json``, same code path) are
read in for the table. Resumable: rows already in the output are skipped. W→D paper rows with the
paper's 38 epochs are the slow ones (4–40 min each on the shared machine): one seed of each runs after
three seeds of the fast rows, then their next seeds.
Usage: python benchmarks/prima/prima_paper_readings.py [OUT.json] [SEEDS]
(default benchmarks/prima/results/prima-paper-readings.json, 5 seeds).
"""

from __future__ import annotations

import sys
from pathlib import Path

from dpadapt.bench.registry import get_suite
from dpadapt.bench.runner import format_table, load_rows, run_resumable, with_current_causes

HERE = Path(__file__).parent
OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "prima-paper-readings.json"
SEEDS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
ISSUE22 = HERE.parent / "paper_mode" / "results" / "prima_heads_bench.json"

ROWS = [("prima-heads-perclass", "paper"), ("prima-heads-perclass", "paper-no-noise"), ("prisa", "paper-no-noise"),
        ("prima-heads-thm3", "paper"), ("prisa", "paper")]


def order(task) -> tuple:
    slow = task.task == "decaf6:W->D" and task.mode == "paper" and task.method != "prima-heads-perclass"
    return (slow, ROWS.index((task.method, task.mode)), task.task)


def main() -> None:
    tasks = sorted((t for t in get_suite("prima-decaf-heads").build(False, None) if (t.method, t.mode) in ROWS), key=order)
    fast = [t for t in tasks if not order(t)[0]]
    slow = [t for t in tasks if order(t)[0]]
    # three seeds of every fast row, one of every slow row, then the slow rows' next two, then seeds 3..
    blocks = [(fast, range(min(SEEDS, 3))), (slow, range(min(SEEDS, 1))), (slow, range(1, min(SEEDS, 3))),
              (tasks, range(3, SEEDS))]
    rows = run_resumable([(t, seed) for group, seeds in blocks for seed in seeds for t in group], OUT)
    previous = [r for r in load_rows(ISSUE22) if r["mode"] != "sound"] if ISSUE22.exists() else []
    print(format_table(with_current_causes(previous + rows, get_suite("prima-decaf-heads").build(False, None))))

if __name__ == "__main__":
    main()
