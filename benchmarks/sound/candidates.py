"""Issue 37, item 2, second round: the selection design with more candidates than classes (M = c·K).

    python benchmarks/sound/candidates.py run OUT.jsonl --pair googlenet1024:D->A --seeds 5   # one tiny dev pair
    python benchmarks/sound/candidates.py choose OUT.jsonl [OUT2.jsonl ...]                    # the rule of README.md
    python benchmarks/sound/candidates.py report OUT.jsonl --seeds 5   # DeCAF6 D→W ε = 1, 2 and W→D ε = 2, after the choice

``run``: on one tiny development pair (``sound_rows.TINY_DEV_PAIRS``), ε ∈ {1, 2, 4, 8} (``--seeds`` seeds) and
ε = None once, on the same seeds: ``prototypes`` (``SoundDA(design="prototypes")``: what ``auto`` gives a tiny source
when it does not take the selection design), ``dpot-cs`` (``DPOTAdapter``'s sound mode, the class-statistics
reference) and, for each c in :data:`CS`, ONE selection release (``SoundDA(design="selection")`` with
``CANDIDATES_PER_CLASS = c``) read by every readout of ``design.READOUTS`` (rows ``READOUT-cC``: post-processings of
the same noisy table). Vetted noise (fresh, not seeded). One JSON row per (fit, readout): accuracy on the target's
test rows. ``choose``: the rule written in ``benchmarks/sound/README.md`` before the run. ``report``: the report cells,
rows ``auto`` (``SoundDA`` as a user gets it), ``selection`` and ``dpot-cs``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
import warnings

import numpy as np

from dpadapt.bench.suites import sound_rows as R
from selection import _stats, dev_cells  # the first round's mean ± SE and cells (benchmarks/sound/selection.py)

EPSILONS = (1.0, 2.0, 4.0, 8.0, None)
CS = (1, 2, 4, 8)
#: The rule's candidates (readout, c); the other rows of a run are recorded, never chosen among. ``labels`` (a von
#: Mises–Fisher mixture of each class's noisy-argmax-labelled candidates) lost and left the library afterwards: `run`
#: no longer makes its rows; `choose` reads them from results/issue37/candidates/.
VARIANTS = (("matching", 1), ("labels", 2), ("labels", 4), ("labels", 8),
            ("weighted", 1), ("weighted", 2), ("weighted", 4), ("weighted", 8))
REPORT_CELLS = (("decaf6:D->W", 1.0), ("decaf6:D->W", 2.0), ("decaf6:W->D", 2.0))


def _kw(spec, d, eps, seed: int) -> dict:
    n = d.Xs.shape[0]
    return {"epsilon": eps, "delta": spec.delta(n) if eps else None, "classes": tuple(range(d.n_classes)),
            "random_state": seed}


def _acc(model, d) -> float:
    return 100.0 * float(np.mean(model.predict(d.Xt_test) == np.asarray(d.yt_test)))


def _fits(spec, d, eps, seed: int):
    """(row, accuracy) of every row of one (pair, ε, seed) cell."""
    from dpadapt import sound
    from dpadapt.sound import SoundDA, design
    from dpadapt.sound.request import Request
    from dpadapt.transport import DPOTAdapter

    kw = _kw(spec, d, eps, seed)
    yield "prototypes", _acc(SoundDA(**kw, feature_type="auto", design="prototypes").fit_domains(d.Xs, d.ys, d.Xt), d)
    yield "dpot-cs", _acc(DPOTAdapter(**kw, feature_type=spec.feature_type).fit_domains(d.Xs, d.ys, d.Xt), d)
    saved = design.CANDIDATES_PER_CLASS
    try:
        for c in CS:
            design.CANDIDATES_PER_CLASS = c
            est = SoundDA(**kw, feature_type="auto", design="selection").fit_domains(d.Xs, d.ys, d.Xt)
            req = Request.from_release(est.request_)
            stats = [r for r in est.releases_ if r.kind == sound.STATS_KIND]
            for readout in design.READOUTS:  # post-processings of the one noisy table
                yield f"{readout}-c{c}", _acc(sound._adapt_selection(req, stats, d.Xt, readout), d)
    finally:
        design.CANDIDATES_PER_CLASS = saved


def _write(fh, rec: dict) -> None:
    fh.write(json.dumps(rec) + "\n")
    fh.flush()
    print(rec, flush=True)


def run(out: str, pair: str, seeds: int) -> int:
    spec = next(p for p in R.TINY_DEV_PAIRS if p.task == pair)
    d = spec.load()
    with open(out, "a") as fh:
        for eps in EPSILONS:
            for seed in range(seeds if eps is not None else 1):
                t = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for row, acc in _fits(spec, d, eps, seed):
                        _write(fh, {"task": spec.task, "split": "dev", "n": int(d.Xs.shape[0]), "K": int(d.n_classes),
                                    "epsilon": eps, "seed": seed, "row": row, "accuracy": acc,
                                    "seconds": time.perf_counter() - t})
    return 0


def report(out: str, seeds: int) -> int:
    from dpadapt.sound import SoundDA
    from dpadapt.transport import DPOTAdapter

    specs = {p.task: p for p in R.REPORT_PAIRS}
    with open(out, "a") as fh:
        for task, eps in REPORT_CELLS:
            spec = specs[task]
            d = spec.load()
            for seed in range(seeds):
                for row in ("auto", "selection", "dpot-cs"):
                    kw = _kw(spec, d, eps, seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est = DPOTAdapter(**kw, feature_type=spec.feature_type).fit_domains(d.Xs, d.ys, d.Xt) \
                            if row == "dpot-cs" else SoundDA(**kw, feature_type="auto", design=row).fit_domains(d.Xs, d.ys, d.Xt)
                    rec = {"task": task, "split": "report", "n": int(d.Xs.shape[0]), "K": int(d.n_classes), "epsilon": eps,
                           "seed": seed, "row": row, "accuracy": _acc(est, d)}
                    if row != "dpot-cs":
                        rec["design"] = est.design_["design"]
                    _write(fh, rec)
    return 0


def _tol(se_a: float, se_b: float) -> float:
    return max(1.0, 2.0 * math.hypot(se_a, se_b))


def choose(paths: list[str]) -> int:
    cells, q, cuts = dev_cells([json.loads(line) for p in paths for line in open(p)])
    tasks = sorted({k[0] for k in cells})
    order = sorted({k[1] for k in cells}, key=lambda e: math.inf if e is None else e)
    print("per cell (mean ± SE):")
    for key in sorted(cells, key=lambda k: (k[0], math.inf if k[1] is None else k[1])):
        print(f"  {key[0]} ε={key[1]}: " + ", ".join(f"{row} {_stats(v)[0]:.1f}±{_stats(v)[1]:.1f}"
                                                    for row, v in sorted(cells[key].items())))
    results = []
    for (readout, c), tau in itertools.product(VARIANTS, cuts):
        name = f"{readout}-c{c}"
        per_cell, feasible, preferred = {}, True, True
        for key, cell in cells.items():
            pick = name if q[key] < tau else "prototypes"
            per_cell[key] = _stats(cell[pick])
            if pick != "prototypes":  # (i) never below the prototypes design where taken
                (m, se), (m0, se0) = per_cell[key], _stats(cell["prototypes"])
                feasible &= m >= m0 - _tol(se, se0)
            if key[1] in (1.0, 2.0):  # (iii) not below the class-statistics design at ε = 1, 2
                (m, se), (md, sed) = per_cell[key], _stats(cell["dpot-cs"])
                preferred &= m >= md - _tol(se, sed)
        for task in tasks:  # (ii) monotone up to and including ε = None
            for a, b in zip(order, order[1:]):
                (ma, sa), (mb, sb) = per_cell[(task, a)], per_cell[(task, b)]
                feasible &= mb >= ma - _tol(sa, sb)
        mean = float(np.mean([m for m, _ in per_cell.values()]))
        results.append({"readout": readout, "c": c, "tau": tau, "feasible": bool(feasible),
                        "preferred": bool(preferred), "mean": mean})
        print(f"{name:12s} tau = {tau:7.3g}: feasible {feasible!s:5}, (iii) {preferred!s:5}, mean {mean:.2f}")
    feasible = [r for r in results if r["feasible"]]
    pool = [r for r in feasible if r["preferred"]] or feasible
    rank = {v: i for i, v in enumerate(VARIANTS)}
    best = min(pool, key=lambda r: (-round(r["mean"], 6), r["tau"], r["c"], rank[(r["readout"], r["c"])]))
    if best["tau"] == 0.0:  # never taken: the explicit design="selection" keeps the variant best on its own cells
        own = {v: float(np.mean([_stats(cell[f"{v[0]}-c{v[1]}"])[0] for key, cell in cells.items() if key[1] is not None]))
               for v in VARIANTS}
        best = {**best, "readout": max(own, key=own.get)[0], "c": max(own, key=own.get)[1]}
    print(f"(iii) met by some feasible choice: {any(r['preferred'] for r in feasible)}")
    tau = "None" if best["tau"] == 0.0 else f"{best['tau']:.4g}"
    print(f"choice: SELECTION_READOUT = {best['readout']!r}, CANDIDATES_PER_CLASS = {best['c']}, "
          f"SELECTION_THRESHOLD = {tau} (mean {best['mean']:.2f})")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("run", "choose", "report"))
    ap.add_argument("paths", nargs="+", help="JSON-lines files of rows (run, report: the one appended to)")
    ap.add_argument("--pair", help="run: the tiny development pair (its task name)")
    ap.add_argument("--seeds", type=int, default=5, help="run, report: seeds per private cell")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        return run(a.paths[0], a.pair, a.seeds)
    return report(a.paths[0], a.seeds) if a.cmd == "report" else choose(a.paths)


if __name__ == "__main__":
    sys.exit(main())
