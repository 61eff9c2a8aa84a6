"""Calibration of K > 2 classes from the second release (``dpadapt.sound.scores``, layout ``class-confidence``): target
ECE, NLL and accuracy before and after, the target's prevalence by each estimator, on the cases named in
``benchmarks/decisions/README.md`` (section "K > 2"). Measurement only: no constant is chosen from it.

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/decisions/multiclass.py --cases synthetic3 synthetic4 \\
        --epsilon 1 4 --seeds 3 --out benchmarks/decisions/results/multiclass.jsonl

One JSON line per (case, ε, seed), appended (a line already in ``--out`` is not run again); ``--table`` writes the
Markdown table of a results file.
"""

from __future__ import annotations

import argparse
import json
import math
import warnings
from pathlib import Path

import numpy as np

from dpadapt import prevalence as prev
from dpadapt.sound import SoundDA, scores

SCORE_SHARE = 0.2  # fixed before the run, as in the binary task `sound-scores`
DELTA = 1e-5
N_BOOT = 100
ECE_BINS = 15
#: Synthetic cases: K unit-variance Gaussian classes (means 1.6·e_k in 8 dimensions), a known prior shift.
SYNTHETIC = {"synthetic3": ([0.6, 0.3, 0.1], [0.2, 0.3, 0.5], 1500, 1000),
             "synthetic4": ([0.4, 0.3, 0.2, 0.1], [0.1, 0.2, 0.3, 0.4], 1500, 1000)}
#: Office-Caltech development pairs (GoogLeNet1024 holds amazon, dslr, webcam; DeCAF6 holds only dslr and webcam).
OFFICE = {"googlenet1024:A->D": ("googlenet1024", "A", "D"), "googlenet1024:D->A": ("googlenet1024", "D", "A")}


def synthetic(name: str, seed: int):
    ps, pt, ns, nt = SYNTHETIC[name]
    K, d = len(ps), 8
    rng = np.random.default_rng(1000 + seed)
    M = np.zeros((K, d))
    M[np.arange(K), np.arange(K)] = 1.6

    def draw(n, pi):
        y = rng.choice(K, n, p=pi)
        return rng.normal(size=(n, d)) + M[y], y

    return (*draw(ns, ps), *draw(nt, pt))


def office(name: str):
    from dpadapt.datasets.loaders import load_domain

    data, s, t = OFFICE[name]
    a, b = load_domain(data, s), load_domain(data, t)
    return a.X.astype(np.float64), a.y, b.X.astype(np.float64), b.y


def ece(P: np.ndarray, y: np.ndarray) -> float:
    """Top-label expected calibration error, 15 equal-width bins."""
    conf, pred = P.max(axis=1), P.argmax(axis=1)
    idx = np.minimum((conf * ECE_BINS).astype(int), ECE_BINS - 1)
    return float(sum(abs(conf[idx == b].mean() - np.mean(pred[idx == b] == y[idx == b])) * np.mean(idx == b)
                     for b in range(ECE_BINS) if (idx == b).any()))


def nll(P: np.ndarray, y: np.ndarray) -> float:
    return float(-np.mean(np.log(np.clip(P[np.arange(y.size), y], 1e-12, 1.0))))


def metrics(P: np.ndarray, y: np.ndarray) -> dict:
    return {"ece": ece(P, y), "nll": nll(P, y), "acc": float(np.mean(P.argmax(axis=1) == y))}


def run(case: str, eps: float, seed: int) -> dict:
    Xs, ys, Xt, yt = synthetic(case, seed) if case in SYNTHETIC else office(case)
    K = int(max(ys.max(), yt.max())) + 1
    classes = tuple(range(K))
    true = np.bincount(yt, minlength=K) / yt.size
    common = {"epsilon": eps, "delta": DELTA, "classes": classes, "random_state": seed}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = SoundDA(**common).fit_domains(Xs, ys, Xt)  # the whole ε on the first release, no second one
        est = SoundDA(**common, score_share=SCORE_SHARE).fit_domains(Xs, ys, Xt)
    req = scores.ScoreRequest.from_release(next(r for r in est.releases_ if r.kind == scores.REQUEST_KIND), Xt.shape[1])
    H = scores.combine(req, est.releases_)
    Z = req.model().row_map()(Xt)
    first_prior = np.asarray(est.model_.details["statistics_source_prior"])
    # before: the same first release's model, at the target prior of the default estimator without a second release
    P_req = scores.posteriors(req.W, req.b, Z)
    before = prev.shift(P_req, first_prior, prev.estimate(P_req, first_prior, method="mean", n_boot=0).prior)
    before_em = prev.shift(P_req, first_prior, prev.estimate(P_req, first_prior, method="em", n_boot=0).prior)
    out = {"case": case, "epsilon": eps, "seed": seed, "K": K, "cells": req.num_bins * K, "sigma": H.sigma,
           "true_prior": true.tolist(), "full_budget": metrics(full.predict_proba(Xt), yt), "before": metrics(before, yt),
           "before_em": metrics(before_em, yt),
           "before_at_source_prior": metrics(P_req, yt), "fitted_temperature": None, "after": {}}
    for method in scores.PREVALENCES:
        W, b, prior, cal, pr = scores.estimate(req, H, Z, req.bins(Xt), first_prior, method=method, n_boot=N_BOOT)
        P = scores.posteriors(W, b, Z)
        out["fitted_temperature"] = cal.get("fitted_temperature")
        out["after_at_source_prior"] = metrics(P, yt)
        pi, lo, hi = (np.asarray(pr[k]) for k in ("prior", "low", "high"))
        out["after"][method] = {**metrics(prev.shift(P, prior, pi), yt), "prevalence_mae": float(np.mean(np.abs(pi - true))),
                                "covered": float(np.mean((lo <= true) & (true <= hi)))}
    return out


def table(path: Path) -> str:
    """Mean ± SE per (case, ε): "before" is the same first release's model, "after" the calibrated one, each at the
    target prior of the named estimator (``em``: the K > 2 default; ``mean``: the binary one); applied = the share of
    runs whose temperature was applied."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["case"], r["epsilon"]), []).append(r)

    def m(rs, get):
        v = np.array([get(r) for r in rs], dtype=float)
        return f"{v.mean():.3f}" if v.size < 2 else f"{v.mean():.3f} ± {v.std(ddof=1) / math.sqrt(v.size):.3f}"

    def arrow(rs, before: str, after: str, key: str) -> str:
        return f"{m(rs, lambda r: r[before][key])} → {m(rs, lambda r: r['after'][after][key])}"

    em = all("before_em" in r for r in rows)
    lines = ["| case (K, cells) | ε | seeds | applied | ECE (mean) | " + ("ECE (em) | NLL (em) | acc. (em) | " if em else "")
             + "acc. at the source prior | ECE full ε, no 2nd release | prevalence MAE mean / match / match-ls / em | "
             "90 % coverage em / match |", "|" + "---|" * (12 if em else 9)]
    for (case, eps), rs in sorted(groups.items()):
        applied = sum(r["after_at_source_prior"] != r["before_at_source_prior"] or r["after"]["mean"]["ece"] != r["before"]["ece"]
                      for r in rs)
        cells = [f"{case} ({rs[0]['K']}, {rs[0]['cells']})", f"{eps:g}", str(len(rs)), f"{applied}/{len(rs)}",
                 arrow(rs, "before", "mean", "ece")]
        if em:
            cells += [arrow(rs, "before_em", "em", key) for key in ("ece", "nll", "acc")]
        cells += [f"{m(rs, lambda r: r['before_at_source_prior']['acc'])} → {m(rs, lambda r: r['after_at_source_prior']['acc'])}",
                  m(rs, lambda r: r["full_budget"]["ece"]),
                  " / ".join(m(rs, lambda r, k=k: r["after"][k]["prevalence_mae"]) for k in ("mean", "match", "match-ls", "em")),
                  " / ".join(m(rs, lambda r, k=k: r["after"][k]["covered"]) for k in ("em", "match"))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def choose_prevalence(path: Path) -> tuple[str, str]:
    """The rule of ``README.md`` ("Rule for the K > 2 prevalence default"): the lowest mean absolute error over the
    (case, ε) cells, each weighted equally; tie (within 0.005) → the higher coverage; tie → ``mean``. Returns (choice,
    a Markdown table of every candidate)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cells = sorted({(r["case"], r["epsilon"]) for r in rows})

    def score(method: str, key: str) -> float:
        return float(np.mean([np.mean([r["after"][method][key] for r in rows if (r["case"], r["epsilon"]) == c])
                              for c in cells]))

    stats = {m: (score(m, "prevalence_mae"), score(m, "covered")) for m in scores.PREVALENCES}
    best = min(v[0] for v in stats.values())
    tied = [m for m in scores.PREVALENCES if stats[m][0] <= best + 0.005]
    top = max(stats[m][1] for m in tied)
    tied = [m for m in tied if stats[m][1] >= top]
    choice = "mean" if "mean" in tied else tied[0]
    lines = ["| estimator | mean absolute error | 90 % coverage |", "|---|---|---|"]
    lines += [f"| {m}{' (chosen)' if m == choice else ''} | {stats[m][0]:.4f} | {stats[m][1]:.3f} |" for m in scores.PREVALENCES]
    return choice, "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", nargs="+", default=[*SYNTHETIC, *OFFICE])
    ap.add_argument("--epsilon", nargs="+", type=float, default=[1.0, 4.0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed … first-seed + seeds − 1")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/decisions/results/multiclass.jsonl"))
    ap.add_argument("--table", action="store_true", help="only write the table of --out (beside it, .md)")
    ap.add_argument("--choose", action="store_true", help="also apply the K > 2 prevalence rule to --out (printed)")
    args = ap.parse_args(argv)
    if not args.table:
        done = set()
        if args.out.exists():
            done = {(r["case"], r["epsilon"], r["seed"]) for r in map(json.loads, args.out.read_text().splitlines())}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for case in args.cases:
                for eps in args.epsilon:
                    if (case, eps, seed) in done:
                        continue
                    row = run(case, eps, seed)
                    with args.out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(case, eps, seed, row["before"], row["after"]["mean"], flush=True)
    text = table(args.out)
    if args.choose:
        choice, ranking = choose_prevalence(args.out)
        text += f"\nK > 2 prevalence rule: {choice}\n\n{ranking}"
        print(ranking + f"chosen: {choice}")
    args.out.with_suffix(".md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
