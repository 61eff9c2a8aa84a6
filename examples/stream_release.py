"""A source larger than memory: the release reads its rows chunk by chunk.

The class-statistics release is a sum of a public per-row map, so it reads a `.npy` file in chunks,
adds the exact sums and draws the noise once at the end: memory O(chunk × d + K × k), whatever n is.
"""

import tempfile
from pathlib import Path

import numpy as np

from dpadapt import classstats
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.stream import open_npy

rng = np.random.default_rng(0)
folder = Path(tempfile.mkdtemp())
np.save(folder / "X.npy", rng.random((100_000, 64)))
np.save(folder / "y.npy", rng.integers(0, 3, 100_000))
target = rng.random((5_000, 64))

config = classstats.Config(epsilon=2.0, delta=1e-7, classes=(0, 1, 2), k=8)
basis = classstats.basis(target, config)                                # the target's public basis
source = open_npy(folder / "X.npy", labels=np.load(folder / "y.npy"))   # read chunk by chunk
plan = classstats.plan(config, {"n_source": source.n_rows, "n_features": source.n_features, "k": 8})
release = classstats.release(plan, source, noise=random_streams()[1], basis_release=basis)
print(release.guarantee.summary())
print("released arrays:", {name: release[name].shape for name in ("sums", "counts")})
