"""The run of the rule "where `predict_proba` puts the probabilities" (``benchmarks/decisions/README.md``).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/decisions/prior_shift_rule.py \\
        --out benchmarks/decisions/results/prior-shift-rule.csv

SoundDA's default fit on every development cell (PhysioNet's 12 pairs, Heart, the synthetic family) at ε ∈ {1, 4, None}
(seeds 30–32; noise-free one), its source-prior posteriors (the stated temperature) and the ``mean`` estimate, then
candidate (a) ``shift`` (by π̂/π_s) and (b) ``consistent`` (unshifted) scored on the target rows (labels for scoring
only). Writes the rows and, beside them (``.md``), the per-family counts and the rule's verdict.
"""

from __future__ import annotations

import argparse
import csv
import warnings
from pathlib import Path

import numpy as np

from dpadapt import prevalence as prev
from dpadapt.bench.suites import decisions as D
from dpadapt.bench.suites.sound_rows import HEART_PAIRS, PHYSIONET_PAIRS, ROWS, Problem
from dpadapt.metrics import calibration_line, expected_calibration_error

CANDIDATES = ("shift", "consistent")


def fit_cell(spec, eps, seed, fit=ROWS["sound"].fit):
    """(the pair, its target test labels, ``fit`` on the cell's problem), warnings silenced."""
    pair = spec.load()
    delta = None if eps is None else spec.delta(len(pair.ys))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pair, np.asarray(pair.yt_test), fit(Problem(spec, pair.Xs, pair.ys, pair.Xt, (0, 1), eps, delta, seed))


def run_one(spec, eps, seed):
    pair, y, model = fit_cell(spec, eps, seed)
    P, src = D.source_probabilities(model, pair.Xt_test)["temperature"]
    pi = prev.point(P, src, "mean")
    out = []
    for cand, Q in (("shift", prev.shift(P, src, pi)), ("consistent", P)):
        p = Q[:, 1]
        slope, _ = calibration_line(y, p)
        _, best_acc = D.best_threshold_scores(y, p)
        out.append({"family": spec.dataset, "pair": spec.task, "eps": "none" if eps is None else eps, "seed": seed,
                    "candidate": cand, "slope": slope, "ece": expected_calibration_error(y, p),
                    "bias": float(p.mean() - y.mean()), "accuracy": float(np.mean((p >= 0.5) == y)),
                    "best_accuracy": best_acc})
    return out


def verdict(rows, candidates=CANDIDATES) -> str:
    """The per-family table and the rule's pick: the most calibrated cells, then the lower mean ECE, then the first
    candidate (today's default)."""
    import pandas as pd

    df = pd.DataFrame(rows)
    for k in ("slope", "ece", "bias", "accuracy", "best_accuracy"):
        df[k] = df[k].astype(float)
    g = df.groupby(["family", "eps", "pair", "candidate"])[["slope", "ece", "bias", "accuracy", "best_accuracy"]].mean()
    g = g.reset_index()
    g["ok"] = g.slope.between(0.7, 1.4) & (g.ece <= 0.05)
    g["gap"] = 100 * (g.best_accuracy - g.accuracy)
    s = g.groupby(["family", "eps", "candidate"]).agg(cells=("pair", "size"), calibrated=("ok", "sum"),
                                                      slope=("slope", "mean"), ece=("ece", "mean"),
                                                      max_bias=("bias", lambda b: float(np.abs(b).max())),
                                                      max_gap=("gap", "max")).reset_index()
    lines = ["| family | ε | candidate | cells | calibrated | mean slope | mean ECE | max abs(mean p − rate) | "
             "best acc − predict acc (max, points) |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.family} | {r.eps} | {r.candidate} | {r.cells} | {r.calibrated} | {r.slope:.2f} | {r.ece:.3f} | "
              f"{r.max_bias:.3f} | {r.max_gap:.1f} |" for r in s.itertuples()]
    tot = g.groupby("candidate").agg(cells=("ok", "size"), calibrated=("ok", "sum"), ece=("ece", "mean"))
    lines += ["", "| candidate | cells | calibrated | mean ECE |", "|---|---|---|---|"]
    lines += [f"| {c} | {r.cells} | {r.calibrated} | {r.ece:.3f} |" for c, r in tot.iterrows()]
    win = min(candidates, key=lambda c: (-tot.loc[c].calibrated, round(float(tot.loc[c].ece), 6), candidates.index(c)))
    return "\n".join(lines) + f"\n\nRule (README): **{win}**.\n"


def append_rows(out: Path, new: list[dict]) -> None:
    """Append one cell's rows to the resumable CSV ``out`` (its header first when the file is new)."""
    with out.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(new[0]))
        if f.tell() == 0:
            w.writeheader()
        w.writerows(new)


def run_cells(out: Path, seeds, run_one, candidates, title: str, extra=None) -> str:
    """Every development cell (one noise-free draw, then ``seeds`` at ε = 1, 4), resumable rows in ``out``, the table
    and the rule's pick beside it (``.md``), then ``extra(rows)`` (a reported-only table) when given."""
    rows = list(csv.DictReader(out.open())) if out.exists() else []
    done = {(r["pair"], r["eps"], int(r["seed"])) for r in rows}
    pairs = [p for p in (*PHYSIONET_PAIRS, *HEART_PAIRS, *D.SYNTHETIC_PAIRS) if p.available()]
    jobs = [(p, None, seeds[0]) for p in pairs] + [(p, e, s) for s in seeds for e in (1.0, 4.0) for p in pairs]
    for spec, eps, seed in jobs:
        if (spec.task, "none" if eps is None else str(eps), seed) in done:
            continue
        new = run_one(spec, eps, seed)
        rows += new
        append_rows(out, new)
    text = verdict(rows, candidates)
    if extra is not None:
        text += "\n" + extra(rows)
    out.with_suffix(".md").write_text(f"# {title}: the rule's run\n\n{text}")
    return text


def cli(argv, seeds, run_one, candidates, title: str, extra=None) -> None:
    """``--out`` (rows, resumable) and ``--seeds`` (default ``seeds``), then :func:`run_cells`, printed."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", nargs="+", type=int, default=list(seeds))
    args = ap.parse_args(argv)
    print(run_cells(Path(args.out), args.seeds, run_one, candidates, title, extra))


def main(argv=None):
    cli(argv, (30, 31, 32), run_one, CANDIDATES, "Where `predict_proba` puts SoundDA's probabilities")


if __name__ == "__main__":
    main()
