"""``dpadapt bench``: run a registered benchmark suite."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a benchmark suite and print measured vs paper numbers")
    p.add_argument("suite", nargs="?", help="suite name (omit, or --list, to list suites)")
    p.add_argument("--list", action="store_true", help="list the registered suites")
    p.add_argument("--tasks", nargs="+", help="keep tasks whose name contains one of these (e.g. D->W bow5000)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--epsilon", type=float, nargs="+", help="override the suite's ε values")
    p.add_argument("--quick", action="store_true", help="reduced version of the suite (about a minute)")
    p.add_argument("--out", default=None, help="JSON file for the result rows (a CSV is written beside it, and the suite's own tables/plots if it has them)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    from dpadapt.bench import format_table, run_suite  # here: `dpadapt bench --help` imports no suite
    from dpadapt.bench.registry import all_suites, get_suite

    if args.list or not args.suite:
        for name, suite in all_suites().items():
            print(f"{name:<24} {suite.description}")
        return 0
    if args.seeds < 1:
        raise ValueError(f"--seeds {args.seeds}: give at least 1 (the number of runs per cell, each with fresh noise)")
    if args.epsilon is not None and not all(e > 0 for e in args.epsilon):
        raise ValueError(f"--epsilon {' '.join(f'{e:g}' for e in args.epsilon)}: every ε must be > 0")
    get_suite(args.suite)  # an unknown suite: one line naming the known ones, before any run
    rows = run_suite(
        args.suite,
        tasks=args.tasks,
        seeds=args.seeds,
        epsilons=args.epsilon,
        quick=args.quick,
        out=args.out,
        progress=not args.no_progress,
    )
    print(format_table(rows))
    if args.out:
        print(f"\n{len(rows)} rows written to {args.out}")
        report = get_suite(args.suite).report
        for path in report(rows, Path(args.out)) if report is not None else ():
            print(f"written: {path}")
    errors = [str(r["error"]) for r in rows if r.get("error") is not None]
    if errors:
        print(f"\n{len(errors)} run(s) failed:")
        for reason in dict.fromkeys(" ".join(e.split())[:300] for e in errors):
            print(f"  {reason}")
    if not rows:
        raise ValueError(f"suite {args.suite!r} produced no runs (check --tasks and the data folder: dpadapt datasets)")
    return 1 if len(errors) == len(rows) else 0
