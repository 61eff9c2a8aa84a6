"""Issue 13 item 1: rows of the ``dpswd-digits-paper`` suite (the papers' digits protocol), one run at a time.

Usage: python benchmarks/dpswd/digits_paper.py OUT TASK METHOD MODE SEED [SEED ...]
  e.g. ... results/digits-paper.jsonl M->U swd non-private 0 1 2
One JSON line per run is appended to OUT (accuracy on the target test set, ε spent, steps, seconds).
Threads: ``$DPADAPT_TORCH_THREADS`` (default 1).
"""

import json
import sys
import time

from dpadapt.bench.suites.dpswd import build_digits_paper


def main(out: str, task: str, method: str, mode: str, seeds: list[int]) -> None:
    tasks = [t for t in build_digits_paper(quick=False) if t.task.endswith(task) and (t.method, t.mode) == (method, mode)]
    if len(tasks) != 1:
        raise SystemExit(f"no single row {task} {method} {mode}")
    t = tasks[0]
    for seed in seeds:
        t0 = time.perf_counter()
        res = t.run(seed)
        g = res.guarantees.get("target")
        row = {"task": t.task, "method": t.method, "mode": t.mode, "seed": seed, "accuracy": res.value,
               "epsilon_spent": None if g is None else g.epsilon, "valid": None if g is None else g.valid,
               "paper": t.paper_value, "params": t.params, **res.extra, "seconds": time.perf_counter() - t0}
        with open(out, "a") as f:
            f.write(json.dumps(row, default=str) + "\n")
        print(t.task, t.method, t.mode, seed, round(res.value, 2), row["epsilon_spent"], round(row["seconds"]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], [int(s) for s in sys.argv[5:]])
