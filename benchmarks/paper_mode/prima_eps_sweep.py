"""Issue 22: PRIMA paper mode on DeCAF6 D->W, the paper's epochs at eps = 2 (21), noise scaled by eps only.

Usage: python benchmarks/paper_mode/prima_eps_sweep.py [EPS ...]  (default 8 32 128; seed 0)
"""
import sys, time, numpy as np, torch
torch.set_num_threads(1)
from dpadapt.bench.common import cached_pair
from dpadapt.alignment import PRIMA
pair = cached_pair("decaf6", "dslr", "webcam")
for eps in [float(e) for e in (sys.argv[1:] or ["8", "32", "128"])]:
    for seed in [0]:
        t0 = time.time()
        est = PRIMA(epsilon=eps, delta=1e-5, classes=tuple(range(10)), random_state=seed, source_release="dpsgd_heads",
                    epochs=21, psd_repair="shrink", privacy_mode="paper", log_counts=False, partition="forward")
        est.fit_domains(pair.Xs, pair.ys, pair.Xt)
        print("D->W eps", eps, "seed", seed, "acc", round(est.score(pair.Xt_test, pair.yt_test), 4),
              "z", round(est.plan_.calibration["noise_multiplier"], 3), "s", round(time.time() - t0), flush=True)
