"""Issue 37, item 2: the selection design for tiny sources against today's default and DPOT's sound mode.

    python benchmarks/sound/selection.py run OUT.jsonl --split dev --seeds 5
    python benchmarks/sound/selection.py choose OUT.jsonl            # the rule of README.md, dev rows only
    python benchmarks/sound/selection.py run OUT.jsonl --split report --seeds 5   # only after the choice is committed

``run``: on the tiny pairs of the split (dev: ``sound_rows.TINY_DEV_PAIRS``; report: DeCAF6 D→W, W→D), ε ∈ {1, 2, 4, 8}
(and ε = None once), ``--seeds`` fresh seeds, three rows on the same seeds: ``sound`` (``SoundDA`` as a user gets it,
``design="auto"``), ``selection`` (``SoundDA(design="selection")``) and ``dpot-cs`` (``DPOTAdapter``'s sound mode).
Vetted noise (fresh, not seeded): each fit is one independent draw. One JSON row per fit: accuracy on the target's
test rows. ``choose``: the selection rule written in ``benchmarks/sound/README.md`` (issue 37, item 2).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections import defaultdict

import numpy as np

from dpadapt.bench.suites import sound_rows as R

EPSILONS = (1.0, 2.0, 4.0, 8.0, None)
ROWS = ("sound", "selection", "dpot-cs")


def _pairs(split: str) -> list:
    if split == "dev":
        return list(R.TINY_DEV_PAIRS)
    return [p for p in R.REPORT_PAIRS if p.dataset == "decaf6"]


def _fit(row: str, spec, d, eps, seed: int):
    from dpadapt.sound import SoundDA
    from dpadapt.transport import DPOTAdapter

    n = d.Xs.shape[0]
    kw = {"epsilon": eps, "delta": spec.delta(n) if eps else None, "classes": tuple(range(d.n_classes)), "random_state": seed}
    if row == "dpot-cs":
        return DPOTAdapter(**kw, feature_type=spec.feature_type).fit_domains(d.Xs, d.ys, d.Xt)
    design = "selection" if row == "selection" else "auto"
    return SoundDA(**kw, feature_type="auto", design=design).fit_domains(d.Xs, d.ys, d.Xt)


def run(out: str, split: str, seeds: int) -> int:
    with open(out, "a") as fh:
        for spec in _pairs(split):
            d = spec.load()
            for eps in EPSILONS:
                for seed in range(seeds if eps is not None else 1):
                    for row in ROWS:
                        t = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est = _fit(row, spec, d, eps, seed)
                        acc = float(np.mean(est.predict(d.Xt_test) == np.asarray(d.yt_test)))
                        rec = {"task": spec.task, "split": split, "n": int(d.Xs.shape[0]), "K": int(d.n_classes),
                               "epsilon": eps, "seed": seed, "row": row, "accuracy": 100 * acc,
                               "seconds": time.perf_counter() - t}
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        print(rec, flush=True)
    return 0


def _q(rec: dict) -> float:
    """n/(K·b_eff) of a cell (b_eff = 2/ε replace-one, one source); ∞ without noise."""
    return math.inf if rec["epsilon"] is None else rec["n"] * rec["epsilon"] / (2.0 * rec["K"])


def _stats(xs: list[float]) -> tuple[float, float]:
    a = np.asarray(xs, dtype=float)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else 0.0


def dev_cells(rows: list[dict]) -> tuple[dict, dict, list[float]]:
    """(accuracies per (task, ε) cell and row, q per cell, the candidate triggers τ: 0, the geometric midpoints of
    consecutive finite q, 2·max q) of the development records among ``rows``."""
    cells: dict = defaultdict(lambda: defaultdict(list))
    q: dict = {}
    for r in rows:
        if r["split"] != "dev":
            continue
        cells[(r["task"], r["epsilon"])][r["row"]].append(r["accuracy"])
        q[(r["task"], r["epsilon"])] = _q(r)
    qs = sorted({v for v in q.values() if math.isfinite(v)})
    return cells, q, [0.0, *(math.sqrt(a * b) for a, b in zip(qs, qs[1:])), 2.0 * qs[-1]]


def choose(path: str) -> int:
    cells, q, cuts = dev_cells([json.loads(line) for line in open(path)])
    results = []
    for tau in cuts:
        per_cell, feasible, worst = {}, True, math.inf
        for key, c in cells.items():
            pick = "selection" if q[key] < tau else "sound"
            m, se = _stats(c[pick])
            m0, _ = _stats(c["sound"])
            if pick == "selection":  # paired by seed within the cell? independent draws: SE of the difference
                _, se0 = _stats(c["sound"])
                gap = m - m0
                if gap < -max(1.0, 2.0 * math.hypot(se, se0)):
                    feasible = False
                worst = min(worst, gap)
            per_cell[key] = (m, se)
        for task in {k[0] for k in cells}:  # monotone up to and including ε = None
            order = sorted((e for t, e in cells if t == task), key=lambda e: math.inf if e is None else e)
            for a, b in zip(order, order[1:]):
                (ma, sa), (mb, sb) = per_cell[(task, a)], per_cell[(task, b)]
                if mb < ma - max(1.0, 2.0 * math.hypot(sa, sb)):
                    feasible = False
        mean = float(np.mean([m for m, _ in per_cell.values()]))
        results.append((tau, feasible, mean, worst))
        print(f"tau = {tau:.3g}: feasible {feasible}, mean {mean:.2f}, worst gap to the default {worst:.2f}")
    best = max((r for r in results if r[1]), key=lambda r: (round(r[2], 6), -r[0]))
    print(f"choice: SELECTION_THRESHOLD = {best[0]:.4g} (mean {best[2]:.2f})")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("run", "choose"))
    ap.add_argument("path", help="the JSON-lines file of rows (run: appended to)")
    ap.add_argument("--split", choices=("dev", "report"), default="dev", help="run: the tiny pairs of this split")
    ap.add_argument("--seeds", type=int, default=5, help="run: fresh seeds per private cell")
    a = ap.parse_args(argv)
    return run(a.path, a.split, a.seeds) if a.cmd == "run" else choose(a.path)


if __name__ == "__main__":
    sys.exit(main())
