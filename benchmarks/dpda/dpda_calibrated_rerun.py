"""Re-run the σ-calibrated rows of the ``dpda`` suite under the current (replace-one) DP-SGD accounting (issue 40).

Only the ``*-calibrated`` rows changed: their σ is calibrated by the accountant (DPDA at (8, 1e-5):
σ 0.734 → 0.804; G-DPDA target (4, 1e-5) 0.976 → 1.262, source (8, 2e-5) 0.723 → 0.789). The σ = 8 rows
train the same 1 260 steps with the same σ as before (the step cap binds), so their accuracies stand
and only their ε spent changes (recomputed by the suite's accountant in the table). Resumable.
Usage: python benchmarks/dpda/dpda_calibrated_rerun.py [OUT.json] [SEEDS] [PAIR-FILTER ...] [method=NAME]
(``method=gdpda-calibrated`` keeps that method's rows only.)
"""

from __future__ import annotations

import sys
from pathlib import Path

from dpadapt.bench.registry import get_suite
from dpadapt.bench.runner import format_table, run_resumable

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results" / "dpda-calibrated-replace-one.json"
SEEDS = int(sys.argv[2]) if len(sys.argv) > 2 else 1
FILTERS = [f for f in sys.argv[3:] if not f.startswith("method=")]
METHODS = [f.split("=", 1)[1] for f in sys.argv[3:] if f.startswith("method=")]


def main() -> None:
    tasks = [t for t in get_suite("dpda").build(False, None)
             if t.method.endswith("-calibrated") and (not METHODS or t.method in METHODS)
             and (not FILTERS or any(f in t.task for f in FILTERS))]
    rows = run_resumable([(t, seed) for seed in range(SEEDS) for t in tasks], OUT)
    print(format_table(rows))


if __name__ == "__main__":
    main()
