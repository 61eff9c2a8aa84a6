"""Re-run the sound (σ-calibrated) rows of ``dpda-sweep`` and ``dpda-office`` under the current (replace-one) accounting.

Only the sound rows' σ changed (calibrated by the accountant); the non-private rows and the paper rows
(σ from the paper's own accountant) train as before. A row is keyed by (task, method, mode, ε, seed), so the
sweep's ε values do not collide. Resumable: rows are written after every run.
Usage: python benchmarks/dpda/dpda_sound_rerun.py SUITE OUT.json SEEDS [EPS,EPS,...|all] [PAIR-FILTER ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dpadapt.bench.registry import get_suite
from dpadapt.bench.runner import format_table, load_rows, run_task, write_rows


def main() -> None:
    suite, out, seeds = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    eps = None if len(sys.argv) < 5 or sys.argv[4] == "all" else {float(e) for e in sys.argv[4].split(",")}
    filters = sys.argv[5:]
    tasks = [t for t in get_suite(suite).build(False, None)
             if t.mode == "sound" and (eps is None or t.epsilon in eps)
             and (not filters or any(f in t.task for f in filters))]
    rows = load_rows(out) if out.exists() else []
    done = {(r["task"], r["method"], r["mode"], float(r["epsilon_target"]), r["seed"]) for r in rows if r.get("error") is None}
    for seed in range(seeds):
        for t in tasks:
            if (t.task, t.method, t.mode, float(t.epsilon), seed) in done:
                continue
            row = run_task(t, seed)
            rows.append(row)
            write_rows(rows, out)
            print(json.dumps({k: row.get(k) for k in ("task", "method", "epsilon_target", "seed", "value",
                                                     "target_sigma", "seconds", "error")}, default=str), flush=True)
    print(format_table(rows))


if __name__ == "__main__":
    main()
