"""Wall time of DPOT-DA vs OTDA in the same process, split into release / transport / classifier.

Usage: PYTHONPATH=src python benchmarks/dpot/dpot_timing.py benchmarks/dpot/results/dpot-timing.json
"""
import logging, warnings, time, json, sys
logging.getLogger("absl").setLevel(logging.ERROR); warnings.simplefilter("ignore")
import numpy as np
from dpadapt.datasets import load_pair
from dpadapt.transport import DPOTAdapter, OTDA
rows = []
for s, t in [("dslr", "webcam"), ("webcam", "dslr")]:
    p = load_pair("decaf6", s, t)
    for head in ("logreg", "mlp"):
        for rep in range(3):
            for name, est in [("otda", OTDA(head=head, random_state=rep)),
                              ("dpda-sound", DPOTAdapter(epsilon=20, head=head, random_state=rep)),
                              ("dpda-paper", DPOTAdapter(epsilon=20, privacy_mode="paper", head=head, random_state=rep))]:
                t0 = time.perf_counter(); est.fit_domains(p.Xs, p.ys, p.Xt); total = time.perf_counter() - t0
                rows.append(dict(task=f"{s[0].upper()}->{t[0].upper()}", head=head, method=name, seed=rep, total=total, acc=est.score(p.Xt, p.yt), **est.seconds_))
json.dump(rows, open(sys.argv[1], "w"), indent=1)
import collections
g = collections.defaultdict(list)
for r in rows: g[(r["task"], r["head"], r["method"])].append(r)
print("| task | head | method | total s | release | transport | classifier | total / OTDA |")
print("|---|---|---|---|---|---|---|---|")
for (task, head, m), rs in sorted(g.items()):
    o = np.median([r["total"] for r in g[(task, head, "otda")]])
    med = lambda k: np.median([r[k] for r in rs])
    print(f"| {task} | {head} | {m} | {med('total'):.2f} | {med('release'):.2f} | {med('transport'):.2f} | {med('classifier'):.2f} | {med('total')/o:.2f}× |")
