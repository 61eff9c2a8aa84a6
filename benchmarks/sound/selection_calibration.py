"""Measurement (no choice): are the tiny-source designs' probabilities calibrated on the target? (issues 36, 37)

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/sound/selection_calibration.py run OUT.jsonl --seeds 3
    python benchmarks/sound/selection_calibration.py table OUT.jsonl

On the tiny development pairs (``sound_rows.TINY_DEV_PAIRS``: one 157- or 295-row source, 10 classes), at
ε ∈ {1, 2, 4, 8} (``--seeds`` fresh releases; vetted noise, not seeded) and ε = None once: ``SoundDA`` as a user gets
it (``design="auto"``: the selection design at every private ε here, the prototypes design at ε = None) and
``DPOTAdapter``'s sound mode, on the same pair. Scored on the target's test rows (labels for scoring only) by the
top-label calibration of the K-class probabilities: the confidence max_y p(y | x) against whether the arg-max is
right, its ECE (:func:`dpadapt.metrics.expected_calibration_error`) and calibration slope
(:func:`dpadapt.metrics.calibration_line`), and the gap mean confidence − accuracy (> 0: over-confident).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections import defaultdict

import numpy as np

from dpadapt.bench.suites import sound_rows as R
from dpadapt.metrics import calibration_line, expected_calibration_error
from selection import _fit  # this folder's: the same fits as the selection rounds

EPSILONS = (1.0, 2.0, 4.0, 8.0, None)
ROWS = ("sound", "dpot-cs")


def top_label(y: np.ndarray, P: np.ndarray, classes: np.ndarray) -> dict:
    """Top-label calibration of probabilities ``P`` (n, K) over ``classes`` against labels ``y``."""
    conf = P.max(axis=1)
    right = (classes[P.argmax(axis=1)] == y).astype(float)
    slope, _ = calibration_line(right, conf)
    return {"accuracy": float(right.mean()), "confidence": float(conf.mean()), "ece": expected_calibration_error(right, conf),
            "slope": slope}


def run(out: str, seeds: int) -> int:
    with open(out, "a") as fh:
        for spec in R.TINY_DEV_PAIRS:
            d = spec.load()
            for eps in EPSILONS:
                for seed in range(seeds if eps is not None else 1):
                    for row in ROWS:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            est = _fit(row, spec, d, eps, seed)
                            P = np.asarray(est.predict_proba(d.Xt_test), dtype=np.float64)
                        rec = {"task": spec.task, "row": row, "epsilon": eps, "seed": seed,
                               **top_label(np.asarray(d.yt_test), P, np.asarray(est.classes_))}
                        fh.write(json.dumps(rec) + "\n")
                        fh.flush()
                        print(json.dumps(rec), file=sys.stderr)
    return 0


def table(path: str) -> int:
    cells = defaultdict(list)
    for line in open(path):
        r = json.loads(line)
        cells[(r["task"], r["row"], r["epsilon"])].append(r)
    print("| pair | row | ε | accuracy | mean confidence | confidence − accuracy | top-label ECE | slope | draws |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (task, row, eps), rs in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 1e9)):
        m = {k: float(np.mean([r[k] for r in rs])) for k in ("accuracy", "confidence", "ece", "slope")}
        print(f"| {task} | {row} | {'None' if eps is None else f'{eps:g}'} | {100 * m['accuracy']:.1f} | "
              f"{m['confidence']:.3f} | {m['confidence'] - m['accuracy']:+.3f} | {m['ece']:.3f} | {m['slope']:.2f} | {len(rs)} |")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cmd", choices=("run", "table"))
    ap.add_argument("out", help="the rows (JSON lines; run appends)")
    ap.add_argument("--seeds", type=int, default=3, help="releases a private ε (run)")
    a = ap.parse_args(argv)
    return run(a.out, a.seeds) if a.cmd == "run" else table(a.out)


if __name__ == "__main__":
    sys.exit(main())
