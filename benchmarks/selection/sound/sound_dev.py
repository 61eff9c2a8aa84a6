"""Issue 23, stage 1 on the DEVELOPMENT pairs only: the SSP design's space, k and ridge vs DP baselines.

One line of JSON per (pair, ε, seed): accuracy of DP-NCM, DP-LR (the existing baselines at the same
(ε, δ = 1/(10 n))) and the SSP design for every working
space × ridge constant (all ridges are post-processing of ONE release per space), plus, for every
space, the guarded refinement's accuracy and agreement at the reference ridge. Usage:
``python benchmarks/selection/sound/sound_dev.py OUT.jsonl [seeds] [pair-filter]``; fresh noise on every run.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from dpadapt.bench.common import cached_pair
from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean, label_indices
from dpadapt.classstats.adapt import fit_basis
from dpadapt.privacy.families.sound import class_moments_plan
from dpadapt.privacy.mechanisms import class_moment_statistics, random_streams
from dpadapt.sound.guard import refine_lda
from dpadapt.sound.spaces import mapped_rows, to_space
from dpadapt.sound.ssp import lda_from_spectrum, ridge, within_spectrum

DEV = [("googlenet1024", s, t) for s, t in [("amazon", "dslr"), ("amazon", "webcam"), ("dslr", "amazon"), ("webcam", "amazon")]] + \
      [("surf", s, t) for s, t in [("amazon", "caltech"), ("caltech", "amazon"), ("amazon", "dslr"), ("caltech", "webcam")]] + \
      [("bow5000", s, t) for s, t in [("kitchen", "books"), ("dvd", "electronics"), ("books", "kitchen"), ("electronics", "dvd")]]
DEV += [("heart", "cleveland", "hungarian"), ("heart", "hungarian", "cleveland")]
COUNTS = {"surf", "bow5000"}
HEART = "/work/shared/data/uci_heart_disease/raw/processed.{}.data"


def load(ds: str, s: str, t: str):
    """A dev pair; the heart tables through the declared public schema (examples/heart.schema.toml)."""
    if ds != "heart":
        return cached_pair(ds, s, t)
    from types import SimpleNamespace

    from dpadapt.tables import load_schema, read_table

    schema = load_schema("examples/heart.schema.toml")
    a, b = read_table(HEART.format(s), schema), read_table(HEART.format(t), schema)
    return SimpleNamespace(Xs=a.X, ys=a.y, Xt=b.X, Xt_test=b.X, yt_test=b.y)
SCALES, FLOORS = (0.5, 1.0, 2.0, 4.0), (1e-3, 1e-2, 1e-1)
EPSILONS = (None, 1.0, 2.0, 4.0, 8.0)


def spaces(ds: str, d: int):
    if ds == "heart":
        return [("features", 0, "box"), ("features", 0, "l2")]
    out = [("features", 0, "l2")] if d <= 1100 else []
    return out + [("pca", k, "l2") for k in (20, 50, 100)] + [("random", 200, "l2")]


def main(out_path: str, seeds: int = 3, only: str = "") -> None:
    with open(out_path, "a") as out:
        for ds, s, t in DEV:
            if only and not any(o in f"{ds}:{s}:{t}" for o in only.split("|")):
                continue
            p = load(ds, s, t)
            log1p = ds in COUNTS
            classes = tuple(np.unique(p.ys).tolist())
            idx = label_indices(p.ys, classes)
            maps = {nm: tuple(mapped_rows(X, log1p=log1p, norm=nm) for X in (p.Xs, p.Xt, p.Xt_test))
                    for nm in (("box", "l2") if ds == "heart" else ("l2",))}
            Ms = maps["l2"][0]
            ytest = np.asarray(p.yt_test)
            basis = {}
            work = {}
            full = fit_basis(maps["l2"][1], 100)  # one SVD; the top-k columns are the k-basis
            for sp, k, nm in spaces(ds, Ms.shape[1]):
                Ms, Mt, Mtest = maps[nm]
                kw = {}
                if sp == "pca":
                    kw = {"mean": full[0], "components": full[1][:, :k]}
                if sp == "random":
                    kw = {"seed": 7, "k": k}
                work[(sp, k, nm)] = tuple(to_space(M, sp, **kw) for M in (Ms, Mt, Mtest))
            n = Ms.shape[0]
            from sklearn.linear_model import LogisticRegressionCV
            lr = LogisticRegressionCV(Cs=[0.01, 0.1, 1, 10, 100], cv=3, max_iter=2000).fit(maps["l2"][0], p.ys)
            nonpriv = float(lr.score(maps["l2"][2], ytest))
            if ds == "heart":
                nonpriv_box = float(LogisticRegressionCV(Cs=[0.01, 0.1, 1, 10, 100], cv=3, max_iter=2000).fit(p.Xs, p.ys).score(p.Xt_test, ytest))
            delta = 1.0 / (10 * n)
            ft = "counts" if log1p else "dense"
            for eps in EPSILONS:
                for seed in range(seeds):
                    t0 = time.time()
                    row = {"pair": f"{ds}:{s}->{t}", "eps": eps, "seed": seed, "n": n, "d": Ms.shape[1], "K": len(classes), "lr_cv": nonpriv}
                    if ds == "heart":
                        row["lr_cv_schema"] = nonpriv_box
                    common = dict(epsilon=eps, classes=classes, random_state=seed, feature_type=ft)
                    row["ncm"] = DPNearestClassMean(**common).fit_domains(p.Xs, p.ys).score(p.Xt_test, ytest)
                    row["dplr"] = DPLogisticRegression(**common).fit_domains(p.Xs, p.ys).score(p.Xt_test, ytest)
                    _, noise = random_streams(seed)
                    for (sp, k, nm), (Zs, Zt, Ztest) in work.items():
                        kk = Zs.shape[1]
                        if eps is None:
                            sigma = 0.0
                            S = np.zeros((len(classes), kk)); np.add.at(S, idx, Zs)
                            c, M2 = np.bincount(idx, minlength=len(classes)).astype(float), Zs.T @ Zs
                        else:
                            sigma, _ = class_moments_plan(eps, delta, classes=classes)
                            st = class_moment_statistics(Zs, idx, len(classes), sigma=sigma, relation="replace_one", noise=noise)
                            S, c, M2 = st.sums, st.counts, st.second
                        key = f"ssp:{sp}{'-box' if nm == 'box' else ''}:{k}"
                        spec = within_spectrum(S, c, M2)
                        for a in SCALES:
                            for f in FLOORS:
                                W, b = lda_from_spectrum(*spec, ridge(sigma, n, kk, ridge_scale=a, ridge_floor=f))
                                row[f"{key}:{a}:{f}"] = float(np.mean(np.asarray(classes)[np.argmax(Ztest @ W.T + b, 1)] == ytest))
                                if a == SCALES[0] and f == FLOORS[0]:
                                    P = S / np.linalg.norm(S, axis=1, keepdims=True)
                                    row[f"{key}:ncm"] = float(np.mean(np.asarray(classes)[np.argmax(Ztest @ P.T, 1)] == ytest))
                                if a == 1.0 and f == 1e-2 and sp != "random":
                                    Wr, br = refine_lda(Zt, W, b)
                                    row[f"{key}:ref"] = float(np.mean(np.asarray(classes)[np.argmax(Ztest @ Wr.T + br, 1)] == ytest))
                                    row[f"{key}:agree"] = float(np.mean(np.argmax(Zt @ Wr.T + br, 1) == np.argmax(Zt @ W.T + b, 1)))
                    row["secs"] = round(time.time() - t0, 1)
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(row["pair"], eps, seed, row["secs"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3, sys.argv[3] if len(sys.argv) > 3 else "")
