"""DP generator from ONE release of sliced marginals on full MNIST (60 000 train rows), downstream
MLP / LogReg on real MNIST test.
Usage: python benchmarks/dpswd/gen_marginals.py EPS|none STEPS SEED OUT.json [joint|per-class] [mnist|usps] [FLOOR]
(``per-class``, the default: one histogram per class of the images, ``MarginalsConfig.per_class``; ``joint``:
round 4's one histogram of the joint rows;
``usps``: the dev check on other data — USPS train (7291) bilinearly resized to 28×28, downstream on USPS test;
FLOOR: ``MarginalsConfig.floor``, counts ≤ FLOOR·σ read as empty, default the config's)."""

import json
import os
import sys
import time

import numpy as np
import torch

from dpadapt.datasets import load_domain
from dpadapt.deep import generator as gen
from dpadapt.models import make_classifier
from dpadapt.privacy.mechanisms import random_streams

torch.set_num_threads(int(os.environ.get("DPADAPT_TORCH_THREADS", "2")))
eps = None if sys.argv[1] == "none" else float(sys.argv[1])
steps, seed, out = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
design = sys.argv[5] if len(sys.argv) > 5 else "per-class"
domain = sys.argv[6] if len(sys.argv) > 6 else "mnist"
floor = {"floor": float(sys.argv[7])} if len(sys.argv) > 7 else {}
tr, te = load_domain("digits", domain, split="train"), load_domain("digits", domain, split="test")
X, y, Xte = np.asarray(tr.X, dtype=np.float32), tr.y, np.asarray(te.X, dtype=np.float32)
if domain == "usps":
    from dpadapt.datasets.loaders import resize_images

    X, Xte = resize_images(X, 28), resize_images(Xte, 28)
cfg = gen.MarginalsConfig(epsilon=eps, delta=1e-5, steps=steps, classes=tuple(range(10)),
                          per_class=design == "per-class", **floor)
rng, noise = random_streams(seed)
t0 = time.perf_counter()
res = gen.train_generator_from_marginals(X, y, cfg, rng, noise)
Xg, yg = gen.sample(res.generator, 1000, rng)
row = {"data": domain, "design": design, "floor": cfg.floor, "epsilon": eps, "delta": 1e-5, "steps": steps, "seed": seed, "k": cfg.k, "bins": cfg.bins,
       "batch_size": cfg.batch_size, "train_seconds": res.seconds, "n_train": int(X.shape[0]),
       "guarantee": res.guarantee.to_dict() if res.guarantee else None}
for head in ("logreg", "mlp"):
    clf = make_classifier(head, random_state=seed).fit(Xg, yg)
    row[f"acc_{head}"] = 100.0 * clf.score(Xte, te.y)
row["wall_seconds"] = time.perf_counter() - t0
tag = "none" if eps is None else f"{eps:g}"
row["grid"] = str(gen.save_grid(res.generator, f"benchmarks/dpswd/results/dpswd-gen-marginals{'-usps' if domain == 'usps' else ''}{'-perclass' if design == 'per-class' else ''}{f'-floor{cfg.floor:g}' if cfg.floor else ''}-eps{tag}-seed{seed}.png", rng))
json.dump(row, open(out, "w"), indent=1, default=str)
print(json.dumps({k: v for k, v in row.items() if k != "guarantee"}))
