"""The sound default on the DEVELOPMENT pairs only, for a grid of its design constants (issue 28).

    python benchmarks/sound/select_design.py run OUT.jsonl --seeds 5 [--set NAME=V1,V2 ...] [--pairs googlenet surf]
    python benchmarks/sound/select_design.py choose OUT.jsonl BASELINES.jsonl

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
    specs = [*R.DEV_PAIRS, *(p for p in R.HEART_PAIRS if p.available()), *getattr(R, "PHYSIONET_PAIRS", ())]
    return [p for p in specs if p.split == "dev" and (not filters or any(f in p.task for f in filters))]


def metrics(model, X, y) -> dict:
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    y = np.asarray(y)
    pred = model.predict(X)
    out = {"accuracy": float(np.mean(pred == y)), "balanced_accuracy": float(balanced_accuracy_score(y, pred))}
    if len(model.classes_) == 2 and len(np.unique(y)) == 2:
        out["roc_auc"] = float(roc_auc_score(y == model.classes_[1], model.predict_proba(X)[:, 1]))
    return out


def run(out: str, seeds: int, settings: dict[str, list], filters: list[str]) -> int:
    names = sorted(settings)
    with open(out, "a") as f:
        for spec in dev_pairs(filters):
            d = spec.load()
            n = d.Xs.shape[0]
            classes = tuple(range(d.n_classes))
            for values in itertools.product(*(settings[k] for k in names)):
                for k, v in zip(names, values):
                    setattr(rule, k, v)
                for eps in EPSILONS:
                    for seed in range(seeds if eps is not None else 1):
                        t = time.perf_counter()
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est = SoundDA(epsilon=eps, delta=spec.delta(n) if eps else None, classes=classes,
                                          random_state=seed, reproducible_noise=True).fit_domains(d.Xs, d.ys, d.Xt)
                        row = {"task": spec.task, "epsilon": eps, "seed": seed, **dict(zip(names, values)),
                               **metrics(est, d.Xt_test, d.yt_test), "design": est.design_["design"],
                               "k": est.design_["k_rule"], "seconds": time.perf_counter() - t}
                        f.write(json.dumps(row) + "\n")
                        f.flush()
                print(spec.task, dict(zip(names, values)), flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument("--set", nargs="*", default=[], help="NAME=V1,V2,... (a constant of dpadapt.sound.design)")
    r.add_argument("--pairs", nargs="*", default=[])
    args = ap.parse_args(argv)
    settings = {}
    for item in args.set:
        name, _, values = item.partition("=")
        if not hasattr(rule, name):
            raise SystemExit(f"unknown constant {name}")
        settings[name] = [json.loads(v) if v not in ("True", "False") else v == "True" for v in values.split(",")]
    return run(args.out, args.seeds, settings, args.pairs)


if __name__ == "__main__":
    sys.exit(main())
