"""DPOT paper mode under the issue-40 reading (``benchmarks/dpot/dpot_reading_otda_fit.md``): the runs it fixes.

Rows of the ``dpot`` suite, ε = 20 total (ε′ = 5 inside it), δ = 1/(1.2 n_s), fresh noise per seed:
the headline ``dpda-mb-fit-mlp`` D→W (5 seeds), ``dpda-mb-fit-logreg`` D→W (5) and W→D (3), the cause
isolation rows on D→W (3 seeds), ``otda-fit`` on both pairs, then ``dpda-mb-fit-mlp`` W→D (``W_D_MLP``
seeds; ≈ 10 min a run on the shared machine). Resumable; the optional FILTERs keep the plan's lines whose
"task method mode" (plus a trailing space) contains one of them (to split the plan over processes writing different files). Usage:
python benchmarks/dpot/dpot_paper_mode_fit.py [OUT.json] [W_D_MLP] [FILTER ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

from dpadapt.bench.registry import get_suite
from dpadapt.bench.runner import format_table, run_resumable, with_current_causes

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "results" / "dpot-paper-mode-fit.json"
W_D_MLP = int(sys.argv[2]) if len(sys.argv) > 2 else 1
FILTERS = sys.argv[3:]
DW, WD = "decaf6:D->W", "decaf6:W->D"
PLAN = [  # (task, method, mode, seeds), in run order
    (DW, "otda-fit-mlp", "non-private", 1), (WD, "otda-fit-mlp", "non-private", 1),
    (DW, "otda-fit-logreg", "non-private", 1), (WD, "otda-fit-logreg", "non-private", 1),
    (DW, "dpda-mb-fit-mlp", "paper", 5),
    (DW, "dpda-mb-fit-mlp", "paper-no-noise", 3),
    (DW, "dpda-mb-fit-features-mlp", "paper", 3),
    (DW, "dpda-mb-fit-labels-mlp", "paper", 3),
    (DW, "dpda-mb-fit-logreg", "paper", 5),
    (WD, "dpda-mb-fit-logreg", "paper", 3),
    (WD, "dpda-mb-fit-mlp", "paper", W_D_MLP),
    # added after the W→D logreg row missed (cause isolation, same T; ≈ 30 s a run)
    (WD, "dpda-mb-fit-logreg", "paper-no-noise", 3),
    (WD, "dpda-mb-fit-labels-logreg", "paper", 3),
    (WD, "dpda-mb-fit-features-logreg", "paper", 3),
]


def main() -> None:
    tasks = {(t.task, t.method, t.mode): t for t in get_suite("dpot").build(False, None)}
    plan = [p for p in PLAN if not FILTERS or any(f in " ".join(map(str, p[:3])) + " " for f in FILTERS)]
    jobs = [(tasks[(task, method, mode)], seed) for task, method, mode, n in plan for seed in range(n)]
    rows = run_resumable(jobs, OUT)
    print(format_table(with_current_causes(rows, list(tasks.values()))))


if __name__ == "__main__":
    main()
