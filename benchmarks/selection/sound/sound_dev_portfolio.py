"""Issue 23 selection round 2, DEVELOPMENT pairs only: the class-statistics design (a) as a candidate.

The portfolio's other new candidates, DP-NCM and DP-LR on the full mapped features (c), are already in
every row of ``sound_dev.py`` (columns ``ncm`` and ``dplr``: the same estimators the ``ncm`` / ``dplr``
routes of :class:`dpadapt.sound.SoundDA` call, same seeds, same (ε, δ = 1/(10 n))). This script adds the
column ``design:classstats``: today's ClassStatsDA (receiver's top-20 PCA basis, refinement ``ot``) run
by :func:`dpadapt.classstats.run_parties` at the same ε, δ, seeds (2; Heart 3) and pairs. Usage:
``python benchmarks/selection/sound/sound_dev_portfolio.py OUT.jsonl``; one line per (pair, ε, seed).
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np

from dpadapt.classstats import Config, run_parties

sys.path.insert(0, "benchmarks")
from sound_dev import COUNTS, DEV, EPSILONS, load  # noqa: E402


def main(out_path: str) -> None:
    with open(out_path, "a") as out:
        for ds, s, t in DEV:
            p = load(ds, s, t)
            classes = tuple(np.unique(p.ys).tolist())
            n = len(p.ys)
            ytest = np.asarray(p.yt_test)
            for eps in EPSILONS:
                for seed in range(3 if ds == "heart" else 2):
                    t0 = time.time()
                    cfg = Config(epsilon=eps, delta=1.0 / (10 * n) if eps is not None else None, classes=classes,
                                 random_state=seed, feature_type="counts" if ds in COUNTS else "dense")
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        _, _, model = run_parties(cfg, p.Xs, p.ys, p.Xt)
                    row = {"pair": f"{ds}:{s}->{t}", "eps": eps, "seed": seed,
                           "design:classstats": float(np.mean(model.predict(p.Xt_test) == ytest)), "secs": round(time.time() - t0, 1)}
                    out.write(json.dumps(row) + "\n")
                    out.flush()
                    print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
