"""The run of the rule "a consistent prior shift on the second release" (``benchmarks/decisions/README.md``).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/decisions/consistent_shift_rule.py \\
        --out benchmarks/decisions/results/consistent-shift-rule.csv

The second release's default fit (``sound-scores`` of :mod:`dpadapt.bench.suites.decisions`) on every development cell
(PhysioNet's 12 pairs, Heart, the synthetic family) at ε ∈ {1, 4, None} (seeds 50–52; noise-free one), then candidate
(A) ``shift`` (the gate's estimate applied whatever it chose) and (B) ``consistent`` (applied only when the gate chose
EM) scored on the target's test rows (labels for scoring only). Writes the rows and, beside them (``.md``), the counts
and the rule's verdict (:func:`prior_shift_rule.run_cells`).
"""

from __future__ import annotations

import numpy as np
from prior_shift_rule import cli, fit_cell
from scipy.special import logsumexp

from dpadapt.bench.suites import decisions as D
from dpadapt.metrics import calibration_line, expected_calibration_error, roc_auc

CANDIDATES = ("shift", "consistent")


def run_one(spec, eps, seed):
    pair, y, model = fit_cell(spec, eps, seed, D._sound_scores)
    inner = model.model_
    prev = inner.details["prevalence"]
    chose = prev.get("gate", {}).get("chose", prev["method"])
    pi = float(prev["prior"][1])
    s = np.asarray(inner.decision_function(pair.Xt_test))
    shifted = s + np.log(np.asarray(inner.details["target_prior"])) - np.log(np.asarray(inner.details["source_prior"]))
    out = []
    for cand, v in (("shift", shifted), ("consistent", shifted if chose == "em" else s)):
        p = np.exp(v - logsumexp(v, axis=1, keepdims=True))[:, 1]
        slope, _ = calibration_line(y, p)
        best_ba, best_acc = D.best_threshold_scores(y, p)
        bal = p >= pi
        ba = 0.5 * (np.mean(bal[y == 1]) + np.mean(~bal[y == 0]))
        out.append({"family": spec.dataset, "pair": spec.task, "eps": "none" if eps is None else eps, "seed": seed,
                    "candidate": cand, "chose": chose, "slope": slope, "ece": expected_calibration_error(y, p),
                    "bias": float(p.mean() - y.mean()), "accuracy": float(np.mean((p >= 0.5) == y)),
                    "best_accuracy": best_acc, "balanced_ba": float(ba), "best_ba": best_ba, "auc": roc_auc(y, p)})
    return out


def main(argv=None):
    cli(argv, (50, 51, 52), run_one, CANDIDATES, "A consistent prior shift on the second release")


if __name__ == "__main__":
    main()
