import sys, numpy as np, time
from dpadapt.bench.common import cached_pair
from dpadapt.classstats.adapt import *
from dpadapt.privacy.mechanisms import class_statistics, random_streams
from dpadapt.privacy.families.classstats import class_statistics_plan
ds, s, t = sys.argv[1:4]; eps=float(sys.argv[4]); k=int(sys.argv[5]) if len(sys.argv)>5 else 20
import os; log1p = ds.startswith("bow") or os.environ.get("LOG1P")=="1"
p = cached_pair(ds, s, t)
classes = np.unique(p.ys)
Mt = row_map(p.Xt, log1p); mean, comp = fit_basis(Mt, k)
Zt = project(Mt, mean, comp); Zs = project(row_map(p.Xs, log1p), mean, comp)
Ztest = project(row_map(p.Xt_test, log1p), mean, comp)
delta = 1/(1.2*len(p.ys))
sigma, g = class_statistics_plan(eps, delta, classes=tuple(classes))
res = {r: [] for r in REFINEMENTS}
for seed in range(5):
    _, noise = random_streams(seed)
    st = class_statistics(Zs, np.searchsorted(classes, p.ys), len(classes), sigma=sigma, relation="replace_one", noise=noise)
    c0, pr = prototypes_from_release(st.sums, st.counts)
    for r in REFINEMENTS:
        c, h = refine(Zt, c0, pr, r, random_state=seed)
        m = ClassStatsModel(classes, log1p, mean, comp, c, h)
        res[r].append(m.score(p.Xt_test, p.yt_test))
print(ds,s,t,eps,k, {r: f"{100*np.mean(v):.1f}±{100*np.std(v):.1f}" for r,v in res.items()})
