"""The sound releases and the class-statistics release against their one-pass numpy floors.

Rule (fixed before the run):

* data: in-memory float64 rows, 10 classes with class-dependent means, n × d ∈ {1e6 × 64, 1e5 × 1024}
  (``--quick``: 1e4 × 32 and 2e3 × 128, seconds); one thread;
* releases (private, ε = 1, δ = 1e-8, fresh noise), each on today's route:
  ``sound sums`` — :func:`dpadapt.sound.release` of a request in the ``features`` space asking for per-class
  sums and counts; ``sound moments`` — the same request asking for the pooled second moment too (the
  class-moment release); ``classstats k=0`` — :func:`dpadapt.classstats.release` in the full feature space;
* floors: the same math in plain numpy over 16 MB chunks — ℓ2-normalise, a dense one-hot product
  (+ ``ZᵀZ`` for the moments) — no validation, no clipping, no noise;
* pairs: each release runs right after its floor, round after round (``--rounds``, default 5), so that the
  load of the shared machine falls on both alike; the ratio of each pair is recorded and the median and
  the range of the ratios reported.

    OMP_NUM_THREADS=1 python benchmarks/perf/release_floor.py [--quick] [--rounds 5]

Writes ``benchmarks/perf/results/release_floor.json`` (``--quick`` writes nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
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


def releases(X, y) -> dict:
    """name → (release, its floor) as zero-argument functions."""
    from dpadapt import classstats, sound
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.sound.request import Request, SourceFacts

    n, d = X.shape
    classes = tuple(range(K))
    cfg = sound.Config(epsilon=1.0, delta=1e-8, classes=classes)
    facts = (SourceFacts(n, 1.0, 1e-8),)
    out = {}
    for stats in ("sums", "moments"):
        req = Request(classes=classes, n_features=d, log1p=False, statistics=stats, sources=facts)
        plan = sound.plan(cfg, {"request": req, "n_source": n})
        out[f"sound {stats}"] = ((lambda p=plan, r=req: sound.release(p, r, X, y, random_streams(None)[1])),
                                 (lambda m=stats == "moments": floor(X, y, moments=m)))
    cs_plan = classstats.plan(classstats.Config(epsilon=1.0, delta=1e-8, classes=classes, k=0),
                              {"n_source": n, "n_features": d, "k": 0})
    out["classstats k=0"] = (lambda: classstats.release(cs_plan, X, y, random_streams(None)[1]),
                             lambda: floor(X, y, moments=False))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    a = ap.parse_args()
    sizes = [(10_000, 32), (2_000, 128)] if a.quick else [(1_000_000, 64), (100_000, 1024)]
    rounds = a.rounds or (2 if a.quick else 5)
    rows = []
    for n, d in sizes:
        X, y = data(n, d)
        pairs = releases(X, y)
        ratios: dict[str, list[float]] = {name: [] for name in pairs}
        seconds: dict[str, list[tuple[float, float]]] = {name: [] for name in pairs}
        for _ in range(rounds):
            for name, (release, base) in pairs.items():
                t0 = time.perf_counter()
                base()
                t1 = time.perf_counter()
                release()
                t2 = time.perf_counter()
                seconds[name].append((t2 - t1, t1 - t0))
                ratios[name].append((t2 - t1) / (t1 - t0))
        for name in pairs:
            r = ratios[name]
            rows.append({"n": n, "d": d, "release": name, "ratio_median": statistics.median(r), "ratio_min": min(r),
                         "ratio_max": max(r), "release_s_median": statistics.median(s[0] for s in seconds[name]),
                         "floor_s_median": statistics.median(s[1] for s in seconds[name]), "pairs": seconds[name]})
            print(f"{n} x {d} {name:<15} release/floor {statistics.median(r):.2f} [{min(r):.2f}–{max(r):.2f}] "
                  f"({rows[-1]['release_s_median']:.3f} s vs {rows[-1]['floor_s_median']:.3f} s)", flush=True)
    if a.quick:  # a smoke run: it writes nothing
        return
    out = HERE / "results" / "release_floor.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rounds": rounds, "rows": rows, "loadavg_end": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
