"""SoundDA: the design a public rule names, and the guarantee of that design.

`SoundDA` picks its design (sufficient statistics, `ssp`, or class statistics) from the declared
`feature_type` and ε alone, never from the data, and reports the Guarantee of what it released.
"""

import numpy as np

from dpadapt.datasets.synthetic import make_shifted_blobs
from dpadapt.sound import SoundDA

Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(1))

for epsilon in (1.0, 8.0):
    model = SoundDA(epsilon=epsilon, classes=(0, 1, 2), feature_type="dense", random_state=0)
    model.fit_domains(Xs, ys, Xt)
    print(f"ε = {epsilon:g}: design {model.design_}, target accuracy {model.score(Xt, yt):.3f}")
print(model.guarantee_.summary())
