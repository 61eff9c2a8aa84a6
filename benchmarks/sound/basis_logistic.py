"""Issue 37 (measurement, no library change): a DP logistic regression released in the receiver's request basis.

    python benchmarks/sound/basis_logistic.py run OUT.jsonl --split dev --seeds 3 [--pairs bow5000 physionet] [--middle]
    python benchmarks/sound/basis_logistic.py table OUT.jsonl
    python benchmarks/sound/basis_logistic.py multi OUT.jsonl --seeds 5     # PhysioNet: one DP-LR a unit, averaged

``run``: per development pair (tiny: ``sound_rows.TINY_DEV_PAIRS``; large: bow5000 K→B, D→E, B→K, E→D and PhysioNet
three units → one; ``--middle`` adds the middle pairs), ε ∈ {1, 4, 8} (``--seeds`` seeds) and None (one fit), the
rows of ``README.md`` ("A logistic release in the receiver's basis"), on ONE default fit per (pair, ε, seed):

* ``default`` — ``SoundDA`` as a user gets it (``finish._fit``: numpy's reproducible sampler, seed s);
* ``basis-lr`` — :class:`dpadapt.classstats.DPLogisticRegression` at the same (ε, δ, seed) on the source rows mapped by
  the default request's ``row_map()`` (the PhysioNet units pooled as one source, as the DP-LR reference pools them);
  at ε = None ``LogisticRegressionCV`` in the same basis (10 Cs, 3-fold CV on the source, as ``finish.py oracle``);
* at ε = None also ``lr-cv-full``: LR-CV on the public row map of the whole feature space (the issue's reference).

Each row records the public quantities of the trigger (design, n, K, k, σ_eff, q = n/(K σ_eff), n·ε/K). ``table``
prints the per-cell table with ``basis-lr-best`` (the trigger written in ``README.md`` before the run), the recorded
DP-LR and source-only references, and the four checks of the rule.

Privacy sanity (for the route this measures; nothing is released here): the basis (mean, components, k) is a function
of the receiver's own rows and public facts (n, ε, δ, K), so the map is public to the source and the same for D and
D′. ``RowMap.__call__`` returns every row renormalised to norm ``UNIT`` < 1 in the k-dimensional space (zero rows stay
zero); ``DPLogisticRegression`` maps its input again with the public ``row_map`` (unit rows, idempotent here), adds a
bias coordinate and scales by 1/√2 (‖f_i‖ ≤ 1), and clips every per-example gradient r_i ⊗ f_i to ℓ2 norm C in float64
before the Gaussian of ``noisy_gd_plan`` (Δ = 2C replace-one): the sensitivity rests on the clip, not on the map.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dpadapt.bench.suites import sound_rows as R
from dpadapt.sound import design as rule
from dpadapt.sound.request import Request
from finish import LARGE_BOW, _fit, _mean_se, dplr_cells  # this folder's
from finish import _load as _load_large
from noisefree_tiny import _source_only
from select_design import _init_worker, dev_pairs, metrics

HERE = Path(__file__).parent
EPSILONS = (1.0, 4.0, 8.0, None)
PHYSIONET_3 = tuple(f"physionet:3->{u}" for u in R.PHYSIONET_UNITS)
MIDDLE = ("googlenet1024:A->D", "googlenet1024:A->W", "googlenet1024:W->A", "surf:A->C", "surf:C->A", "surf:A->D",
          "surf:C->W", "heart:cleveland->hungarian", "heart:hungarian->cleveland")
FAMILIES = {"tiny googlenet": ("googlenet1024:D->A",), "tiny surf": ("surf:D->A", "surf:D->W"), "bow5000 dev": LARGE_BOW,
            "physionet 3 units": PHYSIONET_3}


def single_tasks() -> list[str]:
    """The single-source PhysioNet development pairs the finish trigger reaches (n/K ≥ 500; ``finish.py single``)."""
    return [p.task for p in R.PHYSIONET_PAIRS if p.load().Xs.shape[0] / 2 >= rule.FINISH_ROWS_PER_CLASS]


def _tasks(middle: bool, filters: list[str], single: bool = False) -> list[str]:
    tasks = [p.task for p in R.TINY_DEV_PAIRS] + list(LARGE_BOW) + list(PHYSIONET_3) + (list(MIDDLE) if middle else [])
    tasks = single_tasks() if single else tasks
    return [t for t in tasks if not filters or any(f in t for f in filters)]


def _load(task: str):
    """(sources, Xt, Xt_test, yt_test, metric, δ of the default, δ of basis-lr) of a DEVELOPMENT pair only."""
    if task.startswith("physionet:"):
        sources, Xt, Xtest, ytest, metric, delta = _load_large(task)
        n = sum(X.shape[0] for X, _ in sources)
        return sources, Xt, Xtest, ytest, metric, delta, 1.0 / (10.0 * n)
    spec = next((p for p in dev_pairs([]) if p.task == task), None)
    if spec is None:  # never a report pair
        raise SystemExit(f"{task}: not a development pair")
    d = spec.load()
    delta = spec.delta(d.Xs.shape[0])
    return [(d.Xs, d.ys)], d.Xt, d.Xt_test, d.yt_test, spec.metric, delta, delta


def _score(proba, classes, y, metric: str) -> float:
    """Accuracy or ROC-AUC (points) from class probabilities."""
    y = np.asarray(y)
    if metric == "roc_auc":
        from sklearn.metrics import roc_auc_score

        return 100 * float(roc_auc_score(y == classes[1], proba[:, 1]))
    return 100 * float(np.mean(np.asarray(classes)[np.argmax(proba, axis=1)] == y))


def _basis_lr(Zs, ys, classes, eps, delta, seed):
    """The candidate's model on the mapped source rows: DP-LR at (ε, δ), LR-CV in the basis at ε = None."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if eps is None:
            from sklearn.linear_model import LogisticRegressionCV

            return LogisticRegressionCV(Cs=10, cv=3, max_iter=2000).fit(Zs, ys)
        from dpadapt.classstats import DPLogisticRegression

        return DPLogisticRegression(epsilon=eps, delta=delta, classes=classes, feature_type="dense", random_state=seed,
                                    reproducible_noise=True).fit_domains(Zs, ys)


def _lr_cv_full(sources, Xtest, ytest, log1p: bool, metric: str) -> float:
    """LR-CV on the public row map of the whole feature space (C ∈ {0.01, …, 100}, 3-fold CV; ``noisefree_tiny``)."""
    from sklearn.linear_model import LogisticRegressionCV

    from dpadapt.classstats.adapt import row_map

    Xs = sp.vstack([X for X, _ in sources]) if sp.issparse(sources[0][0]) else np.vstack([X for X, _ in sources])
    ys = np.concatenate([y for _, y in sources])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegressionCV(Cs=[0.01, 0.1, 1, 10, 100], cv=3, max_iter=2000).fit(row_map(Xs, log1p), ys)
        return _score(lr.predict_proba(row_map(Xtest, log1p)), lr.classes_, ytest, metric)


def run_one(task: str, eps, seeds: int) -> list[dict]:
    sources, Xt, Xtest, ytest, metric, delta, delta_lr = _load(task)
    ys = np.concatenate([y for _, y in sources])
    classes = tuple(range(len(np.unique(ys))))
    rows = []
    for seed in range(seeds if eps is not None else 1):
        t = time.perf_counter()
        est = _fit(sources, Xt, classes, eps, delta, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            default = 100 * metrics(est.model_, Xtest, ytest)[metric]
        req = Request.from_release(est.request_, n_features=Xt.shape[1])
        rmap = req.row_map()
        Zs = np.vstack([rmap(X) for X, _ in sources])
        t_lr = time.perf_counter()
        lr = _basis_lr(Zs, ys, classes, eps, delta_lr, seed)
        basis = _score(lr.predict_proba(rmap(Xtest)), lr.classes_, ytest, metric)
        d = est.design_
        sigma = float(d.get("sigma") or 0.0)
        n, K = float(d["n"]), int(d["K"])
        row = {"task": task, "epsilon": eps, "seed": seed, "metric": metric, "design": d["design"], "n": n, "K": K,
               "k": req.k, "d": int(Xt.shape[1]), "sigma": sigma, "q": math.inf if sigma == 0 else n / (K * sigma),
               "n_eps_per_class": math.inf if eps is None else n * eps / K, "default": default, "basis-lr": basis,
               "seconds_basis_lr": time.perf_counter() - t_lr}
        if eps is None:
            row["lr-cv-full"] = _lr_cv_full(sources, Xtest, ytest, req.log1p, metric)
        row["seconds"] = time.perf_counter() - t
        rows.append(row)
    return rows


def federated_epsilon(eps: float, sizes: list[int]) -> float:
    """ε′ of one pooled noisy GD (δ = 1/(10 n)) whose noise multiplier is √(Σ z_i²), z_i that of unit i at
    (ε, 1/(10 n_i)): the sum of the units' own Gaussians per step (README.md, third amendment)."""
    from dpadapt.privacy import accounting

    z = math.sqrt(sum(accounting.analytic_gaussian_sigma(eps, 1.0 / (10.0 * m), 1.0) ** 2 for m in sizes))
    lo, hi, delta = 1e-4, eps, 1.0 / (10.0 * sum(sizes))
    for _ in range(60):  # z(ε′) falls as ε′ grows
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if accounting.analytic_gaussian_sigma(mid, delta, 1.0) <= z else (mid, hi)
    return hi


def run_multi(task: str, eps, seeds: int) -> list[dict]:
    """PhysioNet three units: ``default`` and ``basis-lr-per-source`` (README.md, second amendment). Each unit fits
    its own model at (ε, 1/(10 n_i)) in the same basis; the receiver averages the coefficients weighted by n_i, i.e.
    the softmax of Σ_i (n_i/n)·log p_i (the per-row log-normaliser cancels)."""
    sources, Xt, Xtest, ytest, metric, delta, _ = _load(task)
    classes = tuple(range(len(np.unique(np.concatenate([y for _, y in sources])))))
    n = sum(X.shape[0] for X, _ in sources)
    rows = []
    for seed in range(seeds if eps is not None else 1):
        est = _fit(sources, Xt, classes, eps, delta, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            default = 100 * metrics(est.model_, Xtest, ytest)[metric]
        rmap = Request.from_release(est.request_, n_features=Xt.shape[1]).row_map()
        Zt = rmap(Xtest)
        logp = sum(X.shape[0] / n * np.log(np.clip(
            _basis_lr(rmap(X), y, classes, eps, 1.0 / (10.0 * X.shape[0]), 10 * seed + i).predict_proba(Zt), 1e-300, None))
            for i, (X, y) in enumerate(sources))
        proba = np.exp(logp - logp.max(axis=1, keepdims=True))
        eps_fed = eps if eps is None else federated_epsilon(eps, [X.shape[0] for X, _ in sources])
        fed = _basis_lr(np.vstack([rmap(X) for X, _ in sources]), np.concatenate([y for _, y in sources]), classes,
                        eps_fed, 1.0 / (10.0 * n), seed)
        rows.append({"task": task, "epsilon": eps, "seed": seed, "metric": metric, "default": default,
                     "basis-lr-per-source": _score(proba / proba.sum(axis=1, keepdims=True), classes, ytest, metric),
                     "epsilon_federated": eps_fed, "basis-lr-federated": _score(fed.predict_proba(Zt), classes, ytest, metric)})
    return rows


def run(out: str, seeds: int, middle: bool, filters: list[str], workers: int, one=run_one, single: bool = False) -> int:
    import concurrent.futures as cf

    done = set()
    if Path(out).is_file():  # resumable: a (task, ε) already written is skipped
        done = {(r["task"], r["epsilon"]) for r in map(json.loads, open(out))}
    jobs = [(t, e, seeds) for t in _tasks(middle, filters, single) for e in EPSILONS if (t, e) not in done]
    with open(out, "a") as f, cf.ProcessPoolExecutor(workers, initializer=_init_worker) as pool:
        for rows in pool.map(one, *zip(*jobs)) if jobs else ():
            for r in rows:
                f.write(json.dumps(r) + "\n")
            f.flush()
            print(rows[0]["task"], rows[0]["epsilon"], {c: round(float(np.mean([r[c] for r in rows])), 1) for c in
                                                        ("default", "basis-lr", "basis-lr-per-source", "basis-lr-federated") if c in rows[0]}, flush=True)
    return 0


def triggered(r: dict, every_none: bool = True) -> bool:
    """The trigger of ``README.md``, fixed before the run: ε = None, or the library's 'plenty of data' trigger.
    ``every_none=False`` (a post-hoc reading for the next round, not the rule): the latter alone (q = ∞ at None)."""
    if r["epsilon"] is None and every_none:
        return True
    return (r["design"] == "discriminant" and r["n"] / r["K"] >= rule.FINISH_ROWS_PER_CLASS
            and rule.FINISH_THRESHOLD is not None and r["q"] >= rule.FINISH_THRESHOLD)


def references() -> tuple[dict, dict]:
    """((task, ε) → DP-LR values in the full space, task → non-private source-only), as recorded."""
    lr = dplr_cells()
    recs = json.loads((HERE.parent / "dp_source_only/results/dp-source-only-dev.json").read_text())["records"]
    for r in recs:
        if r["row"] == "dp-lr" and r["epsilon"] is not None and (r["task"] == "googlenet1024:D->A" or "physionet" in r["task"]):
            lr.setdefault((r["task"], float(r["epsilon"])), []).append(r["auc"] if "physionet" in r["task"] else r["accuracy"])
    for r in json.load(open(HERE / "results/issue37/tiny-references.json"))["records"]:
        if r["row"] == "dp-lr" and r["task"].startswith("surf") and r["epsilon"] is not None:
            lr.setdefault((r["task"], float(r["epsilon"])), []).append(r["accuracy"])
    for line in open(HERE / "results/issue37/finish-dplr-physionet.jsonl"):
        r = json.loads(line)
        lr.setdefault((r["task"], float(r["epsilon"])), []).append(r["roc_auc"])
    so = {t: _source_only(t) for fam in FAMILIES.values() for t in fam if not t.startswith("physionet")}
    return lr, so


def _best(r: dict, every_none: bool = True) -> float:
    return r["basis-lr"] if triggered(r, every_none) else r["default"]


#: The rows judged by the checks: the default, the rule's basis-lr-best, and (post hoc, for the next round only)
#: basis-lr-best without the ε = None branch for every pair.
JUDGED = {"default": lambda r: r["default"], "basis-lr-best": _best, "post-hoc finish-trigger only": lambda r: _best(r, False)}


def table_multi(rows: list[dict], lr: dict) -> int:
    """PhysioNet three units: default, per-source average, federated (mean ± SE), DP-LR pooled, and the pooled
    basis-lr of ``run`` when its rows are given as a second file."""
    cols = ["default", "basis-lr-per-source", "basis-lr-federated"]
    print("| pair | ε | ε′ (federated) | " + " | ".join(cols) + " | DP-LR (pooled, one Gaussian) | federated − DP-LR |")
    print("|---|---|---|" + "---|" * (len(cols) + 2))
    for task in PHYSIONET_3:
        for eps in EPSILONS:
            rs = [r for r in rows if r["task"] == task and r["epsilon"] == eps]
            if not rs:
                continue
            m = {c: _mean_se([r[c] for r in rs]) for c in cols}
            ref = _mean_se(lr[task, eps]) if (task, eps) in lr else None
            gap = ""
            if ref:
                g, se = m["basis-lr-federated"][0] - ref[0], math.hypot(m["basis-lr-federated"][1], ref[1])
                gap = f"{g:+.1f}" + (" **below**" if g < -max(1.0, 2 * se) else "")
            e2 = rs[0].get("epsilon_federated")
            print(f"| {task} | {eps if eps else 'None'} | {f'{e2:.2f}' if e2 else ''} | "
                  + " | ".join(f"{m[c][0]:.1f} ± {m[c][1]:.1f}" for c in cols)
                  + f" | {f'{ref[0]:.1f} ± {ref[1]:.1f}' if ref else ''} | {gap} |")
    return 0


def table(path: str) -> int:
    rows = [json.loads(line) for line in open(path)]
    lr, so = references()
    if "basis-lr-per-source" in rows[0]:
        return table_multi(rows, lr)
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    large = (*LARGE_BOW, *PHYSIONET_3, *(t for t in tasks if t.startswith("physionet:") and t not in PHYSIONET_3))
    cell = {}
    print("| pair | ε | design, k | n·ε/K | q | default | basis-lr | basis-lr − default | basis-lr-best | DP-LR | best − DP-LR |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for task in tasks:
        for eps in EPSILONS:
            rs = [r for r in rows if r["task"] == task and r["epsilon"] == eps]
            if not rs:
                continue
            m = {name: _mean_se([f(r) for r in rs]) for name, f in
                 (*JUDGED.items(), ("basis-lr", lambda r: r["basis-lr"]), ("diff", lambda r: r["basis-lr"] - r["default"]))}
            cell[task, eps] = (m, rs)
            ref = lr.get((task, eps))
            lm = _mean_se(ref) if ref else None
            fmt = (lambda v: f"{v[0]:.1f} ± {v[1]:.1f}") if eps is not None else (lambda v: f"{v[0]:.1f}")
            gap = ""
            if lm:
                g, se = m["basis-lr-best"][0] - lm[0], math.hypot(m["basis-lr-best"][1], lm[1])
                gap = f"{g:+.1f}" + (" **below**" if g < -max(1.0, 2 * se) else "")
            r0 = rs[0]
            print(f"| {task} | {eps if eps else 'None'} | {r0['design'][:5]}, {r0['k']} | {r0['n_eps_per_class']:.0f} | "
                  f"{r0['q']:.0f} | {fmt(m['default'])} | {fmt(m['basis-lr'])} | {m['diff'][0]:+.1f} ± {m['diff'][1]:.1f} | "
                  f"{fmt(m['basis-lr-best'])}{' (lr)' if triggered(r0) else ''} | {fmt(lm) if lm else ''} | {gap} |")
    for name, f in JUDGED.items():
        print(f"\n### {name}")
        print("Check 1 (ε = None, per family; reference = max(source-only, LR-CV full) − 0.5):")
        for fam, ts in FAMILIES.items():
            got = [(t, cell[t, None][1][0]) for t in ts if (t, None) in cell]
            if got:
                gaps = [f(r) - max(v for v in (so.get(t), r["lr-cv-full"]) if v is not None) for t, r in got]
                print(f"  {fam:18s} mean gap {np.mean(gaps):+.2f} ({'met' if np.mean(gaps) >= -0.5 else 'not met'}); pairs > 2 "
                      f"below: {sum(g < -2 for g in gaps)}; " + ", ".join(f"{t} {g:+.1f}" for (t, _), g in zip(got, gaps)))
        below = []
        for t in large:
            for eps in (4.0, 8.0):
                if (t, eps) in cell and (t, eps) in lr:
                    (v, se), (lv, lse) = cell[t, eps][0][name], _mean_se(lr[t, eps])
                    if v - lv < -max(1.0, 2 * math.hypot(se, lse)):
                        below.append(f"{t} ε={eps:g} {v - lv:+.1f}")
        print(f"Check 2 (ε = 4, 8, large pairs below DP-LR by more than max(1, 2 SE)): {len(below)} " + "; ".join(below))
        print("Check 3 (private cells below default by more than max(1, 2 SE); monotonicity up to None):")
        for (t, eps), (m, rs) in cell.items():
            d = [f(r) - r["default"] for r in rs]
            if eps is not None and _mean_se(d)[0] < -max(1.0, 2 * _mean_se(d)[1]):
                print(f"  loss: {t} ε={eps:g} {_mean_se(d)[0]:+.1f} ± {_mean_se(d)[1]:.1f}")
        for t in tasks:
            order = [e for e in EPSILONS if (t, e) in cell]
            for a, b in zip(order, order[1:]):
                (ma, sa), (mb, sb) = cell[t, a][0][name], cell[t, b][0][name]
                if mb < ma - max(1.0, 2 * math.hypot(sa, sb)):
                    print(f"  break: {t} ε={a} → {b}: {ma:.1f} → {mb:.1f}")
    print("\nCheck 4 (private cells where basis-lr is below default by more than max(1, 2 SE)):")
    for (t, eps), (m, rs) in cell.items():
        if eps is not None and m["diff"][0] < -max(1.0, 2 * m["diff"][1]):
            print(f"  {t} ε={eps:g} n·ε/K={rs[0]['n_eps_per_class']:.0f} q={rs[0]['q']:.0f} k={rs[0]['k']}: "
                  f"{m['diff'][0]:+.1f} ± {m['diff'][1]:.1f}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cmd", choices=("run", "table", "multi"))
    ap.add_argument("out")
    ap.add_argument("--split", choices=("dev",), default="dev", help="development pairs only (no report pair is run)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--pairs", nargs="*", default=[], help="substrings of the tasks to run")
    ap.add_argument("--middle", action="store_true", help="also the middle development pairs")
    ap.add_argument("--single", action="store_true", help="only the single-source PhysioNet pairs the finish trigger reaches")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        return run(a.out, a.seeds, a.middle, a.pairs, a.workers, single=a.single)
    if a.cmd == "multi":
        return run(a.out, a.seeds, False, ["physionet"], a.workers, one=run_multi)
    return table(a.out)


if __name__ == "__main__":
    sys.exit(main())
