"""Run the ``sound`` matrix in parts (rows × pairs) and join the parts into one matrix.

    python benchmarks/sound/sound_matrix.py run OUT.json --rows dpot-cs dp-ncm --pairs googlenet surf --seeds 5
    python benchmarks/sound/sound_matrix.py join OUT.json PART.json [PART.json ...]

``run``: the rows named (all when omitted) on the pairs whose task name contains one of ``--pairs``
(all when omitted), ε ∈ {1, 2, 4, 8} and None, like ``dpadapt bench sound`` (which can select rows or
pairs, not both); ``--noise-free-once`` fits a deterministic ε = ∞ row once and records it for each seed. ``join``: later parts win for a (task, method, ε, seed) present twice; writes OUT.json
(+ .csv), OUT.md and the two heat maps (:func:`dpadapt.bench.suites.sound_report.write_report`).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from dpadapt.bench import load_rows, write_rows
from dpadapt.bench.runner import run_task
from dpadapt.bench.suites import sound, sound_rows
from dpadapt.bench.suites.sound_report import write_report


def run(out: str, rows: list[str] | None, pairs: list[str] | None, seeds: int, noise_free_once: bool = False) -> int:
    heart = [p for p in sound_rows.HEART_PAIRS if p.available()]
    specs = [p for p in (*sound_rows.DEV_PAIRS, *heart, *sound_rows.REPORT_PAIRS)
             if not pairs or any(s.lower() in p.task.lower() for s in pairs)]
    chosen = [sound_rows.ROWS[r] for r in rows] if rows else list(sound_rows.ROWS.values())
    results = []
    for task in sorted(sound.tasks_for(specs, sound.EPSILONS, chosen), key=lambda t: not math.isinf(t.epsilon)):  # slowest first
        if noise_free_once and math.isinf(task.epsilon):  # deterministic: one fit, recorded for each seed
            first = run_task(task, 0)
            results.extend({**first, "seed": seed} for seed in range(seeds))
            write_rows(results, out)
        else:
            for seed in range(seeds):
                results.append(run_task(task, seed))
                write_rows(results, out)
        print(f"{task.task} {task.method} ε={task.epsilon:g}: {[round(r['value'], 3) for r in results[-seeds:]]}", flush=True)
    return 0


#: The DP source-only table's rows (``benchmarks/dp_source_only/results/dp-source-only-*.json``) as matrix rows.
DPSO_ROWS = {"dp-ncm": "dp-ncm", "dp-lr": "dp-lr", "dp-lr-old": "dp-logreg", "dp-lsq": "dp-lsq"}


def dpso_rows(path: str) -> list[dict]:
    """The DP source-only table's records (points) as matrix rows (fractions), PhysioNet left out (the matrix
    is in accuracy; PhysioNet is read in ROC-AUC, ``report_extra.py``)."""
    import json

    out = []
    for r in json.loads(Path(path).read_text())["records"]:
        if r["row"] not in DPSO_ROWS or r["task"].startswith("physionet") or r["epsilon"] is None:
            continue
        out.append({"suite": "sound", "task": r["task"], "method": DPSO_ROWS[r["row"]], "mode": "sound",
                    "epsilon_target": float(r["epsilon"]), "delta": None, "seed": r["seed"], "metric": "accuracy",
                    "paper_value": None, "error": None, "value": r["accuracy"] / 100, "epsilon_spent": float(r["epsilon"]),
                    "guarantee_valid": False, "split": "report" if "report" in Path(path).name else "dev",
                    "kind": "dp-source-only", "seconds": r.get("seconds")})
    return out


def join(out: str, parts: list[str]) -> int:
    """``parts``: matrix rows (JSON of :func:`write_rows`) or DP source-only tables (``dp-source-only-*.json``)."""
    rows: dict[tuple, dict] = {}
    for part in parts:
        for r in dpso_rows(part) if Path(part).name.startswith("dp-source-only") else load_rows(part):
            rows[(r["task"], r["method"], r["epsilon_target"], r["seed"])] = r
    merged = list(rows.values())
    write_rows(merged, out)
    for path in write_report(merged, Path(out)):
        print("written:", path)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--rows", nargs="+")
    r.add_argument("--pairs", nargs="+")
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument("--noise-free-once", action="store_true",
                   help="fit the ε = ∞ (noise-free, deterministic) rows once and record that value for each seed")
    j = sub.add_parser("join")
    j.add_argument("out")
    j.add_argument("parts", nargs="+")
    args = ap.parse_args(argv)
    return run(args.out, args.rows, args.pairs, args.seeds, args.noise_free_once) if args.cmd == "run" else join(args.out, args.parts)


if __name__ == "__main__":
    sys.exit(main())
