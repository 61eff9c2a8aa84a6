"""Issue 30: time per value of the vetted noise sampler against numpy's float samplers (and OpenDP's).

Rule (fixed before the run): m = 1e6 values, medians of 7 alternated runs per sampler in one
process, one thread; OpenDP (the sampler this replaced) on 2e4 values, 3 runs. Also the class-moment
release at n × d = 1e5 × 1024 (10 classes) against its exact sums alone, 5 alternated runs.

    OMP_NUM_THREADS=1 python benchmarks/perf/noise_sampler.py [--quick]
"""

from __future__ import annotations

import sys

import numpy as np

from dpadapt.bench.scale import alternated
from dpadapt.privacy.mechanisms import (
    NoiseSource,
    class_moment_statistics,
    class_moment_sums,
    vetted_gaussian,
    vetted_laplace,
)


def per_value(quick: bool) -> None:
    m = 10_000 if quick else 1_000_000
    gen = np.random.default_rng()
    noise = NoiseSource()
    zeros = np.zeros(m)
    med = alternated({
        "numpy normal": lambda: zeros + gen.normal(0.0, 2.0, m),
        "vetted gaussian (ChaCha20 words)": lambda: vetted_gaussian(zeros, 2.0, noise, sensitivity=1.0),
        "numpy laplace": lambda: zeros + gen.laplace(0.0, 2.0, m),
        "vetted laplace (ChaCha20 words)": lambda: vetted_laplace(zeros, 2.0, noise, sensitivity=1.0),
    }, 7)
    for k, v in med.items():
        print(f"{k:<34} {v / m * 1e9:8.1f} ns/value")
    print(f"ratio gaussian/numpy {med['vetted gaussian (ChaCha20 words)'] / med['numpy normal']:.2f}, "
          f"laplace/numpy {med['vetted laplace (ChaCha20 words)'] / med['numpy laplace']:.2f}")
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        small = 200 if quick else 20_000
        meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float), scale=2.0)
        x = np.zeros(small).tolist()
        od = alternated({"opendp": lambda: meas(x)}, 3)["opendp"]
        print(f"{'opendp make_gaussian (float)':<34} {od / small * 1e9:8.1f} ns/value")
    except ImportError:
        print("opendp not installed")


def class_moments(quick: bool) -> None:
    n, d, K = (2_000, 64, 10) if quick else (100_000, 1024, 10)
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(n, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    y = rng.integers(0, K, n)
    noise = NoiseSource()
    med = alternated({
        "sums": lambda: class_moment_sums(Z, y, K),
        "release": lambda: class_moment_statistics(Z, y, K, sigma=3.0, relation="replace_one", noise=noise),
    }, 5)
    print(f"class-moment release {n} x {d}: sums {med['sums']:.2f} s, release (sums + noise) {med['release']:.2f} s, "
          f"ratio {med['release'] / med['sums']:.2f}")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    per_value(quick)
    class_moments(quick)
