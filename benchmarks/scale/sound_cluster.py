"""The sound release on a Dask cluster against the one-process streaming path: time and peak memory against n.

Rule (fixed before the run):

* data generated on the fly, never written: n rows × 64 features, 10 classes with class-dependent means, in
  blocks of 65 536 rows, block i drawn from the seed (0, i) — the same rows on every path;
* the request: the receiver's own (``dpadapt.sound.request`` on 5 000 rows of the same law, ε = 1); the
  release ε = 1 (the noise drawn once, in the caller);
* paths: ``stream`` — :func:`dpadapt.sound.release` of a :class:`~dpadapt.stream.ChunkedSource` that makes
  the blocks in this process; ``dask-1`` / ``dask-2`` — a ``dask.array`` whose blocks are made on the workers
  of a ``LocalCluster`` of 1 / 2 worker processes (one thread each), summed there;
* measured: wall time of the release; the caller's RSS growth during it (sampled every 20 ms); each worker's
  peak RSS (``getrusage``; a fresh cluster per cell) minus its RSS when idle before the run;
* noise-free check: at the smallest n the three paths' exact sums, counts and second moment agree to 1e-9;
* n ∈ ``--ns`` (default 1e5, 1e6, 1e7); one run per cell (the machine is shared: the times are noisy).

    OMP_NUM_THREADS=1 python benchmarks/scale/sound_cluster.py [--ns 100000 1000000] [--quick]

Writes ``benchmarks/scale/sound_cluster.json`` (``--quick`` writes nothing).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import threading
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
D, K, BLOCK = 64, 10, 65_536
MEANS_SEED = 7


def _means() -> np.ndarray:
    return 2.0 * np.random.default_rng(MEANS_SEED).normal(size=(K, D))


def block(i: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng((0, i))
    y = rng.integers(0, K, rows)
    return _means()[y] + rng.normal(size=(rows, D)), y


def _sizes(n: int) -> list[int]:
    return [min(BLOCK, n - s) for s in range(0, n, BLOCK)]


def streamed(n: int):
    from dpadapt.stream import ChunkedSource

    return ChunkedSource(n, D, lambda: (block(i, r) for i, r in enumerate(_sizes(n))), True, "generated")


def on_dask(n: int):
    import dask
    import dask.array as da

    made = [(dask.delayed(block, nout=2, pure=True)(i, r), r) for i, r in enumerate(_sizes(n))]  # one task a block
    xs = [da.from_delayed(b[0], (r, D), float) for b, r in made]
    ys = [da.from_delayed(b[1], (r,), np.int64) for b, r in made]
    return da.concatenate(xs), da.concatenate(ys)


def _rss_mb() -> float:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS")) / 1024


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def _caller_growth(out: dict):
    """The caller's RSS growth during the block (sampled every 20 ms: the lifetime peak would carry earlier cells)."""
    before, peak, done = _rss_mb(), [0.0], threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _rss_mb())

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        out["caller_peak_growth_mb"] = max(0.0, max(peak[0], _rss_mb()) - before)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ns", type=int, nargs="*", default=[100_000, 1_000_000, 10_000_000])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-check", action="store_true", help="skip the noise-free comparison at the smallest n")
    ap.add_argument("--out", default=str(HERE / "sound_cluster.json"))
    a = ap.parse_args()
    warnings.simplefilter("ignore", UserWarning)  # the noise-free runs use a request made for ε = 1
    import distributed

    from dpadapt import sound
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.sound.request import Request

    ns = [5_000] if a.quick else a.ns
    Xt, _ = block(10**6, 5_000)
    cfg = sound.Config(epsilon=1.0, delta=1e-9, classes=tuple(range(K)))
    requests = {n: Request.from_release(sound.request(Xt, cfg, n)) for n in ns}
    rows, exact = [], {}
    for path in ("stream", "dask-1", "dask-2"):
        for n in ns:
            with contextlib.ExitStack() as stack:  # a fresh cluster per cell: each worker's peak RSS is this cell's
                cli = None
                if path != "stream":
                    cl = stack.enter_context(distributed.LocalCluster(n_workers=int(path[-1]), threads_per_worker=1,
                                                                      processes=True, dashboard_address=None,
                                                                      silence_logs=40))
                    cli = stack.enter_context(distributed.Client(cl))
                    cli.run(lambda: __import__("dpadapt.sound"))
                    idle = cli.run(_rss_mb)
                req = requests[n]
                for private in (False, True) if n == ns[0] and not a.no_check else (True,):
                    c = cfg if private else sound.Config(epsilon=None, classes=tuple(range(K)))
                    plan = sound.plan(c, {"request": req, "n_source": n})
                    noise = random_streams(None)[1]
                    cell: dict = {}
                    if cli is None:
                        with _caller_growth(cell):
                            t0 = time.perf_counter()
                            rel = sound.release(plan, req, streamed(n), None, noise)
                            cell["seconds"] = time.perf_counter() - t0
                    else:
                        X, y = on_dask(n)
                        with _caller_growth(cell):
                            t0 = time.perf_counter()
                            rel = sound.release(plan, req, X, y, noise, client=cli)
                            cell["seconds"] = time.perf_counter() - t0
                        peaks = cli.run(_peak_mb)
                        cell["worker_peak_over_idle_mb"] = [peaks[w] - idle[w] for w in sorted(peaks)]
                    if not private:
                        exact[path] = rel
                        continue
                    rows.append({"n": n, "path": path, **cell})
                    print(f"n = {n:>9} {path:<7} {cell['seconds']:8.2f} s, caller +{cell['caller_peak_growth_mb']:.0f} MB"
                          + (f", workers +{', +'.join(f'{m:.0f}' for m in cell['worker_peak_over_idle_mb'])} MB"
                             if "worker_peak_over_idle_mb" in cell else ""), flush=True)
    for path in ("dask-1", "dask-2") if exact else ():
        for name in exact["stream"].arrays:
            np.testing.assert_allclose(exact[path][name], exact["stream"][name], rtol=1e-9, atol=1e-9)
    if exact:
        print(f"n = {ns[0]}: noise-free sums, counts{' and second moment' if 'second' in exact['stream'].arrays else ''} "
              "agree on the three paths to 1e-9", flush=True)
    if a.quick:
        return
    Path(a.out).write_text(json.dumps({"rows": rows, "d": D, "classes": K, "block_rows": BLOCK,
                                                         "loadavg_end": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
