"""The sound default on the DEVELOPMENT pairs only, for a grid of its design constants (issue 28).

    python benchmarks/sound/select_design.py run OUT.jsonl --seeds 5 [--set NAME=V1,V2 ...] [--pairs googlenet surf]
    python benchmarks/sound/select_design.py references REF.json --seeds 3     # issue 37: the tiny pairs' reference rows
    python benchmarks/sound/select_design.py choose OUT.jsonl benchmarks/dp_source_only/results/dp-source-only-dev.json [REF.json]

``run``: every combination of the constants given with ``--set`` (names of :mod:`dpadapt.sound.design`),
on every development pair (``dpadapt.bench.suites.sound_rows.DEV_PAIRS``, the Heart pairs and the PhysioNet
units when the data are here), ε ∈ {1, 2, 4, 8} and None, ``--seeds`` fresh seeds: one row per fit with
accuracy, balanced accuracy and (two classes) ROC-AUC on the target's test rows. The noise is numpy's
reproducible sampler (the same Gaussian; the vetted sampler's output differs only below float precision),
so that a grid runs in minutes. Nothing here reads a report pair.

``choose``: the rule of ``benchmarks/sound/design_rule.md`` on those rows and the DP source-only rows of
the same pairs.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from dpadapt.bench.suites import sound_rows as R
from dpadapt.sound import SoundDA
from dpadapt.sound import design as rule

EPSILONS = (1.0, 2.0, 4.0, 8.0, None)


def dev_pairs(filters: list[str]) -> list:
    specs = [*R.DEV_PAIRS, *(p for p in R.TINY_DEV_PAIRS if p not in R.DEV_PAIRS), *(p for p in (*R.HEART_PAIRS, *R.PHYSIONET_PAIRS) if p.available())]
    return [p for p in specs if p.split == "dev" and (not filters or any(f in p.task for f in filters))]


def metrics(model, X, y) -> dict:
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    y = np.asarray(y)
    pred = model.predict(X)
    out = {"accuracy": float(np.mean(pred == y)), "balanced_accuracy": float(balanced_accuracy_score(y, pred))}
    if len(model.classes_) == 2 and len(np.unique(y)) == 2:
        out["roc_auc"] = float(roc_auc_score(y == model.classes_[1], model.predict_proba(X)[:, 1]))
    return out


def _fingerprint(X) -> str:
    """The rows' identity for the cache: their bytes' digest (an ``id`` can be reused by another pair's rows)."""
    import hashlib

    import scipy.sparse as sp

    data = X.data if sp.issparse(X) else np.ascontiguousarray(X)
    return f"{X.shape}:{hashlib.sha1(data.tobytes()).hexdigest()}"


def _cached_design():
    """``rule.design`` memoised per (target rows, facts, feature type, constants): seeds share one request."""
    plain, cache = rule.design, {}

    def design(Xt, facts, *, feature_type="auto", kind="auto", **options):
        key = (_fingerprint(Xt), facts, feature_type, kind, tuple(sorted(options.items())),
               tuple(getattr(rule, c) for c in DESIGN_CONSTANTS))
        if key not in cache:
            cache[key] = plain(Xt, facts, feature_type=feature_type, kind=kind, **options)
        return cache[key]

    return design


#: The constants the request depends on (the others act after the release).
DESIGN_CONSTANTS = ("CLUSTER_RATIO", "GAMMA_PROTOTYPES", "GAMMA_DISCRIMINANT", "MAX_BASIS", "DIRECTIONS_PER_CLASS",
                    "MEAN_ONLY_ROWS_PER_CLASS", "SELECTION_THRESHOLD", "CANDIDATES_PER_CLASS")
#: The constants of :mod:`dpadapt.sound.design` a grid may set.
CONSTANTS = ("CLUSTER_RATIO", "GAMMA_PROTOTYPES", "GAMMA_DISCRIMINANT", "RIDGE_SCALE", "RIDGE_FLOOR",
             "MAX_BASIS", "DIRECTIONS_PER_CLASS", "MEAN_ONLY_ROWS_PER_CLASS")


def run_one(task: str, eps, seeds: int, names: list[str], groups: list[list[tuple]]) -> list[dict]:
    """One development pair at one ε: each group of settings is fitted once (its first setting) and recorded for every
    setting of the group. One process per job: the requests and decompositions are shared within it."""
    spec = next(p for p in dev_pairs([]) if p.task == task)
    d = spec.load()
    n = d.Xs.shape[0]
    classes = tuple(range(d.n_classes))
    rows = []
    for group in groups:
        for k, v in zip(names, group[0]):
            setattr(rule, k, v)
        for seed in range(seeds if eps is not None else 1):
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = SoundDA(epsilon=eps, delta=spec.delta(n) if eps else None, classes=classes,
                              random_state=seed, reproducible_noise=True).fit_domains(d.Xs, d.ys, d.Xt)
            fit = {**metrics(est, d.Xt_test, d.yt_test), "design": est.design_["design"], "k": est.design_["k_rule"],
                   "seconds": time.perf_counter() - t}
            rows.extend({"task": task, "epsilon": eps, "seed": seed, **dict(zip(names, values)), **fit} for values in group)
    return rows


def _jobs(pairs, seeds: int, names: list[str], grid: list[tuple], done: set) -> list[tuple]:
    """(task, ε, seeds, names, groups) per pair and ε, without the (task, ε, seed, setting) rows already in ``done``;
    the slow ones (no noise: the full feature space) first."""
    jobs = []
    for spec in pairs:
        for eps in EPSILONS:
            groups: dict = {}
            for values in grid:  # since issue 37 the γ's size the basis at ε = None too (the sampling error)
                groups.setdefault(values, []).append(values)
            todo = [g for g in groups.values()
                    if any((spec.task, eps, seed, v) not in done for v in g for seed in range(seeds if eps is not None else 1))]
            if todo and eps is None:  # one fit each, in the full feature space: one job each
                jobs.extend((spec.task, eps, seeds, names, [g]) for g in todo)
            elif todo:
                jobs.append((spec.task, eps, seeds, names, todo))
    return sorted(jobs, key=lambda j: j[1] is not None)


def _cached_eigh():
    """``receiver._psd_eigh`` memoised on the matrix's bytes: without noise every setting forms the same second
    moment, whose eigen-decomposition (d = 5000 on bow5000) would otherwise be repeated per setting."""
    import hashlib

    from dpadapt.sound import receiver

    plain, cache = receiver._psd_eigh, {}

    def eigh(A):
        key = hashlib.sha1(np.ascontiguousarray(A).tobytes()).hexdigest()
        if key not in cache:
            if len(cache) > 8:
                cache.clear()
            cache[key] = plain(A)
        return cache[key]

    return eigh


def _init_worker() -> None:
    import dpadapt.sound as sound_pkg
    from dpadapt.sound import receiver

    sound_pkg.rule.design = _cached_design()
    receiver._psd_eigh = _cached_eigh()


def run(out: str, seeds: int, settings: dict[str, list], filters: list[str], workers: int = 1) -> int:
    import concurrent.futures as cf

    names = sorted(settings)
    grid = list(itertools.product(*(settings[k] for k in names)))
    done = set()
    if Path(out).is_file():
        for line in open(out):
            r = json.loads(line)
            if all(c in r for c in names):
                done.add((r["task"], r["epsilon"], r["seed"], tuple(r[c] for c in names)))
    jobs = _jobs(dev_pairs(filters), seeds, names, grid, done)
    print(f"{len(jobs)} jobs", flush=True)
    with open(out, "a") as f, cf.ProcessPoolExecutor(workers, initializer=_init_worker) as pool:
        for rows in pool.map(run_one, *zip(*jobs)) if workers > 1 else map(lambda j: (_init_worker(), run_one(*j))[1], jobs):
            for row in rows:
                f.write(json.dumps(row) + "\n")
            f.flush()
            print(rows[0]["task"], rows[0]["epsilon"], len(rows), "fits", flush=True)
    return 0


#: The reference rows of issue 37's selection on the tiny development pairs that have no DP source-only rows yet.
REFERENCE_ROWS = ("dpot-cs", "dp-lr", "dp-ncm", "source-only")


def references(out: str, seeds: int, filters: list[str]) -> int:
    """The rows of :data:`REFERENCE_ROWS` on the tiny development pairs, in the records format of
    ``benchmarks/dp_source_only/results/dp-source-only-dev.json`` (points)."""
    from dpadapt.bench.suites.sound_rows import ROWS, Problem

    records = []
    for spec in R.TINY_DEV_PAIRS:
        if filters and not any(f in spec.task for f in filters):
            continue
        d = spec.load()
        n = d.Xs.shape[0]
        for name in REFERENCE_ROWS:
            for eps in EPSILONS if ROWS[name].kind != "non-private" else (None,):
                for seed in range(seeds if eps is not None else 1):
                    p = Problem(spec, d.Xs, d.ys, d.Xt, tuple(range(d.n_classes)), eps, spec.delta(n) if eps else None, seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = ROWS[name].fit(p)
                    records.append({"task": spec.task, "row": name, "epsilon": eps, "seed": seed,
                                    "accuracy": 100 * float(np.mean(model.predict(d.Xt_test) == d.yt_test)), "auc": None})
            print(spec.task, name, flush=True)
    Path(out).write_text(json.dumps({"records": records}, indent=1))
    return 0


def _means(rows, key) -> dict:
    acc: dict = {}
    for r in rows:
        acc.setdefault(key(r), []).append(r)
    return acc


def _baseline_rows(path: str) -> list[dict]:
    """The rows of ``benchmarks/results/dp-source-only-dev.json`` (points) as fractions, ROC-AUC as ``roc_auc``."""
    out = []
    for r in json.loads(Path(path).read_text())["records"]:
        row = {"task": r["task"], "row": r["row"], "epsilon": r["epsilon"], "accuracy": r["accuracy"] / 100}
        if r.get("auc") is not None:
            row["roc_auc"] = r["auc"] / 100
        out.append(row)
    return out


def _mean_se(values) -> tuple[float, float]:
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0


def choose(out: str, baselines: list[str], metric_of=lambda task: "roc_auc" if task.startswith("physionet") else "accuracy") -> int:
    """The rule of ``design_rule.md`` (issue 37's selection): per design, settings monotone on every pair up to and
    including ε = None (mean(ε') ≥ mean(ε) − max(1, 2 SE) for the next larger ε') first; then the largest worst gap
    to the strongest reference over the design's development pairs and ε (DP source-only and the class-statistics
    design ``dpot-cs`` at ε ∈ {1, 2, 4, 8}, non-private source-only at ε = None); ties within 0.5 point by the mean gap."""
    rows = [json.loads(line) for line in open(out)]
    base = [r for path in baselines for r in _baseline_rows(path)]
    best: dict = {}
    for (task, method, eps), rs in _means(base, lambda r: (r["task"], r["row"], r["epsilon"])).items():
        kind = "dp" if eps is not None else "np"
        if (kind == "dp" and (method.startswith("dp-") or method == "dpot-cs")) or (kind == "np" and method == "source-only"):
            v = float(np.mean([r[metric_of(task)] for r in rs if metric_of(task) in r]))
            best[(task, eps)] = max(best.get((task, eps), -np.inf), v)
    for design in ("prototypes", "discriminant"):
        mine = [r for r in rows if r["design"] == design]
        names = sorted({c for r in mine for c in r if c.isupper()})  # every constant a recorded grid set
        scored = []
        for setting, rs in _means(mine, lambda r: tuple(r.get(c) for c in names)).items():
            cells = _means(rs, lambda r: (r["task"], r["epsilon"]))
            gaps, breaks = [], []
            for (task, eps), cr in cells.items():
                mean = float(np.mean([r[metric_of(task)] for r in cr]))
                if (task, eps) in best:
                    gaps.append(100 * (mean - best[(task, eps)]))
            for task in {t for t, _ in cells}:
                ms = [_mean_se([100 * r[metric_of(task)] for r in cells[(task, e)]]) for e in EPSILONS if (task, e) in cells]
                breaks += [f"{task} {a[0]:.1f}->{b[0]:.1f}" for a, b in zip(ms, ms[1:])
                           if b[0] < a[0] - max(1.0, 2 * np.hypot(a[1], b[1]))]
            scored.append((not breaks, min(gaps) if gaps else -np.inf, float(np.mean(gaps)) if gaps else -np.inf, setting,
                           len(gaps), breaks))
        if not scored:
            continue
        top = max(x[1] for x in scored if x[0] == max(y[0] for y in scored))
        ranked = sorted(scored, key=lambda x: (x[0], x[1] >= top - 0.5, x[2] if x[1] >= top - 0.5 else x[1]), reverse=True)
        print(f"== {design}: {len(scored)} settings; chosen first (monotone, worst gap, mean gap, cells)")
        for mono, worst, mean, setting, ncell, breaks in ranked:
            print(f"  {dict(zip(names, setting))}  monotone={mono}  worst {worst:+.2f}  mean {mean:+.2f}  cells {ncell}"
                  + (f"  breaks: {'; '.join(breaks)}" if breaks else ""))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument("--set", nargs="*", default=[], help="NAME=V1,V2,... (a constant of dpadapt.sound.design)")
    r.add_argument("--pairs", nargs="*", default=[])
    r.add_argument("--workers", type=int, default=1)
    c = sub.add_parser("choose")
    c.add_argument("out")
    c.add_argument("baselines", nargs="+", help="benchmarks/dp_source_only/results/dp-source-only-dev.json (and the "
                   "`references` rows): the DP and non-private reference rows of the same pairs")
    f = sub.add_parser("references")
    f.add_argument("out")
    f.add_argument("--seeds", type=int, default=5)
    f.add_argument("--pairs", nargs="*", default=[])
    args = ap.parse_args(argv)
    if args.cmd == "choose":
        return choose(args.out, args.baselines)
    if args.cmd == "references":
        return references(args.out, args.seeds, args.pairs)
    settings = {}
    for item in args.set:
        name, _, values = item.partition("=")
        if name not in CONSTANTS:
            raise SystemExit(f"unknown constant {name}")
        settings[name] = [json.loads(v) if v not in ("True", "False") else v == "True" for v in values.split(",")]
    return run(args.out, args.seeds, settings, args.pairs, args.workers)


if __name__ == "__main__":
    sys.exit(main())
