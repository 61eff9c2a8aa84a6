"""G-DPDA probe on Amazon bow5000 pairs at the paper's budgets (target ε=4, source ε=8): which knob keeps
sigma=8 at chance. Reports target-test accuracy AND source-train accuracy (the selection criterion that
uses no target label). Usage: python benchmarks/dpda/gdpda_probe.py SOURCE TARGET EPOCHS OUT.json VARIANT..."""

import json
import sys
import time

import numpy as np
import torch

from dpadapt.bench.common import cached_pair
from dpadapt.deep.dpda import GDPDA

torch.set_num_threads(2)
VARIANTS = {
    "paper-defaults": dict(noise_multiplier=8.0, max_grad_norm=4.0, lr=0.05, batch_size=32),
    "calibrated-C4": dict(noise_multiplier=None, max_grad_norm=4.0, lr=0.05, batch_size=32),
    "calibrated-C1-B128": dict(noise_multiplier=None, max_grad_norm=1.0, lr=0.2, batch_size=128),
    "calibrated-C0.1-B128": dict(noise_multiplier=None, max_grad_norm=0.1, lr=2.0, batch_size=128),
}
s, t, epochs, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
pair = cached_pair("bow5000", s, t)
rows = []
for name in sys.argv[5:]:
    t0 = time.perf_counter()
    m = GDPDA(classes=(0, 1), epsilon=4.0, delta=1e-5, source_epsilon=8.0, source_delta=2e-5, epochs=epochs,
              random_state=0, **VARIANTS[name]).fit_domains(pair.Xs, pair.ys, pair.Xt)
    row = {"pair": f"{s}->{t}", "variant": name, **VARIANTS[name], "epochs": epochs, "steps": m.n_steps_,
           "target_sigma": m.guarantees_["target"].details["noise_multiplier"],
           "source_sigma": m.guarantees_["source"].details["noise_multiplier"],
           "eps_target": m.guarantees_["target"].epsilon, "eps_source": m.guarantees_["source"].epsilon,
           "source_train_acc": float(m.score(pair.Xs, pair.ys)), "target_test_acc": float(m.score(pair.Xt_test, pair.yt_test)),
           "seconds": time.perf_counter() - t0}
    rows.append(row)
    print(json.dumps(row), flush=True)
json.dump(rows, open(out, "w"), indent=1)
