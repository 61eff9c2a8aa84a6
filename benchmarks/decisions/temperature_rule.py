"""The run of the rule "an out-of-sample factor on the stated temperature" (``benchmarks/decisions/README.md``).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/decisions/temperature_rule.py \\
        --out benchmarks/decisions/results/temperature-rule.csv

SoundDA's default fit on every development cell (as ``prior_shift_rule.py``; seeds 40–42), its tempered log-likelihood
ratio multiplied by f⁰, f¹, f² (f = (n − k − 3)/(n − 2), n the released count, k the dimension; the discriminant
design only — another design's scores are as released), then the ``mean`` estimate and the shift to it, as today,
scored on the target rows (labels for scoring only).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

import numpy as np

from dpadapt import prevalence as prev
from dpadapt.bench.suites import decisions as D
from dpadapt.bench.suites.sound_rows import ROWS, Problem
from dpadapt.metrics import calibration_line, expected_calibration_error

from prior_shift_rule import run_cells

CANDIDATES = ("t", "t*f", "t*f^2")


def run_one(spec, eps, seed):
    pair = spec.load()
    y = np.asarray(pair.yt_test)
    delta = None if eps is None else spec.delta(len(pair.ys))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ROWS["sound"].fit(Problem(spec, pair.Xs, pair.ys, pair.Xt, (0, 1), eps, delta, seed))
    d = model.model_.details
    P, src = D.source_probabilities(model, pair.Xt_test)["temperature"]
    n, k = float(d.get("n", 0.0)), float(d.get("k", 0.0))
    f = max(n - k - 3.0, 1.0) / max(n - 2.0, 1.0) if d.get("temperature_applied") else 1.0
    log_prior = np.log(src)
    L = np.log(np.clip(P, np.finfo(float).tiny, None)) - log_prior
    out = []
    for j, cand in enumerate(CANDIDATES):
        s = L * f**j + log_prior
        Q = np.exp(s - s.max(axis=1, keepdims=True))
        Q /= Q.sum(axis=1, keepdims=True)
        p = prev.shift(Q, src, prev.point(Q, src, "mean"))[:, 1]
        slope, _ = calibration_line(y, p)
        _, best_acc = D.best_threshold_scores(y, p)
        out.append({"family": spec.dataset, "pair": spec.task, "eps": "none" if eps is None else eps, "seed": seed,
                    "candidate": cand, "f": f, "slope": slope, "ece": expected_calibration_error(y, p),
                    "bias": float(p.mean() - y.mean()), "accuracy": float(np.mean((p >= 0.5) == y)),
                    "best_accuracy": best_acc})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--seeds", nargs="+", type=int, default=[40, 41, 42])
    args = ap.parse_args(argv)
    print(run_cells(Path(args.out), args.seeds, run_one, CANDIDATES, "An out-of-sample factor on the stated temperature"))


if __name__ == "__main__":
    main()
