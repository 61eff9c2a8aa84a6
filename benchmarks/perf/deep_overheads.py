"""Issue 13 item 6: DP training overheads on the digits CNN, measured in the same process.

Per training step (median of REPS interleaved repeats of one epoch of STEPS steps, the first STEPS·128
rows of the M→U ``dpswd-digits-paper`` data, B = 128): DANN vs DPDA (sound, ε = 8, δ = 1e-5: per-example clipping of
the target's domain-loss gradients + Gaussian noise) on the paper's CNN, and SWD vs sound DP-SWD
(per-step design: noisy target projections every step) vs the marginals design (source-only epoch, one
release, then as many source-side adaptation steps; time per step of the whole run). Usage: python benchmarks/perf/deep_overheads.py OUT.json [STEPS] [REPS]
Threads: ``$DPADAPT_TORCH_THREADS`` (default 2).
"""

import json
import os
import statistics
import sys
import time

import torch
from torch import nn

from dpadapt.bench.suites.dpswd import _digits_full
from dpadapt.deep.dann import DANN, DANNNetwork
from dpadapt.deep.dpda import DPDA
from dpadapt.deep.swd_da import DigitsFeatureExtractor, DPSWDAdapter, digits_classifier

torch.set_num_threads(int(os.environ.get("DPADAPT_TORCH_THREADS", "2")))
out = sys.argv[1]
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 100
REPS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
Xs, ys, Xt, _, _, _ = _digits_full("mnist", "usps")
B = 128
n = min(STEPS * B, Xt.shape[0])  # one epoch of every run = n / B steps
Xs, ys, Xt = Xs[:n], ys[:n], Xt[:n]


def network(n_features: int, n_classes: int) -> DANNNetwork:
    return DANNNetwork(DigitsFeatureExtractor(), digits_classifier(n_classes),
                       nn.Sequential(nn.Linear(320, 100), nn.ReLU(), nn.Linear(100, 2)))


def dann_like(cls, **kw):
    model = cls(network=network, epochs=1, min_steps=0, batch_size=B, lr=0.05, lr_domain=0.01, random_state=0, **kw)
    model.fit_domains(Xs, ys, Xt)
    return model.train_log_.seconds / model.train_log_.steps


def swd_like(**kw):
    params = dict(network="digits", epochs=1, min_steps=0, start_align=0, batch_size=B, lr=5e-4, lam=0.05, k=200,
                  random_state=0)
    params.update(kw)
    model = DPSWDAdapter(**params).fit_domains(Xs, ys, Xt)
    return model.train_result_.seconds / model.train_result_.steps


RUNS = {
    "dann": lambda: dann_like(DANN),
    "dpda-sound": lambda: dann_like(DPDA, epsilon=8.0, delta=1e-5),
    "swd": lambda: swd_like(epsilon=None),
    "dpswd-sound-per-step": lambda: swd_like(epsilon=10.0, delta=1e-5, design="per-step"),
    "dpswd-sound-marginals": lambda: swd_like(epsilon=10.0, delta=1e-5, design="marginals", adapt_steps=n // B),
}
times = {name: [] for name in RUNS}
for rep in range(REPS):
    for name, run in RUNS.items():
        times[name].append(run())
        print(rep, name, round(1000 * times[name][-1], 1), "ms/step", flush=True)
med = {name: statistics.median(v) for name, v in times.items()}
row = {"steps": STEPS, "reps": REPS, "batch_size": B, "threads": torch.get_num_threads(),
       "ms_per_step": {k: 1000 * v for k, v in med.items()}, "all_ms": {k: [1000 * t for t in v] for k, v in times.items()},
       "dpda_over_dann": med["dpda-sound"] / med["dann"], "dpswd_per_step_over_swd": med["dpswd-sound-per-step"] / med["swd"],
       "dpswd_marginals_over_swd": med["dpswd-sound-marginals"] / med["swd"]}
json.dump(row, open(out, "w"), indent=1)
print(json.dumps({k: v for k, v in row.items() if k != "all_ms"}, indent=1))
