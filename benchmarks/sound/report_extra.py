"""The issue-28 checks the matrix (`dpadapt bench sound`) does not hold, with the chosen defaults (run once).

    python benchmarks/sound/report_extra.py physionet OUT.jsonl [--seeds 5] [--workers N]
    python benchmarks/sound/report_extra.py decaf20 OUT.jsonl [--seeds 5]
    python benchmarks/sound/report_extra.py featuretype OUT.jsonl [--seeds 3] [--pairs bow5000 ...] [--declared dense]
    python benchmarks/sound/report_extra.py labelshift OUT.jsonl [--seeds 5]
    python benchmarks/sound/report_extra.py table OUT.jsonl [OUT.jsonl ...]

``physionet``: the 12 ordered pairs of ICU units (one source each) and, per target unit, the three other
units as three sources of one request (their statistics add at the receiver; each keeps its own
guarantee); ε ∈ {1, 2, 4, 8} and None; ROC-AUC, balanced accuracy and accuracy on the target's rows.
``decaf20``: DeCAF6 D→W and W→D at ε ∈ {2, 20}, δ = 1/(1.2 n_s) (the issue's targets).
``featuretype``: the development pairs with ``feature_type`` declared ``dense`` and ``counts`` (the
matrix's ``sound`` row is the undeclared ``auto``). Fresh vetted noise per seed; nothing is chosen here.
``labelshift``: the development pairs whose class prevalence differs by ≥ 10 points (Heart, PhysioNet), each
fit scored as it is and with the receiver's label-shift correction (EM prior on its rows, the source prior
from the released noisy counts: what ``dpadapt score`` shows beside it). ``table``: the markdown summaries of what the runs recorded.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import sys
import time
import warnings

import numpy as np

from dpadapt.bench.suites import sound_rows as R
from dpadapt.sound import SoundDA
from select_design import metrics  # this folder's: accuracy, balanced accuracy, ROC-AUC

EPSILONS = (1.0, 2.0, 4.0, 8.0, None)


def _fit(sources: list, Xt, classes, eps, seed, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SoundDA(epsilon=eps, classes=classes, random_state=seed, **kw).fit_domains(
            [X for X, _ in sources], [y for _, y in sources], Xt)


def _job(kind: str, key: tuple, eps, seed: int) -> dict:
    t = time.perf_counter()
    if kind == "physionet":
        target, units = key
        pairs = [R._physionet_pair(u, target) for u in units]
        t_pair = pairs[0]
        model = _fit([(p.Xs, p.ys) for p in pairs], t_pair.Xt, (0, 1), eps, seed)
        row = {"target": target, "sources": list(units)}
    elif kind == "decaf20":
        spec = next(p for p in R.REPORT_PAIRS if p.task == key[0])
        t_pair = spec.load()
        model = _fit([(t_pair.Xs, t_pair.ys)], t_pair.Xt, tuple(range(t_pair.n_classes)), eps, seed,
                     delta=spec.delta(len(t_pair.ys)) if eps is not None else None)
        row = {"task": spec.task}
    elif kind == "labelshift":
        return _label_shift(key[0], eps, seed)
    else:
        task, declared = key
        spec = next(p for p in (*R.DEV_PAIRS, *R.HEART_PAIRS, *R.PHYSIONET_PAIRS) if p.task == task)
        t_pair = spec.load()
        model = _fit([(t_pair.Xs, t_pair.ys)], t_pair.Xt, tuple(range(t_pair.n_classes)), eps, seed,
                     delta=spec.delta(len(t_pair.ys)) if eps is not None else None, feature_type=declared)
        row = {"task": task, "feature_type": declared}
    return {**row, "epsilon": eps, "seed": seed, "design": model.design_["design"],
            **metrics(model, t_pair.Xt_test, t_pair.yt_test), "seconds": time.perf_counter() - t}


def _label_shift(task: str, eps, seed: int) -> dict:
    from sklearn.metrics import balanced_accuracy_score

    from dpadapt.labelshift import adjust_log_proba, em_target_prior

    spec = next(p for p in (*R.HEART_PAIRS, *R.PHYSIONET_PAIRS) if p.task == task)
    d = spec.load()
    model = _fit([(d.Xs, d.ys)], d.Xt, tuple(range(d.n_classes)), eps, seed)
    counts = np.maximum(model.releases_[0]["counts"], 1.0)
    logp = np.log(np.clip(model.predict_proba(d.Xt_test), np.finfo(float).tiny, None))
    est = em_target_prior(logp, counts / counts.sum())
    row = {"task": task, "epsilon": eps, "seed": seed, "prevalence_source": float(np.mean(d.ys == 1)),
           "prevalence_target": float(np.mean(d.yt_test == 1)), "estimated_target_prior": est.target_prior.tolist()}
    for name, lp in (("plain", logp), ("corrected", adjust_log_proba(logp, est))):
        pred = np.argmax(lp, axis=1)
        row[f"accuracy_{name}"] = float(np.mean(pred == d.yt_test))
        row[f"balanced_accuracy_{name}"] = float(balanced_accuracy_score(d.yt_test, pred))
    return row


def _shifted_pairs() -> list:
    """The development pairs of binary tables whose class-1 prevalence differs by ≥ 10 points."""
    out = []
    for spec in (p for p in (*R.HEART_PAIRS, *R.PHYSIONET_PAIRS) if p.available()):
        d = spec.load()
        if abs(np.mean(d.ys == 1) - np.mean(d.yt_test == 1)) >= 0.10:
            out.append(spec.task)
    return out


def jobs(kind: str, seeds: int, filters: list[str], declared=("dense", "counts")) -> list[tuple]:
    if kind == "labelshift":
        keys = [(t,) for t in _shifted_pairs()]
    elif kind == "physionet":
        units = R.PHYSIONET_UNITS
        keys = [(t, (s,)) for t in units for s in units if s != t] + [(t, tuple(u for u in units if u != t)) for t in units]
    elif kind == "decaf20":
        keys = [(p.task,) for p in R.REPORT_PAIRS if p.dataset == "decaf6"]
    else:
        specs = [*R.DEV_PAIRS, *(p for p in (*R.HEART_PAIRS, *R.PHYSIONET_PAIRS) if p.available())]
        keys = [(p.task, f) for p in specs if not filters or any(s in p.task for s in filters) for f in declared]
    epsilons = (2.0, 20.0) if kind == "decaf20" else EPSILONS
    out = [(kind, k, e, s) for k in keys for e in epsilons for s in range(seeds if e is not None else 1)]
    return sorted(out, key=lambda j: j[2] is not None)  # the full-feature (noise-free) fits first


def run(kind: str, out: str, seeds: int, filters: list[str], workers: int, declared=("dense", "counts")) -> int:
    todo = jobs(kind, seeds, filters, declared)
    with open(out, "a") as f, cf.ProcessPoolExecutor(workers) as pool:
        for row in pool.map(_job, *zip(*todo)):
            f.write(json.dumps(row) + "\n")
            f.flush()
    return 0


def table(paths: list[str]) -> int:
    rows = [json.loads(line) for p in paths for line in open(p)]
    eps_cols = ("1", "2", "4", "8", "None")

    def cell(vals):
        v = 100 * np.asarray(vals)
        return f"{v.mean():.1f} ± {v.std(ddof=1) if v.size > 1 else 0.0:.1f}"

    phys = [r for r in rows if "target" in r]
    if phys:
        print("PhysioNet 2012, ROC-AUC (%) on the target's rows, mean ± sd over seeds\n")
        print("| target | sources | " + " | ".join(f"ε = {e}" for e in eps_cols) + " |\n|---|---|" + "---|" * len(eps_cols))
        for target in R.PHYSIONET_UNITS:
            for srcs in sorted({tuple(r["sources"]) for r in phys if r["target"] == target}, key=len):
                cells = [cell([r["roc_auc"] for r in phys if r["target"] == target and tuple(r["sources"]) == srcs
                               and str(r["epsilon"] if r["epsilon"] is None else f"{r['epsilon']:g}") == e]) for e in eps_cols]
                print(f"| {target} | {' + '.join(srcs)} | " + " | ".join(cells) + " |")
    for name, sel in (("DeCAF6 at δ = 1/(1.2 n_s), accuracy (%)", lambda r: "feature_type" not in r and "task" in r),
                      ("Declared feature type, accuracy (%; ROC-AUC on PhysioNet)", lambda r: "feature_type" in r)):
        part = [r for r in rows if sel(r)]
        if not part:
            continue
        print(f"\n{name}\n")
        keys = sorted({(r["task"], r.get("feature_type", "")) for r in part})
        epsilons = sorted({r["epsilon"] for r in part}, key=lambda e: np.inf if e is None else e)
        print("| task | declared | " + " | ".join(f"ε = {e}" for e in epsilons) + " |\n|---|---|" + "---|" * len(epsilons))
        for task, declared in keys:
            metric = "roc_auc" if task.startswith("physionet") else "accuracy"
            cells = [cell([r[metric] for r in part if r["task"] == task and r.get("feature_type", "") == declared
                           and r["epsilon"] == e]) for e in epsilons]
            print(f"| {task} | {declared} | " + " | ".join(cells) + " |")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("physionet", "decaf20", "featuretype", "labelshift", "table"))
    ap.add_argument("out", nargs="+")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--pairs", nargs="*", default=[])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--declared", nargs="+", default=["dense", "counts"], help="featuretype: the declarations to run")
    args = ap.parse_args(argv)
    if args.kind == "table":
        return table(args.out)
    return run(args.kind, args.out[0], args.seeds, args.pairs, args.workers, tuple(args.declared))


if __name__ == "__main__":
    sys.exit(main())
