"""Issue 23, the Done-when matrix: the DEFAULT sound design (:class:`dpadapt.sound.SoundDA` with the
committed rule, which dispatches to the chosen design's route) beside
DP-NCM and DP-LR at the same (ε, δ) and non-private source-only, 5 seeds, fresh noise on every run.

``python benchmarks/selection/sound/sound_report.py OUT.jsonl SET [seeds]`` with SET one of ``dev`` (the development
pairs) or ``report`` (DeCAF6 D↔W with δ = 1/(1.2 n_s) and ε up to 20, as in the paper; Amazon bow5000
K→D, D→B, B→E, E→K). Run ``report`` only after the rule is committed (benchmarks/selection/sound/README.md).
``python benchmarks/selection/sound/sound_report.py --table OUT.jsonl`` prints the table: mean ± std per cell and a
flag ``!`` where the default is more than 1 point below the best DP source-only baseline.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean
from dpadapt.sound import SoundDA

sys.path.insert(0, "benchmarks")
from sound_dev import DEV, load  # noqa: E402

REPORT = [("decaf6", "dslr", "webcam"), ("decaf6", "webcam", "dslr")] + \
         [("bow5000", s, t) for s, t in [("kitchen", "dvd"), ("dvd", "books"), ("books", "electronics"), ("electronics", "kitchen")]]
FEATURE_TYPE = {"surf": "counts", "bow5000": "counts", "heart": "table"}


def nonprivate_source_only(Xs, ys, Xtest, ytest, log1p: bool) -> float:
    """Logistic regression on the public row map (log1p for counts, ℓ2) with C by 3-fold CV on the source."""
    from sklearn.linear_model import LogisticRegressionCV

    from dpadapt.classstats.adapt import row_map

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegressionCV(Cs=[0.01, 0.1, 1, 10, 100], cv=3, max_iter=2000).fit(row_map(Xs, log1p), ys)
    return float(lr.score(row_map(Xtest, log1p), ytest))


def run(out_path: str, which: str, seeds: int, only: str = "") -> None:
    pairs = DEV if which == "dev" else REPORT
    pairs = [q for q in pairs if not only or any(o in ":".join(q) for o in only.split("|"))]
    with open(out_path, "a") as out:
        for ds, s, t in pairs:
            p = load(ds, s, t)
            ft = FEATURE_TYPE.get(ds, "dense")
            classes = tuple(np.unique(p.ys).tolist())
            n = len(p.ys)
            delta = 1.0 / (1.2 * n) if ds == "decaf6" else None
            epsilons = (None, 1.0, 2.0, 4.0, 8.0) + ((20.0,) if ds == "decaf6" else ())
            ytest = np.asarray(p.yt_test)
            lr = nonprivate_source_only(p.Xs, p.ys, p.Xt_test, ytest, ft == "counts")
            for eps in epsilons:
                for seed in range(seeds if eps is not None else 1):  # ε = None: no noise, one run
                    t0 = time.time()
                    kw = dict(epsilon=eps, delta=delta if eps is not None else None, classes=classes, random_state=seed)
                    row = {"pair": f"{ds}:{s}->{t}", "eps": eps, "seed": seed, "lr_cv": lr}
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est = SoundDA(feature_type=ft, **kw).fit_domains(p.Xs, p.ys, p.Xt)
                    row["sound"] = float(np.mean(est.predict(p.Xt_test) == ytest))
                    row["refined"] = bool(getattr(est.model_, "refined", False))
                    row["design"] = est.design_
                    base = {"feature_type": "counts" if ft == "counts" else "dense"}
                    row["ncm"] = DPNearestClassMean(**base, **kw).fit_domains(p.Xs, p.ys).score(p.Xt_test, ytest)
                    row["dplr"] = DPLogisticRegression(**base, **kw).fit_domains(p.Xs, p.ys).score(p.Xt_test, ytest)
                    row["secs"] = round(time.time() - t0, 1)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(row["pair"], eps, seed, row["secs"], flush=True)


def table(path: str) -> None:
    rows = [json.loads(line) for line in open(path)]
    pairs = list(dict.fromkeys(r["pair"] for r in rows))
    print("| pair | ε | sound (default) | DP-NCM | DP-LR | non-private source-only (LR, CV) | sound − best DP | refined |")
    print("|---|---|---|---|---|---|---|---|")
    for pair in pairs:
        for eps in sorted({r["eps"] for r in rows if r["pair"] == pair}, key=lambda e: (e is None, e or 0)):
            cell = [r for r in rows if r["pair"] == pair and r["eps"] == eps]
            m = {k: 100 * np.array([r[k] for r in cell]) for k in ("sound", "ncm", "dplr", "lr_cv")}
            gap = m["sound"].mean() - max(m["ncm"].mean(), m["dplr"].mean())
            flag = " !" if eps is not None and gap < -1.0 else ""
            ref = sum(r["refined"] for r in cell)
            print(f"| {pair} | {eps if eps is not None else 'None'} | " + " | ".join(f"{m[k].mean():.1f} ± {m[k].std():.1f}" for k in ("sound", "ncm", "dplr"))
                  + f" | {m['lr_cv'].mean():.1f} | {gap:+.1f}{flag} | {ref}/{len(cell)} |")


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        table(sys.argv[2])
    else:
        run(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 5, sys.argv[4] if len(sys.argv) > 4 else "")
