"""Run a slice of ``dpadapt bench decisions`` seed by seed, resumable, and write its tables.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/decisions/run_decisions.py --pairs synthetic \\
        --estimators sound --epsilon 1 2 4 8 --seeds 5 --out benchmarks/decisions/results/decisions-synthetic.json

The tasks are the suite's own (:func:`dpadapt.bench.suites.decisions.tasks_for`): ``--pairs`` keeps the
suite's pairs whose task name contains one of the given strings (all of them by default), ``--estimators``
the rows (``sound``, ``dpot-cs``, ``dp-ncm``, ``dp-lr``, ``dp-lsq``, ``source-only``), ``--epsilon`` the
private ε (each private row also runs noise-free unless ``--no-noise-free``). Runs go seed-major (every task
at seed 0, then seed 1, …) so that a run stopped early leaves whole seeds; a row already in ``--out`` is not
run again. The suite's tables (``*-tables.md``) and reliability figure are written beside ``--out``.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from dpadapt.bench.runner import run_resumable
from dpadapt.bench.suites import decisions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", nargs="+", default=None, help="keep pairs whose task name contains one of these")
    ap.add_argument("--exclude", nargs="+", default=(), help="drop pairs whose task name contains one of these")
    ap.add_argument("--estimators", nargs="+", default=list(decisions.ESTIMATORS))
    ap.add_argument("--epsilon", nargs="+", type=float, default=list(decisions.EPSILONS))
    ap.add_argument("--no-noise-free", action="store_true", help="private rows at the given ε only")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    pairs = [p for p in decisions.all_pairs()
             if (args.pairs is None or any(s in p.task for s in args.pairs)) and not any(s in p.task for s in args.exclude)]
    tasks = decisions.tasks_for(pairs, args.epsilon, args.estimators)
    if args.no_noise_free:
        tasks = [t for t in tasks if math.isfinite(t.epsilon) or t.mode == "non-private"]
    if not tasks:
        raise SystemExit("no task selected")
    jobs = [(t, s) for s in range(args.first_seed, args.first_seed + args.seeds) for t in tasks]
    rows = run_resumable(jobs, args.out)
    for path in decisions.write_report_for(rows, Path(args.out)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
