"""Issue 22, discrepancy Fig. 2: does the data scale (feature variance σ²) explain the missing private gains?

Controlled experiment: the suite's exact pipeline (single-stage noisy FW, r = 1.5, Λ = 2, K = 1000,
δ = 1/8000, last iterate) on the spec's data model with only σ² varied. Prints test MSE of
public-only, oracle and single-stage at ε ∈ {∞, 16, 4, 1}, n ∈ {1000, 8000}, 3 seeds.
Usage: python benchmarks/paper_mode/discrepancy_fig2_scale.py
"""
import math
import warnings

import numpy as np

from dpadapt.datasets.synthetic import make_bms_regression
from dpadapt.discrepancy import private
from dpadapt.discrepancy.stage2 import weighted_regression
from dpadapt.validation import PrivacyWarning

M, D, K, DELTA, R, LAMBDA = 1000, 10, 1000, 1 / 8000, 1.5, 2.0
warnings.simplefilter("ignore", PrivacyWarning)
for noise_var in (1 / (9 * D), 1 / (3 * D), 1 / D):
    for n in (1000, 8000):
        out = {}
        for seed in range(3):
            data = make_bms_regression(m=M, n=n, d=D, n_test=10_000, noise_var=noise_var, random_state=10_007 * seed + n)

            def mse(w):
                return float(np.mean((data["X_test"] @ w - data["y_test"]) ** 2))

            out.setdefault("public-only", []).append(mse(weighted_regression(np.full(M, 1 / M), data["Xs"], data["ys"], Lambda=LAMBDA)))
            out.setdefault("oracle", []).append(mse(weighted_regression(np.full(n, 1 / n), data["Xt"], data["yt"], Lambda=LAMBDA)))
            for eps in (math.inf, 16.0, 4.0, 1.0):
                res = private.single_stage_frank_wolfe(data["Xt"], data["Xs"], data["ys"], eps, DELTA, r=R, Lambda=LAMBDA, K=K,
                                                       selection="last", random_state=np.random.default_rng([seed, n]))
                out.setdefault(f"ss eps={eps:g}", []).append(mse(res.w))
        pub = np.mean(out["public-only"])
        print(f"sigma2={noise_var:.4f} n={n} " + "  ".join(f"{k}: {np.mean(v):.4f} ({np.mean(v) / pub:.2f}x)" for k, v in out.items()), flush=True)
