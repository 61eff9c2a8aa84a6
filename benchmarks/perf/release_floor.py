"""Issue 30: the full-feature releases against their one-pass floors, and the class-moment release against its sums.

Rule (fixed before the run):

* data: in-memory float64 rows, 10 classes with class-dependent means (``dpadapt.bench.scale.make_npy``'s
  law), n × d ∈ {1e6 × 64, 1e5 × 1024}; one thread;
* releases (private, ε = 1, δ = 1e-8, fresh noise): ``classstats`` with ``k = 0`` (per-class sums and
  counts of ℓ2-normalised rows in the full feature space, one Gaussian) and ``sound`` in its
  ``features`` space (``feature_type="table"``: class sums, counts and the d × d second moment, one Gaussian);
* floors: the same math in plain numpy over 16 MB chunks — ℓ2-normalise, a dense one-hot product
  (+ ``ZᵀZ`` for the moments) — no validation, no clipping, no noise;
* "exact sums": ``dpadapt.privacy.mechanisms.class_moment_sums`` of the mapped rows (the issue's
  "class-moment release ≤ 2× its exact sums, noise included" at 1e5 × 1024);
* ratios of medians of 5 runs, all functions alternated within each round.

    OMP_NUM_THREADS=1 python benchmarks/perf/release_floor.py [--quick]

Writes ``benchmarks/perf/results/release_floor.json``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
K = 10


def data(n: int, d: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(K, d))
    y = rng.integers(0, K, n)
    X = np.empty((n, d))
    for start in range(0, n, 65536):
        stop = min(n, start + 65536)
        X[start:stop] = centers[y[start:stop]] + rng.random((stop - start, d)) * 2.0 - 1.0
    return X, y


def floor(X, y, moments: bool):
    n, d = X.shape
    step = max(1, (16 << 20) // (8 * d))
    sums, counts = np.zeros((K, d)), np.zeros(K)
    second = np.zeros((d, d)) if moments else None
    for start in range(0, n, step):
        Z = X[start:start + step]
        Z = Z / np.sqrt(np.einsum("ij,ij->i", Z, Z))[:, None]
        yc = y[start:start + step]
        onehot = np.zeros((K, yc.size))
        onehot[yc, np.arange(yc.size)] = 1.0
        sums += onehot @ Z
        counts += np.bincount(yc, minlength=K)
        if moments:
            second += Z.T @ Z
    return sums, counts, second


def main(quick: bool) -> None:
    from dpadapt import classstats, sound
    from dpadapt.bench.scale import alternated
    from dpadapt.classstats.adapt import row_map
    from dpadapt.privacy.mechanisms import class_moment_sums, random_streams

    sizes = [(100_000, 64), (20_000, 256)] if quick else [(1_000_000, 64), (100_000, 1024)]
    rows = []
    for n, d in sizes:
        X, y = data(n, d)
        classes = tuple(range(K))
        cs_cfg = classstats.Config(epsilon=1.0, delta=1e-8, classes=classes, k=0)
        cs_plan = classstats.plan(cs_cfg, {"n_source": n, "n_features": d, "k": 0})
        sd_cfg = sound.Config(epsilon=1.0, delta=1e-8, classes=classes, feature_type="table")
        sd_plan = sound.plan(sd_cfg, {"n_source": n, "n_features": d})
        times = alternated({
            "classstats k=0 release": lambda: classstats.release(cs_plan, X, y, random_streams(None)[1]),
            "class-sums floor": lambda: floor(X, y, moments=False),
            "sound features release": lambda: sound.release(sd_plan, X, y, random_streams(None)[1]),
            "class-moments floor": lambda: floor(X, y, moments=True),
            "class_moment_sums (exact)": lambda: class_moment_sums(row_map(X, False), y, K),
        }, repeats=3 if quick else 5)
        row = {"n": n, "d": d, "median_s": times,
               "classstats_vs_floor": times["classstats k=0 release"] / times["class-sums floor"],
               "sound_vs_floor": times["sound features release"] / times["class-moments floor"],
               "sound_vs_exact_sums": times["sound features release"] / times["class_moment_sums (exact)"]}
        rows.append(row)
        print(f"{n} x {d}: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()), flush=True)
        print(f"  classstats/floor {row['classstats_vs_floor']:.2f}, sound/floor {row['sound_vs_floor']:.2f}, "
              f"sound/exact sums {row['sound_vs_exact_sums']:.2f}", flush=True)
    out = HERE / "results" / ("release_floor_quick.json" if quick else "release_floor.json")
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "loadavg_end": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main("--quick" in sys.argv)
