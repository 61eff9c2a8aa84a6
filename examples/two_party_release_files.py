"""The two parties as three plain functions and two files (DPOT's steps; `DPOTAdapter` runs them in one process).

The target writes its release request; the source checks it, plans its release from public facts, releases its
class statistics and signs the file; the target checks the signature, reads the Guarantee and adapts.
What crosses is a Release file: named arrays, the Guarantee and public parameters — no raw row.
"""

import tempfile
from pathlib import Path

import numpy as np

from dpadapt import transport
from dpadapt.datasets.synthetic import make_shifted_blobs
from dpadapt.keys import load_private_key, load_public_key, new_keypair
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import Release
from dpadapt.sound import Request, release, request
from dpadapt.transport.da import sound_config

Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(3))
config = transport.Config(epsilon=4.0, delta=1e-5, classes=(0, 1, 2))
exchange = Path(tempfile.mkdtemp())

# target: its request (mean, top principal directions, what to release) is not protected in DPOT's setting
request(Xt, sound_config(config), Xs.shape[0]).save(exchange / "request.release")

# source: the request is untrusted input; plan from public facts only, then ONE Gaussian release, signed
req = Request.from_release(Release.load(exchange / "request.release"), n_features=Xs.shape[1])
plan = transport.plan(config, {"request": req, "n_source": Xs.shape[0]})
secret_file, public_file = new_keypair(exchange / "keys")          # the .pub file goes to the target
release(plan, req, Xs, ys, noise=random_streams()[1]).save(exchange / "source.release",
                                                          sign_key=load_private_key(secret_file))

# target: accept only what the source's key signed, then refine the prototypes on its own rows (free)
received = Release.load(exchange / "source.release", trusted=[load_public_key(public_file)])
print(received.guarantee.summary())
model = transport.adapt([Release.load(exchange / "request.release"), received], Xt, config)
print(f"target accuracy {np.mean(model.predict(Xt) == yt):.3f}")
