"""Issue 22: PRIMA paper mode on DeCAF6 D->W, the paper's epochs at eps = 2 (21), noise scaled by eps only."""
import sys, time, numpy as np, torch
torch.set_num_threads(1)
from dpadapt.bench.common import cached_pair
from dpadapt.alignment import PRIMA
pair = cached_pair("decaf6", "dslr", "webcam")
for eps in [8.0, 32.0, 128.0]:
    for seed in [0, 1]:
        t0 = time.time()
        est = PRIMA(epsilon=eps, delta=1e-5, classes=tuple(range(10)), random_state=seed, source_release="dpsgd_heads",
                    epochs=21, psd_repair="shrink", privacy_mode="paper", log_counts=False, partition="forward")
        est.fit_domains(pair.Xs, pair.ys, pair.Xt)
        print("D->W eps", eps, "seed", seed, "acc", round(est.score(pair.Xt_test, pair.yt_test), 4),
              "z", round(est.plan_.calibration["noise_multiplier"], 3), "s", round(time.time() - t0), flush=True)
