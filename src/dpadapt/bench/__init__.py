"""Benchmark definitions (with the papers' numbers), runner, tables."""

from dpadapt.bench.registry import BenchTask, RunOutcome, get_suite, register_suite, all_suites
from dpadapt.bench.runner import format_table, load_rows, run_suite, summarise, write_rows

__all__ = [
    "all_suites",
    "BenchTask",
    "RunOutcome",
    "format_table",
    "get_suite",
    "load_rows",
    "register_suite",
    "run_suite",
    "summarise",
    "write_rows",
]
