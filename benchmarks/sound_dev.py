"""Issue 23, stage 1 on the DEVELOPMENT pairs only: the SSP design's space, k and ridge vs DP baselines.

One line of JSON per (pair, ε, seed): accuracy of DP-NCM, DP-LR (the existing baselines at the same
(ε, δ = 1/(10 n))), today's class-statistics design (k = 20, ot) and the SSP design for every working
space × ridge constant (all ridges are post-processing of ONE release per space), plus, for every
space, the guarded refinement's accuracy and agreement at the reference ridge. Usage:
``python benchmarks/sound_dev.py OUT.jsonl [seeds] [pair-filter]``; fresh noise on every run.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from dpadapt.bench.common import cached_pair
from dpadapt.classstats import ClassStatsDA, DPLogisticRegression, DPNearestClassMean, label_indices
from dpadapt.classstats.adapt import fit_basis
from dpadapt.privacy.families.sound import class_moments_plan
from dpadapt.privacy.mechanisms import class_moment_statistics, random_streams
from dpadapt.sound.guard import refine_lda
from dpadapt.sound.spaces import mapped_rows, to_space
from dpadapt.sound.ssp import lda_from_moments, ridge

DEV = [("googlenet1024", s, t) for s, t in [("amazon", "dslr"), ("amazon", "webcam"), ("dslr", "amazon"), ("webcam", "amazon")]] + \
      [("surf", s, t) for s, t in [("amazon", "caltech"), ("caltech", "amazon"), ("amazon", "dslr"), ("caltech", "webcam")]] + \
      [("bow5000", s, t) for s, t in [("kitchen", "books"), ("dvd", "electronics"), ("books", "kitchen"), ("electronics", "dvd")]]
COUNTS = {"surf", "bow5000"}
SCALES, FLOORS = (0.25, 0.5, 1.0, 2.0, 4.0), (1e-3, 1e-2, 1e-1)
EPSILONS = (None, 1.0, 2.0, 4.0, 8.0)


def spaces(d: int):
    out = [("features", 0)] if d <= 1100 else []
    return out + [("pca", k) for k in (20, 50, 100, 200)] + [("random", k) for k in (100, 200, 400)]


def main(out_path: str, seeds: int = 3, only: str = "") -> None:
    with open(out_path, "a") as out:
        for ds, s, t in DEV:
            if only and only not in f"{ds}:{s}:{t}":
                continue
            p = cached_pair(ds, s, t)
            log1p = ds in COUNTS
            classes = tuple(np.unique(p.ys).tolist())
            idx = label_indices(p.ys, classes)
            Ms, Mt, Mtest = (mapped_rows(X, log1p=log1p, norm="l2") for X in (p.Xs, p.Xt, p.Xt_test))
            ytest = np.asarray(p.yt_test)
            basis = {}
            work = {}
            for sp, k in spaces(Ms.shape[1]):
                kw = {}
                if sp == "pca":
                    kw = dict(zip(("mean", "components"), fit_basis(Mt, k)))
                if sp == "random":
                    kw = {"seed": 7, "k": k}
                work[(sp, k)] = tuple(to_space(M, sp, **kw) for M in (Ms, Mt, Mtest))
            n = Ms.shape[0]
            delta = 1.0 / (10 * n)
            ft = "counts" if log1p else "dense"
            for eps in EPSILONS:
                for seed in range(seeds):
                    t0 = time.time()
                    row = {"pair": f"{ds}:{s}->{t}", "eps": eps, "seed": seed, "n": n, "d": Ms.shape[1], "K": len(classes)}
                    common = dict(epsilon=eps, classes=classes, random_state=seed, feature_type=ft)
                    row["ncm"] = DPNearestClassMean(**common).fit_domains(p.Xs, p.ys).score(p.Xt_test, ytest)
                    row["dplr"] = DPLogisticRegression(**common).fit_domains(p.Xs, p.ys).score(p.Xt_test, ytest)
                    row["classstats"] = ClassStatsDA(**common).fit_domains(p.Xs, p.ys, p.Xt).score(p.Xt_test, ytest)
                    _, noise = random_streams(seed)
                    for (sp, k), (Zs, Zt, Ztest) in work.items():
                        kk = Zs.shape[1]
                        if eps is None:
                            sigma = 0.0
                            S = np.zeros((len(classes), kk)); np.add.at(S, idx, Zs)
                            c, M2 = np.bincount(idx, minlength=len(classes)).astype(float), Zs.T @ Zs
                        else:
                            sigma, _ = class_moments_plan(eps, delta, classes=classes)
                            st = class_moment_statistics(Zs, idx, len(classes), sigma=sigma, relation="replace_one", noise=noise)
                            S, c, M2 = st.sums, st.counts, st.second
                        key = f"ssp:{sp}:{k}"
                        for a in SCALES:
                            for f in FLOORS:
                                W, b = lda_from_moments(S, c, M2, ridge(sigma, n, kk, ridge_scale=a, ridge_floor=f))
                                row[f"{key}:{a}:{f}"] = float(np.mean(np.asarray(classes)[np.argmax(Ztest @ W.T + b, 1)] == ytest))
                                if a == 1.0 and f == 1e-2:
                                    Wr, br = refine_lda(Zt, W, b)
                                    row[f"{key}:ref"] = float(np.mean(np.asarray(classes)[np.argmax(Ztest @ Wr.T + br, 1)] == ytest))
                                    row[f"{key}:agree"] = float(np.mean(np.argmax(Zt @ Wr.T + br, 1) == np.argmax(Zt @ W.T + b, 1)))
                    row["secs"] = round(time.time() - t0, 1)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(row["pair"], eps, seed, row["secs"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3, sys.argv[3] if len(sys.argv) > 3 else "")
