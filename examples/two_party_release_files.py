"""The two parties as three plain functions and two files.

The target writes its basis; the source plans its release from public facts, releases its class
statistics and signs the file; the target checks the signature, reads the Guarantee and adapts.
What crosses is a Release file: named arrays, the Guarantee and public parameters — no raw row.
"""

import tempfile
from pathlib import Path

import numpy as np

from dpadapt import classstats
from dpadapt.datasets.synthetic import make_shifted_blobs
from dpadapt.keys import load_private_key, load_public_key, new_keypair
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import Release

Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(3))
config = classstats.Config(epsilon=4.0, classes=(0, 1, 2), k=8)
exchange = Path(tempfile.mkdtemp())

# target: its basis is not protected in DPOT's setting, and says so in its Guarantee
classstats.basis(Xt, config).save(exchange / "basis.release")

# source: plan from public facts only, then ONE Gaussian release, signed
basis = Release.load(exchange / "basis.release")
plan = classstats.plan(config, {"n_source": Xs.shape[0], "n_features": Xs.shape[1], "k": basis.params["k"]})
secret_file, public_file = new_keypair(exchange / "keys")          # the .pub file goes to the target
release = classstats.release(plan, Xs, ys, noise=random_streams()[1], basis_release=basis)
release.save(exchange / "source.release", sign_key=load_private_key(secret_file))

# target: accept only what the source's key signed, then adapt on its own rows (free)
received = Release.load(exchange / "source.release", trusted=[load_public_key(public_file)])
print(received.guarantee.summary())
model = classstats.adapt(received, Xt, config, basis_release=basis)
print(f"target accuracy {np.mean(model.predict(Xt) == yt):.3f}")
