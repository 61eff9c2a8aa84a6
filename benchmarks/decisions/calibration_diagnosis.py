"""Where SoundDA's target calibration is lost (issue 36): one row per (pair, ε, seed, model, temperature, prior).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/decisions/calibration_diagnosis.py --epsilon none 1 --seeds 2 \\
        --out benchmarks/decisions/results/calibration-diagnosis.csv

For the 12 PhysioNet unit pairs: SoundDA's probabilities (the default fit) with the stated temperature and
without it, and the second release's Platt model (``score_share`` 0.2), each put at four priors — the source
prior the model carries (no shift), the estimated target prior (the default ``mean``, and EM), and the TRUE
target rate (an oracle, for diagnosis only) — scored on the target rows (labels for scoring only): calibration
slope, ECE, mean p − rate. Beside them, non-private source-only logistic regression (no shift). The table
(written beside ``--out`` as ``.md``) counts the pairs calibrated in the issue's sense (seed-mean slope in [0.7, 1.4], ECE ≤ 0.05).
"""

from __future__ import annotations

import argparse
import csv
import warnings
from pathlib import Path

import numpy as np

from dpadapt import prevalence as prev
from dpadapt.bench.suites import decisions as D
from dpadapt.bench.suites.sound_rows import PHYSIONET_PAIRS, ROWS, Problem
from dpadapt.metrics import calibration_line, expected_calibration_error

from prior_shift_rule import append_rows


def _metrics(y, p):
    slope, _ = calibration_line(y, p)
    return {"slope": slope, "ece": expected_calibration_error(y, p), "bias": float(p.mean() - y.mean())}


def _priors(P, src, y):
    out = {"source": src, "true": np.array([1 - y.mean(), y.mean()])}
    for m in ("mean", "em"):
        out[m] = prev.point(P, src, m)
    return out


def run_one(spec, eps, seed):
    pair = spec.load()
    y = np.asarray(pair.yt_test)
    delta = None if eps is None else spec.delta(len(pair.ys))
    problem = Problem(spec, pair.Xs, pair.ys, pair.Xt, (0, 1), eps, delta, seed)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sound = ROWS["sound"].fit(problem)
        scored = D._sound_scores(problem)
        lr = ROWS["source-only"].fit(problem) if eps is None else None
    inner = sound.model_
    base = {"pair": spec.task, "eps": "none" if eps is None else eps, "seed": seed, "design": inner.post,
            "t": float(inner.details.get("temperature", 1.0)), "true_rate": float(y.mean())}
    for cal, (P, src) in D.source_probabilities(sound, pair.Xt_test).items():
        for pname, pi in _priors(P, src, y).items():
            rows.append({**base, "model": "sound", "cal": cal, "prior": pname, "prior_pos": float(pi[1]),
                         "src_pos": float(src[1]), **_metrics(y, prev.shift(P, src, pi)[:, 1])})
    for cal, (P, src) in D.source_probabilities(sound, pair.Xs).items():  # in-sample, on the source rows
        rows.append({**base, "model": "sound", "cal": cal, "prior": "on source rows", "prior_pos": float(src[1]),
                     "src_pos": float(src[1]), **_metrics(np.asarray(pair.ys), P[:, 1])})
    # the same default fitted on a random half of the source rows, scored on the other half (out of sample, no shift)
    rng = np.random.default_rng([36, seed])
    half = rng.permutation(len(pair.ys))
    fit, held = half[: len(half) // 2], half[len(half) // 2:]
    ys = np.asarray(pair.ys)
    hp = Problem(spec, pair.Xs[fit], ys[fit], pair.Xt, (0, 1), eps, delta, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        half_model = ROWS["sound"].fit(hp)
        half_lr = ROWS["source-only"].fit(hp) if eps is None else None
    for cal, (P, src) in D.source_probabilities(half_model, pair.Xs[held]).items():
        rows.append({**base, "model": "sound (half source)", "cal": cal, "prior": "held-out source rows",
                     "prior_pos": float(src[1]), "src_pos": float(src[1]), **_metrics(ys[held], P[:, 1])})
    for cal, (P, src) in D.source_probabilities(half_model, pair.Xt_test).items():
        rows.append({**base, "model": "sound (half source)", "cal": cal, "prior": "source",
                     "prior_pos": float(src[1]), "src_pos": float(src[1]), **_metrics(y, P[:, 1])})
    if half_lr is not None:
        rows.append({**base, "model": "source-only LR (half source)", "cal": "none", "prior": "held-out source rows",
                     "prior_pos": float(ys[fit].mean()), "src_pos": float(ys[fit].mean()),
                     **_metrics(ys[held], np.asarray(half_lr.predict_proba(pair.Xs[held]))[:, 1])})
    # the second release's Platt model: posteriors at the prior its histograms imply
    from dpadapt.sound import scores
    rels = scored.releases_
    req = scores.ScoreRequest.from_release(next(r for r in rels if r.kind == scores.REQUEST_KIND), pair.Xt_test.shape[1])
    H = scores.combine(req, rels)
    Z = req.model().row_map()(pair.Xt_test)
    W, b, src, _ = scores.calibrate(req, H.counts, Z, np.asarray(scored.model_.details["statistics_source_prior"]),
                                    calibration="platt", sigma=H.sigma)
    P = scores.posteriors(W, b, Z)
    src = prev.normalised(src)
    for pname, pi in _priors(P, src, y).items():
        rows.append({**base, "model": "platt", "cal": "platt", "prior": pname, "prior_pos": float(pi[1]),
                     "src_pos": float(src[1]), **_metrics(y, prev.shift(P, src, pi)[:, 1])})
    if lr is not None:
        p = np.asarray(lr.predict_proba(pair.Xt_test))[:, 1]
        rows.append({**base, "model": "source-only LR", "cal": "none", "prior": "source", "prior_pos": float(pair.ys.mean()),
                     "src_pos": float(pair.ys.mean()), **_metrics(y, p)})
        p = np.asarray(lr.predict_proba(pair.Xs))[:, 1]
        rows.append({**base, "model": "source-only LR", "cal": "none", "prior": "on source rows",
                     "prior_pos": float(pair.ys.mean()), "src_pos": float(pair.ys.mean()), **_metrics(np.asarray(pair.ys), p)})
    return rows


def table(rows) -> str:
    import pandas as pd

    df = pd.DataFrame(rows)
    g = df.groupby(["eps", "model", "cal", "prior", "pair"])[["slope", "ece", "bias"]].mean().reset_index()
    g["ok"] = (g.slope.between(0.7, 1.4)) & (g.ece <= 0.05)
    s = g.groupby(["eps", "model", "cal", "prior"]).agg(
        pairs=("pair", "size"), calibrated=("ok", "sum"), slope=("slope", "mean"), ece=("ece", "mean"),
        max_abs_bias=("bias", lambda b: float(np.max(np.abs(b))))).reset_index()
    lines = ["| ε | model | temperature / calibration | prior | calibrated pairs | mean slope | mean ECE | max abs(mean p − rate) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in s.itertuples():
        lines.append(f"| {r.eps} | {r.model} | {r.cal} | {r.prior} | {r.calibrated}/{r.pairs} | {r.slope:.2f} | "
                     f"{r.ece:.3f} | {r.max_abs_bias:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--epsilon", nargs="+", default=["none", "1"])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = Path(args.out)
    rows = list(csv.DictReader(out.open())) if out.exists() else []
    done = {(r["pair"], r["eps"], int(r["seed"])) for r in rows}
    for r in rows:
        for k in ("slope", "ece", "bias"):
            r[k] = float(r[k])
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        for e in args.epsilon:
            eps = None if e.lower() == "none" else float(e)
            for spec in (p for p in PHYSIONET_PAIRS if p.available()):
                key = (spec.task, "none" if eps is None else str(eps), seed)
                if key in done:
                    continue
                new = run_one(spec, eps, seed)
                rows += new
                append_rows(out, new)
                print(spec.task, e, seed, flush=True)
    text = table(rows)
    out.with_suffix(".md").write_text(f"# Where SoundDA loses its target calibration (12 PhysioNet pairs)\n\nSeed-mean per pair; "
                                      f"calibrated = slope in [0.7, 1.4] and ECE ≤ 0.05. Written by `{Path(__file__).name}`.\n\n{text}\n")
    print(text)


if __name__ == "__main__":
    main()
