"""Checks behind the issue-23 baseline fixes (outputs recorded in benchmarks/sound/results/sound-baseline-checks.txt).

    python benchmarks/sound/sound_baseline_checks.py source-only   # SourceOnly defaults and 1-NN on JDA digits + one pair per dev family
    python benchmarks/sound/sound_baseline_checks.py dpswd         # DPSWDAdapter(network="mlp") source-only network on JDA digits, 5 seeds
    python benchmarks/sound/sound_baseline_checks.py ot            # skada CORAL / OT mapping: iteration cap 1e5 vs 1e7

JDA digits are a held-out case of the issue (nothing is chosen on them); run ``dpswd`` with the code
before and after the change (commit 937d9cf vs this branch) to compare.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

from dpadapt.bench.common import cached_pair

JDA = [("mnist_usps/jda_protocol", "mnist", "usps"), ("mnist_usps/jda_protocol", "usps", "mnist")]


def source_only() -> None:
    from sklearn.neighbors import KNeighborsClassifier

    from dpadapt.baselines import SourceOnly

    for ds, s, t in JDA + [("googlenet1024", "amazon", "dslr"), ("surf", "amazon", "caltech"), ("bow5000", "kitchen", "books")]:
        p = cached_pair(ds, s, t)
        for kw in ({}, {"scaling": "floored", "C": 1.0}, {"scaling": "none", "C": 1.0}):
            m = SourceOnly(random_state=0, **kw).fit_domains(p.Xs, p.ys)
            print(ds, s, t, kw or "default (CV)", round(100 * m.score(p.Xt_test, p.yt_test), 1), m.cv_best_, flush=True)
        print(ds, s, t, "1-NN", round(100 * KNeighborsClassifier(1).fit(p.Xs, p.ys).score(p.Xt_test, p.yt_test), 1), flush=True)


def dpswd() -> None:
    from dpadapt.deep.swd_da import DPSWDAdapter

    for ds, s, t in JDA:
        p = cached_pair(ds, s, t)
        for seed in range(5):
            m = DPSWDAdapter(network="mlp", epsilon=None, lam=0.0, random_state=seed).fit_domains(p.Xs, p.ys, p.Xt)
            z = np.abs((p.Xt_test - m.mean_) / m.scale_).max()
            print(ds, s, t, seed, round(100 * m.score(p.Xt_test, p.yt_test), 1), f"max|z| on target {z:.3g}", flush=True)


def ot() -> None:
    from dpadapt.baselines import skada_baseline

    for ds, s, t in [("bow5000", "kitchen", "books"), ("surf", "amazon", "caltech")]:
        p = cached_pair(ds, s, t)
        dense = lambda A: A.toarray() if sp.issparse(A) else A  # noqa: E731
        Xs, Xt, Xte = dense(p.Xs), dense(p.Xt), dense(p.Xt_test)
        X = np.vstack([Xs, Xt])
        y = np.r_[p.ys, -np.ones(len(Xt), int)]
        sd = np.r_[np.ones(len(Xs), int), -np.ones(len(Xt), int)]
        for name, kw in (("coral", {}), ("ot_mapping", {"max_iter": 100_000}), ("ot_mapping", {})):
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                m = skada_baseline(name, random_state=0, **kw).fit(X, y, sample_domain=sd)
            acc = m.score(Xte, p.yt_test, sample_domain=-np.ones(len(Xte), int))
            capped = any("numItermax" in str(w.message) for w in caught)
            print(ds, s, t, name, kw or "default", round(100 * acc, 1), f"{time.perf_counter() - t0:.1f}s",
                  "stopped at numItermax" if capped else "optimal", flush=True)


if __name__ == "__main__":
    {"source-only": source_only, "dpswd": dpswd, "ot": ot}[sys.argv[1]]()
