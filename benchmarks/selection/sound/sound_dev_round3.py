"""Issue 23, selection round 3, on the DEVELOPMENT pairs only (plan: ``sound_selection_rule.md``, "Round 3").

One line of JSON per (pair, ε, seed), 3 seeds with fresh noise (ε = None: one run, it is deterministic):
- the baselines at their CURRENT defaults: DP-NCM and DP-LR at the same (ε, δ = 1/(10 n)) (``ncm``,
  ``dplr``), non-private logistic regression with C by 3-fold CV on the source (``lr_cv``);
- the portfolio designs: ``design:classstats`` (ClassStatsDA's own defaults), ``design:ncm`` and
  ``design:dplr`` (the ``ncm`` / ``dplr`` columns: the same estimators the routes call);
- the SSP design, ONE release per working space (round 2's spaces; at ε = None also the ``features``
  space for any d ≤ 8192), every receiver classifier of that release: ``ncm``, ``lda`` and ``ridge``
  over the ridge grid (a, f), and the guarded refinement's accuracy and agreement at the reference
  ridge (lda, a = 1, f = 0.01) as in round 2.

The SSP releases draw fresh noise from numpy's Gaussian (a fresh entropy seed), not OpenDP's
floating-point-safe sampler: the same distribution, without the sampler's cost (~250 s per 10⁶ draws
here, 0.5 M draws per 1024-d release) — the selection needs the accuracy, not the release's safety.

Keys: ``ssp:SPACE:K:ncm``, ``ssp:SPACE:K:A:F`` (lda, as rounds 1–2), ``ssp:SPACE:K:ridge:A:F``.
Usage: ``python benchmarks/selection/sound/sound_dev_round3.py OUT.jsonl [seeds] [pair-filter]``; ``--explore`` in
place of OUT runs only ε = None of the dense and counts pairs and prints the best candidates per pair.
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np
from sklearn.linear_model import LogisticRegressionCV

from dpadapt import classstats
from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean, label_indices
from dpadapt.classstats.adapt import fit_basis
from dpadapt.privacy.families.sound import class_moments_plan
from dpadapt.privacy.mechanisms import class_moment_statistics, random_streams
from dpadapt.sound.guard import refine_lda
from dpadapt.sound.rule import MAX_FEATURES_SPACE, MAX_FEATURES_SPACE_NOISE_FREE
from dpadapt.sound.spaces import mapped_rows, to_space
from dpadapt.sound.ssp import lda_from_spectrum, ridge, ridge_from_spectrum, second_spectrum, within_spectrum

sys.path.insert(0, "benchmarks")
from sound_dev import COUNTS, DEV, EPSILONS, load  # noqa: E402

SCALES = (0.5, 1.0, 2.0, 4.0)
FLOORS = (1e-3, 1e-2, 1e-1, 0.3, 1.0, 3.0, 10.0)


def spaces(ds: str, d: int, n_target: int, eps: float | None):
    if ds == "heart":
        return [("features", 0, "box"), ("features", 0, "l2")]
    limit = MAX_FEATURES_SPACE_NOISE_FREE if eps is None else MAX_FEATURES_SPACE
    out = [("features", 0, "l2")] if d <= limit else []
    return out + [("pca", k, "l2") for k in (20, 50, 100, 200) if k < n_target] + [("random", 200, "l2")]


def _acc(classes, scores, y) -> float:
    return float(np.mean(classes[np.argmax(scores, 1)] == y))


def ssp_columns(key: str, Zs, Zt, Ztest, idx, classes, ytest, eps, delta, noise) -> dict:
    """Every receiver classifier of ONE release of the class moments of ``Zs`` (fresh noise)."""
    n, k = Zs.shape
    if eps is None:
        sigma = 0.0
        S = np.zeros((len(classes), k))
        np.add.at(S, idx, Zs)
        c, M2 = np.bincount(idx, minlength=len(classes)).astype(float), np.asarray(Zs.T @ Zs)
    else:
        sigma, _ = class_moments_plan(eps, delta, classes=tuple(classes.tolist()))
        st = class_moment_statistics(Zs, idx, len(classes), sigma=sigma, relation="replace_one", noise=noise)
        S, c, M2 = st.sums, st.counts, st.second
    row = {}
    P = S / np.maximum(np.linalg.norm(S, axis=1, keepdims=True), 1e-300)
    row[f"{key}:ncm"] = _acc(classes, Ztest @ P.T, ytest)
    within, second = within_spectrum(S, c, M2), second_spectrum(M2)
    for a in SCALES:
        for f in FLOORS:
            lam = ridge(sigma, n, k, ridge_scale=a, ridge_floor=f)
            W, b = lda_from_spectrum(*within, lam)
            row[f"{key}:{a}:{f}"] = _acc(classes, Ztest @ W.T + b, ytest)
            Wr, _ = ridge_from_spectrum(S, *second, lam)
            row[f"{key}:ridge:{a}:{f}"] = _acc(classes, Ztest @ Wr.T, ytest)
            if a == 1.0 and f == 1e-2 and not key.startswith("ssp:random"):
                Wf, bf = refine_lda(Zt, W, b)
                row[f"{key}:ref"] = _acc(classes, Ztest @ Wf.T + bf, ytest)
                row[f"{key}:agree"] = float(np.mean(np.argmax(Zt @ Wf.T + bf, 1) == np.argmax(Zt @ W.T + b, 1)))
    return row


def main(out_path: str, seeds: int = 3, only: str = "") -> None:
    explore = out_path == "--explore"
    out = None if explore else open(out_path, "a")
    for ds, s, t in DEV:
        if (only and not any(o in f"{ds}:{s}:{t}" for o in only.split("|"))) or (explore and ds == "heart"):
            continue
        p = load(ds, s, t)
        log1p = ds in COUNTS
        classes = np.asarray(np.unique(p.ys))
        idx = label_indices(p.ys, tuple(classes.tolist()))
        maps = {nm: tuple(mapped_rows(X, log1p=log1p, norm=nm) for X in (p.Xs, p.Xt, p.Xt_test))
                for nm in (("box", "l2") if ds == "heart" else ("l2",))}
        ytest = np.asarray(p.yt_test)
        n, d = maps["l2"][0].shape
        n_target = maps["l2"][1].shape[0]
        full = fit_basis(maps["l2"][1], min(200, n_target - 1, d)) if ds != "heart" else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lr_cv = float(LogisticRegressionCV(Cs=[0.01, 0.1, 1, 10, 100], cv=3, max_iter=2000)
                          .fit(maps["l2"][0], p.ys).score(maps["l2"][2], ytest))
        delta = 1.0 / (10 * n)
        ft = "counts" if log1p else ("table" if ds == "heart" else "dense")
        for eps in (None,) if explore else EPSILONS:
            work = {}
            for sp, k, nm in spaces(ds, d, n_target, eps):
                kw = {"mean": full[0], "components": full[1][:, :k]} if sp == "pca" else ({"seed": 7, "k": k} if sp == "random" else {})
                work[(sp, k, nm)] = tuple(np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z)
                                          for Z in (to_space(M, sp, **kw) for M in maps[nm]))
            for seed in range(1 if eps is None else seeds):
                t0 = time.time()
                row = {"pair": f"{ds}:{s}->{t}", "eps": eps, "seed": seed, "n": n, "d": d, "K": len(classes), "lr_cv": lr_cv}
                common = dict(epsilon=eps, classes=tuple(classes.tolist()), random_state=seed,
                              feature_type="counts" if log1p else "dense")
                if not explore:
                    row["ncm"] = DPNearestClassMean(**common).fit_domains(p.Xs, p.ys).score(p.Xt_test, ytest)
                    row["dplr"] = DPLogisticRegression(**common).fit_domains(p.Xs, p.ys).score(p.Xt_test, ytest)
                    if ds != "heart":
                        cfg = classstats.Config(**common, delta=delta if eps is not None else None)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            row["design:classstats"] = classstats.run_parties(cfg, p.Xs, p.ys, p.Xt)[2].score(p.Xt_test, ytest)
                _, noise = random_streams(int(np.random.SeedSequence().entropy % 2**63), reproducible_noise=True)
                for (sp, k, nm), (Zs, Zt, Ztest) in work.items():
                    key = f"ssp:{sp}{'-box' if nm == 'box' else ''}:{k}"
                    row.update(ssp_columns(key, Zs, Zt, Ztest, idx, classes, ytest, eps, delta, noise))
                row["secs"] = round(time.time() - t0, 1)
                if explore:
                    cands = sorted(((v, k) for k, v in row.items() if k.startswith("ssp:") and not k.endswith((":agree", ":ref"))), reverse=True)
                    print(row["pair"], f"lr_cv {100 * lr_cv:.1f}", " ".join(f"{k}={100 * v:.1f}" for v, k in cands[:5]), flush=True)
                else:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(row["pair"], eps, seed, row["secs"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 3, sys.argv[3] if len(sys.argv) > 3 else "")
