"""The DP source-only baselines: what a plain DP classifier scores at the same (ε, δ).

An adaptation method is worth its privacy only where it beats these. They follow scikit-learn's
estimator conventions (`fit`, `predict`, `score`) with a public label set.
"""

import numpy as np
from sklearn.linear_model import LogisticRegression

from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean
from dpadapt.datasets.synthetic import make_shifted_blobs

Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(2))

for estimator in (DPNearestClassMean(epsilon=2.0, classes=(0, 1, 2), random_state=0),
                  DPLogisticRegression(epsilon=2.0, classes=(0, 1, 2), random_state=0)):
    estimator.fit(Xs, ys)
    print(f"{type(estimator).__name__:22s} ε = 2: target accuracy {estimator.score(Xt, yt):.3f}")
print(f"{'LogisticRegression':22s} non-private: target accuracy {LogisticRegression().fit(Xs, ys).score(Xt, yt):.3f}")
