"""``scale``: time and peak memory of the streaming release and of the receiver against n.

Rows (``value`` is the metric named in the row):

* ``release`` — ``NxD``: median time of the private class-statistics release of a memory-mapped
  ``.npy`` source divided by the one-pass floor's (:func:`dpadapt.bench.scale.floor_class_sums`),
  alternated runs; extra fields: both times, the release's peak traced memory (MB) and n, d;
* ``dask-release`` — the same release summed on a local Dask cluster (2 worker processes): seconds;
* ``receiver`` — the receiver's basis and ``adapt`` (OT refinement) at n target rows: seconds.

Synthetic data (10 classes, k = 20 basis), files in a temporary folder removed after each row.
``--quick``: n ≤ 1e5 at d = 64, a small receiver and a small Dask row (about a minute).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

from dpadapt.bench import scale
from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite

K_BASIS, N_CLASSES = 20, 10


def _basis(path: Path, k: int):
    from dpadapt import classstats

    X = np.load(path, mmap_mode="r")
    return classstats.basis(np.asarray(X[: min(20_000, X.shape[0])]), classstats.Config(epsilon=None, k=k))


def _release_row(n: int, d: int, repeats: int):
    def run(seed: int) -> RunOutcome:
        from dpadapt.stream import open_npy

        folder = Path(tempfile.mkdtemp(prefix="dpadapt-scale-"))
        try:
            path, labels = scale.make_npy(folder / "X.npy", n, d, N_CLASSES, seed)
            X, y = np.load(path, mmap_mode="r"), np.load(labels, mmap_mode="r")
            basis = _basis(path, K_BASIS)
            mean, comp = basis["mean"], basis["components"]
            source = open_npy(path, y)
            times = scale.alternated({
                "floor": lambda: scale.floor_class_sums(X, y, N_CLASSES, mean, comp),
                "release": lambda: scale.release_class_sums(source, N_CLASSES, basis, K_BASIS, seed),
            }, repeats)
            peak = scale.peak_traced_mb(lambda: scale.release_class_sums(source, N_CLASSES, basis, K_BASIS, seed))
            return RunOutcome(times["release"] / times["floor"], extra={
                "n": n, "d": d, "release_s": times["release"], "floor_s": times["floor"], "peak_mb": peak,
                "input_mb": n * d * 8 / 2**20, "repeats": repeats})
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    return run


def _dask_row(n: int, d: int, workers: int = 2):
    def run(seed: int) -> RunOutcome:
        import time

        import dask
        import dask.array as da
        from distributed import Client, LocalCluster

        from dpadapt import classstats
        from dpadapt.privacy.mechanisms import random_streams

        folder = Path(tempfile.mkdtemp(prefix="dpadapt-scale-"))
        try:
            path, labels = scale.make_npy(folder / "X.npy", n, d, N_CLASSES, seed)
            basis = _basis(path, K_BASIS)
            rows = 250_000
            load = dask.delayed(lambda p, a, b: np.asarray(np.load(p, mmap_mode="r")[a:b]), pure=True)
            blocks = [(a, min(n, a + rows)) for a in range(0, n, rows)]
            X = da.concatenate([da.from_delayed(load(str(path), a, b), (b - a, d), np.float64) for a, b in blocks])
            y = da.concatenate([da.from_delayed(load(str(labels), a, b), (b - a,), np.int64) for a, b in blocks])
            config = classstats.Config(epsilon=1.0, delta=1.0 / (10 * n), classes=tuple(range(N_CLASSES)), k=K_BASIS)
            the_plan = classstats.plan(config, {"n_source": n, "n_features": d, "k": K_BASIS})
            with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                    Client(cluster) as client:
                t0 = time.perf_counter()
                classstats.release(the_plan, X, y, random_streams(seed)[1], basis_release=basis, client=client)
                seconds = time.perf_counter() - t0
            return RunOutcome(seconds, extra={"n": n, "d": d, "workers": workers})
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    return run


def _receiver_row(n: int, d: int, repeats: int):
    def run(seed: int) -> RunOutcome:
        import time

        from dpadapt import classstats
        from dpadapt.classstats.adapt import fit_basis, row_map

        rng = np.random.default_rng(seed)
        centers = rng.normal(size=(N_CLASSES, d))
        ys = rng.integers(0, N_CLASSES, 2000)
        Xs = centers[ys] + rng.random((2000, d)) * 2 - 1
        Xt = centers[rng.integers(0, N_CLASSES, n)] + rng.random((n, d)) * 2 - 1 + 0.2
        config = classstats.Config(epsilon=1.0, delta=1e-5, classes=tuple(range(N_CLASSES)), k=K_BASIS, refinement="ot")
        basis_s, adapt_s = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            basis = classstats.basis(Xt, config)
            basis_s.append(time.perf_counter() - t0)
            the_plan = classstats.plan(config, {"n_source": 2000, "n_features": d, "k": K_BASIS})
            from dpadapt.privacy.mechanisms import random_streams

            rel = classstats.release(the_plan, Xs, ys, random_streams(seed)[1], basis_release=basis)
            t0 = time.perf_counter()
            classstats.adapt(rel, Xt, config, basis_release=basis)
            adapt_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        fit_basis(row_map(Xt, False), K_BASIS)
        svd_s = time.perf_counter() - t0
        return RunOutcome(float(np.median(adapt_s)), extra={"n": n, "d": d, "basis_s": float(np.median(basis_s)),
                                                            "fit_basis_s": svd_s, "repeats": repeats})

    return run


@register_suite("scale", "Streaming release vs the one-pass floor and the receiver, time and memory against n (synthetic)")
def build(quick: bool, epsilons=None) -> list[BenchTask]:
    if quick:
        release = [(10_000, 64, 3), (100_000, 64, 3)]
        receiver = [(20_000, 256, 1)]
        dask_rows = [(200_000, 64)]
    else:
        release = [(10_000, 64, 5), (100_000, 64, 5), (1_000_000, 64, 5), (10_000_000, 64, 1),
                   (10_000, 1024, 5), (100_000, 1024, 5), (1_000_000, 1024, 1)]
        receiver = [(10_000, 1024, 3), (100_000, 1024, 3)]
        dask_rows = [(10_000_000, 64)]
    tasks = [BenchTask(suite="scale", task=f"{n}x{d}", method="release", mode="sound", metric="time / one-pass floor",
                       run=_release_row(n, d, r), epsilon=1.0, params={"n": n, "d": d}) for n, d, r in release]
    tasks += [BenchTask(suite="scale", task=f"{n}x{d}", method="dask-release", mode="sound", metric="seconds",
                        run=_dask_row(n, d), epsilon=1.0, params={"n": n, "d": d}) for n, d in dask_rows]
    tasks += [BenchTask(suite="scale", task=f"{n}x{d}", method="receiver", mode="sound", metric="adapt seconds",
                        run=_receiver_row(n, d, r), epsilon=1.0, params={"n": n, "d": d}) for n, d, r in receiver]
    return tasks
