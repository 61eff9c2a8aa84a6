"""Round 4 of benchmarks/dpswd/README.md: the digits rows of ``dpswd-digits`` for the marginals design (issue 13).

Runs, for M→U and U→M and the given seeds, the rows source-only, SWD (non-private), DP-SWD sound
(per-step), dp-swd-marginals (sound, one release) and the two controls of the marginals design
(exact marginals; source-only + the same head fine-tuning) — the paper-mode and DANN rows are
skipped for time. Protocol from ``$DPADAPT_DPSWD_ROWS`` / ``$DPADAPT_DPSWD_EPOCHS`` (see the suite).
One JSON line per run is appended to OUT.

Usage: DPADAPT_DPSWD_ROWS=3000 DPADAPT_DPSWD_EPOCHS=5 python benchmarks/dpswd/dpswd_marginals.py OUT SEED [SEED ...]
"""

import json
import sys
import time

from dpadapt.bench.suites.dpswd import build_digits

KEEP = {("source-only", "non-private"), ("swd", "non-private"), ("dpswd", "sound"), ("dp-swd-marginals", "sound"),
        ("swd-marginals", "non-private"), ("source-only-finetuned", "non-private")}


def main(out: str, seeds: list[int]) -> None:
    tasks = [t for t in build_digits(quick=False) if (t.method, t.mode) in KEEP]
    for seed in seeds:
        for t in tasks:
            t0 = time.perf_counter()
            try:
                res = t.run(seed)
                g = res.guarantees.get("target")
                row = {"task": t.task, "method": t.method, "mode": t.mode, "seed": seed, "accuracy": res.value,
                       "epsilon_spent": None if g is None else g.epsilon, "valid": None if g is None else g.valid,
                       "paper": t.paper_value, "params": t.params, **res.extra}
            except Exception as exc:  # record and go on
                row = {"task": t.task, "method": t.method, "mode": t.mode, "seed": seed, "error": repr(exc)}
            row["seconds"] = time.perf_counter() - t0
            with open(out, "a") as f:
                f.write(json.dumps(row, default=str) + "\n")
            print(t.task, t.method, t.mode, seed, row.get("accuracy"), row.get("epsilon_spent"), round(row["seconds"]), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], [int(s) for s in sys.argv[2:]])
