"""Measurements of the ``scale`` suite: time and peak memory of the streaming release and
of the receiver against n, and the one-pass floor they are compared with.

* :func:`floor_class_sums` — the floor: the same math (ℓ2-normalise, project on the basis,
  re-normalise, per-class sums by a one-hot product) in plain numpy over 64k-row chunks (fewer
  rows when d is large: 16 MB of features per chunk), no validation, no clipping, no noise.
* :func:`release_class_sums` — the library's release path (:func:`dpadapt.classstats.release`,
  private, one Gaussian) on the same source.
* :func:`alternated` — medians of ``repeats`` runs of several functions, alternated run by run (a
  shared machine drifts; alternating keeps the ratio honest).
* :func:`peak_traced_mb` — peak of Python/numpy allocations (tracemalloc) of one call: the extra
  memory of a release on a memory-mapped input (mapped file pages are not allocations).
* :func:`make_npy` — a synthetic memory-mapped ``.npy`` source written chunk by chunk (never whole in RAM).
"""

from __future__ import annotations

import math
import statistics
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dpadapt.stream.readers import ChunkedSource

FLOOR_ROWS = 65_536


def make_npy(path: str | Path, n: int, d: int, n_classes: int = 10, seed: int = 0, rows: int = 65_536) -> tuple[Path, Path]:
    """Features (n × d, float64, class-dependent means) and labels written to ``path`` / ``path.labels.npy``."""
    path = Path(path)
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_classes, d))
    X = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, d))
    y = np.lib.format.open_memmap(path.with_suffix(".labels.npy"), mode="w+", dtype=np.int64, shape=(n,))
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        yc = rng.integers(0, n_classes, stop - start)
        X[start:stop] = centers[yc] + rng.random((stop - start, d)) * 2.0 - 1.0
        y[start:stop] = yc
    X.flush()
    y.flush()
    del X, y
    return path, path.with_suffix(".labels.npy")


def floor_class_sums(X, y, n_classes: int, mean: np.ndarray, components: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The one-pass floor: the release's math in plain numpy, chunk by chunk."""
    n, d = X.shape
    step = min(FLOOR_ROWS, max(1, (16 << 20) // (8 * d)))
    sums = np.zeros((n_classes, components.shape[1]))
    counts = np.zeros(n_classes)
    shift = mean @ components
    for start in range(0, n, step):
        M = np.asarray(X[start:start + step], dtype=np.float64)
        M = M / np.sqrt(np.einsum("ij,ij->i", M, M))[:, None]
        Z = M @ components - shift
        Z /= np.sqrt(np.einsum("ij,ij->i", Z, Z))[:, None]
        yc = np.asarray(y[start:start + step])
        onehot = np.zeros((n_classes, yc.size))
        onehot[yc, np.arange(yc.size)] = 1.0
        sums += onehot @ Z
        counts += np.bincount(yc, minlength=n_classes)
    return sums, counts


def release_class_sums(source: ChunkedSource, n_classes: int, basis_release, k: int, seed: int = 0):
    """The library's private class-statistics release of ``source`` (ε = 1, δ = 1/(10 n))."""
    from dpadapt import classstats
    from dpadapt.privacy.mechanisms import random_streams

    config = classstats.Config(epsilon=1.0, delta=1.0 / (10 * source.n_rows), classes=tuple(range(n_classes)), k=k)
    the_plan = classstats.plan(config, {"n_source": source.n_rows, "n_features": source.n_features, "k": k})
    return classstats.release(the_plan, source, None, random_streams(seed)[1], basis_release=basis_release)


def alternated(functions: dict[str, Callable[[], object]], repeats: int = 5) -> dict[str, float]:
    """Median wall time of each function over ``repeats`` rounds, the functions alternated within a round."""
    times: dict[str, list[float]] = {name: [] for name in functions}
    for _ in range(repeats):
        for name, fn in functions.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def peak_traced_mb(fn: Callable[[], object]) -> float:
    """Peak MB of memory allocated through Python / numpy while ``fn`` runs (tracemalloc)."""
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def loglog_slope(ns, times) -> float:
    """Least-squares slope of log(time) against log(n)."""
    x, yv = np.log(np.asarray(ns, dtype=float)), np.log(np.asarray(times, dtype=float))
    return float(np.polyfit(x, yv, 1)[0]) if len(x) > 1 else math.nan
