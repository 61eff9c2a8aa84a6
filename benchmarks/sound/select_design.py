"""The sound default on the DEVELOPMENT pairs only, for a grid of its design constants (issue 28).

    python benchmarks/sound/select_design.py run OUT.jsonl --seeds 5 [--set NAME=V1,V2 ...] [--pairs googlenet surf]
    python benchmarks/sound/select_design.py choose OUT.jsonl benchmarks/results/dp-source-only-dev.json

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
    specs = [*R.DEV_PAIRS, *(p for p in (*R.HEART_PAIRS, *R.PHYSIONET_PAIRS) if p.available())]
    return [p for p in specs if p.split == "dev" and (not filters or any(f in p.task for f in filters))]


def metrics(model, X, y) -> dict:
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    y = np.asarray(y)
    pred = model.predict(X)
    out = {"accuracy": float(np.mean(pred == y)), "balanced_accuracy": float(balanced_accuracy_score(y, pred))}
    if len(model.classes_) == 2 and len(np.unique(y)) == 2:
        out["roc_auc"] = float(roc_auc_score(y == model.classes_[1], model.predict_proba(X)[:, 1]))
    return out


def _cached_design():
    """``rule.design`` memoised per (target rows, facts, feature type, constants): seeds share one request."""
    plain, cache = rule.design, {}

    def design(Xt, facts, *, feature_type="auto"):
        key = (id(Xt), facts, feature_type, tuple(getattr(rule, c) for c in DESIGN_CONSTANTS))
        if key not in cache:
            cache[key] = plain(Xt, facts, feature_type=feature_type)
        return cache[key]

    return design


#: The constants the request depends on (the others act after the release).
DESIGN_CONSTANTS = ("CLUSTER_RATIO", "GAMMA_PROTOTYPES", "GAMMA_DISCRIMINANT", "MAX_BASIS")
#: The constants of :mod:`dpadapt.sound.design` a grid may set.
CONSTANTS = ("CLUSTER_RATIO", "GAMMA_PROTOTYPES", "GAMMA_DISCRIMINANT", "RIDGE_SCALE", "RIDGE_FLOOR", "MAX_BASIS")


def run_one(task: str, eps, seeds: int, names: list[str], groups: list[list[tuple]]) -> list[dict]:
    """One development pair at one ε: each group of settings is fitted once (its first setting) and recorded for every
    setting of the group (at ε = None the γ constants size no basis, so the settings that differ only in them share
    one fit). One process per job: the requests and decompositions are shared within it."""
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
            for values in grid:
                if eps is None:
                    key = tuple(v for c, v in zip(names, values) if not c.startswith("GAMMA"))
                else:
                    key = values
                groups.setdefault(key, []).append(values)
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


def choose(out: str, baselines: str, metric_of=lambda task: "roc_auc" if task.startswith("physionet") else "accuracy") -> int:
    """The rule of ``design_rule.md`` ("Selection"): per design, the setting whose worst gap to the strongest
    baseline over its development pairs and ε (DP source-only at ε ∈ {1, 2, 4, 8}, non-private source-only at
    ε = None) is largest; ties within 0.5 point by the mean gap; settings that break monotonicity last."""
    rows = [json.loads(line) for line in open(out)]
    base = _baseline_rows(baselines)
    best: dict = {}
    for (task, method, eps), rs in _means(base, lambda r: (r["task"], r["row"], r["epsilon"])).items():
        kind = "dp" if eps is not None else "np"
        if (kind == "dp" and method.startswith("dp-")) or (kind == "np" and method == "source-only"):
            v = float(np.mean([r[metric_of(task)] for r in rs]))
            best[(task, eps)] = max(best.get((task, eps), -np.inf), v)
    for design in ("prototypes", "discriminant"):
        mine = [r for r in rows if r["design"] == design]
        names = sorted({c for r in mine for c in r if c.isupper()})  # every constant a recorded grid set
        scored = []
        for setting, rs in _means(mine, lambda r: tuple(r.get(c) for c in names)).items():
            cells = _means(rs, lambda r: (r["task"], r["epsilon"]))
            gaps, mono = [], True
            for (task, eps), cr in cells.items():
                mean = float(np.mean([r[metric_of(task)] for r in cr]))
                if (task, eps) in best:
                    gaps.append(100 * (mean - best[(task, eps)]))
            for task in {t for t, _ in cells}:
                means = [float(np.mean([r[metric_of(task)] for r in cells[(task, e)]])) for e in EPSILONS if (task, e) in cells]
                mono &= all(b >= a - 0.01 for a, b in zip(means, means[1:]))
            scored.append((mono, min(gaps), float(np.mean(gaps)), setting, len(gaps)))
        if not scored:
            continue
        top = max(x[1] for x in scored if x[0] == max(y[0] for y in scored))
        ranked = sorted(scored, key=lambda x: (x[0], x[1] >= top - 0.5, x[2] if x[1] >= top - 0.5 else x[1]), reverse=True)
        print(f"== {design}: {len(scored)} settings; chosen first (monotone, worst gap, mean gap, cells)")
        for mono, worst, mean, setting, ncell in ranked:
            print(f"  {dict(zip(names, setting))}  monotone={mono}  worst {worst:+.2f}  mean {mean:+.2f}  cells {ncell}")
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
    c.add_argument("baselines", help="benchmarks/results/dp-source-only-dev.json: the DP and non-private source-only rows of the same pairs")
    args = ap.parse_args(argv)
    if args.cmd == "choose":
        return choose(args.out, args.baselines)
    settings = {}
    for item in args.set:
        name, _, values = item.partition("=")
        if name not in CONSTANTS:
            raise SystemExit(f"unknown constant {name}")
        settings[name] = [json.loads(v) if v not in ("True", "False") else v == "True" for v in values.split(",")]
    return run(args.out, args.seeds, settings, args.pairs, args.workers)


if __name__ == "__main__":
    sys.exit(main())
