"""Selection of the receiver-side refinement (issue 12, accuracy round) on pairs OTHER than the reported ones.

DPOT setting: the unprotected target's 20-d basis; PRIMA setting: no target basis (the public random
basis of ``basis_dim`` columns, centring as in PRIMA's class-statistics protocol). For every
candidate refinement in ``CANDIDATES``, mean target accuracy over seeds (fresh noise each seed).
Run: PYTHONPATH=src python benchmarks/selection/classstats/classstats_accuracy.py SETTING DATASET EPS[,EPS] SEEDS S:T [S:T ...]
(SETTING dpot|prima; Office letters A, C, D, W or Amazon letters B, D, E, K; CANDIDATES=a,b,… to restrict;
TARGET_PCA=none,20 for PRIMA's target-side PCA options). Prints one JSON line per (pair, ε, candidate).
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

from dpadapt.bench.common import cached_pair
from dpadapt.classstats.adapt import ClassStatsModel, fit_basis, project, prototypes_from_release, refine, row_map
from dpadapt.privacy.families.classstats import class_statistics_plan
from dpadapt.privacy.mechanisms import class_statistics, random_streams

CANDIDATES = tuple(os.environ.get("CANDIDATES", "ot,kmeans,cluster_match,self_training,none+st,ot+st,kmeans+st,cluster_match+st")
                   .split(","))
OFFICE = {"A": "amazon", "C": "caltech", "D": "dslr", "W": "webcam"}
AMAZON = {"B": "books", "D": "dvd", "E": "electronics", "K": "kitchen"}


def domains(ds: str, s: str, t: str) -> tuple[str, str]:
    """Full domain names from letters (Office: A, C, D, W; Amazon: B, D, E, K)."""
    names = AMAZON if "bow" in ds or "msda" in ds or "amazon" in ds else OFFICE
    return names.get(s, s), names.get(t, t)


def dpot_pair(ds, s, t, eps_list, seeds, log1p):
    p = cached_pair(ds, *domains(ds, s, t))
    classes = np.unique(p.ys)
    Mt = row_map(p.Xt, log1p)
    mean, comp = fit_basis(Mt, 20)
    Zt, Zs = project(Mt, mean, comp), project(row_map(p.Xs, log1p), mean, comp)
    delta = 1 / (1.2 * len(p.ys))
    for eps in eps_list:
        sigma, _ = class_statistics_plan(eps, delta, classes=tuple(classes))
        res = {c: [] for c in CANDIDATES}
        for seed in range(seeds):
            _, noise = random_streams(seed)
            st = class_statistics(Zs, np.searchsorted(classes, p.ys), len(classes), sigma=sigma, relation="replace_one", noise=noise)
            c0, pr = prototypes_from_release(st.sums, st.counts)
            for c in CANDIDATES:
                r = refine(Zt, c0, pr, c, F=Mt, random_state=seed)
                W, b = r.scorer if r.scorer is not None else (None, None)
                m = ClassStatsModel(classes, log1p, mean, comp, r.centers, r.head, W, b)
                res[c].append(100 * m.score(p.Xt_test, p.yt_test))
        for c, v in res.items():
            print(json.dumps({"setting": "dpot", "dataset": ds, "pair": f"{s}->{t}", "epsilon": eps, "refinement": c,
                              "mean": float(np.mean(v)), "std": float(np.std(v)), "runs": v}), flush=True)


def prima_pair(ds, s, t, eps_list, seeds):
    from dpadapt.alignment import PRIMA

    p = cached_pair(ds, *domains(ds, s, t))
    bow = "bow" in ds
    pcas = [None if v == "none" else int(v) for v in os.environ.get("TARGET_PCA", "none").split(",")]
    for eps in eps_list:
        res = {(c, k): [] for c in CANDIDATES for k in pcas}
        for seed in range(seeds):
            base = dict(epsilon=eps, delta=1e-5, classes=tuple(np.unique(p.ys).tolist()), random_state=seed,
                        log_counts=bow, basis_dim=None if bow else 1024)
            for c, k in res:
                est = PRIMA(refinement=c, target_pca=k, **base)
                est.fit_domains(p.Xs, p.ys, p.Xt)
                res[c, k].append(100 * est.score(p.Xt_test, p.yt_test))
        for (c, k), v in res.items():
            print(json.dumps({"setting": "prima", "dataset": ds, "pair": f"{s}->{t}", "epsilon": eps, "refinement": c,
                              "target_pca": k, "mean": float(np.mean(v)), "std": float(np.std(v)), "runs": v}), flush=True)


def main() -> None:
    setting, ds, eps, seeds, *pairs = sys.argv[1:]
    eps_list = [float(e) for e in eps.split(",")]
    t0 = time.time()
    for pair in pairs:
        s, t = pair.split(":")
        if setting == "dpot":
            dpot_pair(ds, s, t, eps_list, int(seeds), log1p="surf" in ds)
        else:
            prima_pair(ds, s, t, eps_list, int(seeds))
    print(json.dumps({"seconds": time.time() - t0}), flush=True)


if __name__ == "__main__":
    main()
