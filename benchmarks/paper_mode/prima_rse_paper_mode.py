"""Issue 22: PRIMA paper mode at eps = 2 with the paper's RSE step (random subspaces, p = 512) instead of forward selection.

Usage: python benchmarks/paper_mode/prima_rse_paper_mode.py SOURCE TARGET [SEED ...]  (default seed 0; eps 2, then no noise)
"""
import sys, time, torch
torch.set_num_threads(1)
from dpadapt.bench.common import cached_pair
from dpadapt.bench.suites.prima import paper_epochs
from dpadapt.alignment import PRIMA
s, t = sys.argv[1], sys.argv[2]
seeds = [int(x) for x in sys.argv[3:]] or [0]
pair = cached_pair("decaf6", s, t)
for seed, eps in [(seed, eps) for seed in seeds for eps in (2.0, None)]:
    t0 = time.time()
    est = PRIMA(epsilon=eps, delta=1e-5 if eps else None, classes=tuple(range(10)), random_state=seed, source_release="dpsgd_heads",
                epochs=paper_epochs(len(pair.ys), 2.0), psd_repair="shrink", privacy_mode="paper", log_counts=False,
                partition="random", subspace_size=512)
    est.fit_domains(pair.Xs, pair.ys, pair.Xt)
    print(s, t, "RSE p=512 seed", seed, "eps", eps, "acc", round(est.score(pair.Xt_test, pair.yt_test), 4), "s", round(time.time() - t0), flush=True)
