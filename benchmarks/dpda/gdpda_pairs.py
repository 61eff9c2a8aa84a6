"""G-DPDA with the round-3 defaults (σ calibrated to the paper's budgets over 20 epochs, C = 1, B = 128,
lr = 0.2 — chosen on electronics→kitchen by source-train accuracy) on Amazon bow5000 pairs.
Usage: python benchmarks/dpda/gdpda_pairs.py OUT.jsonl SEED S:T ..."""

import json
import sys
import time

import torch

from dpadapt.bench.common import cached_pair
from dpadapt.deep.dpda import GDPDA

torch.set_num_threads(1)
out, seed = sys.argv[1], int(sys.argv[2])
for st in sys.argv[3:]:
    s, t = st.split(":")
    pair = cached_pair("bow5000", s, t)
    t0 = time.perf_counter()
    m = GDPDA(classes=(0, 1), epsilon=4.0, delta=1e-5, source_epsilon=8.0, source_delta=2e-5, epochs=20,
              random_state=seed).fit_domains(pair.Xs, pair.ys, pair.Xt)
    g_t, g_s = m.guarantees_["target"], m.guarantees_["source"]
    row = {"pair": f"{s}->{t}", "seed": seed, "steps": m.n_steps_, "config": {k: v for k, v in m.get_params().items() if k != "network"},
           "eps_target": g_t.epsilon, "eps_source": g_s.epsilon, "sigma_target": g_t.details["noise_multiplier"],
           "sigma_source": g_s.details["noise_multiplier"], "target_test_acc": float(m.score(pair.Xt_test, pair.yt_test)),
           "seconds": time.perf_counter() - t0}
    with open(out, "a") as f:
        f.write(json.dumps(row, default=str) + "\n")
    print(json.dumps(row, default=str), flush=True)
