"""Sound-mode DPDA with the identity projection (M = I) on DeCAF6 D↔W, logreg, 3 seeds.

Usage: PYTHONPATH=src python benchmarks/dpot/dpot_identity_probe.py  (writes benchmarks/dpot/results/dpot-identity-probe.json)
"""
import logging, warnings, json; logging.getLogger("absl").setLevel(logging.ERROR); warnings.simplefilter("ignore")
import numpy as np
from dpadapt.datasets import load_pair
from dpadapt.transport import DPOTAdapter
out = []
for s, t in [("dslr","webcam"), ("webcam","dslr")]:
    p = load_pair("decaf6", s, t)
    for eps in [20, 50, 100]:
        for labels in ["rr", "public"]:
            accs = []
            for seed in range(3):
                e = DPOTAdapter(epsilon=eps, projection="identity", labels=labels, head="logreg", random_state=seed).fit_domains(p.Xs, p.ys, p.Xt)
                accs.append(e.score(p.Xt, p.yt))
            out.append(dict(task=f"{s[0].upper()}->{t[0].upper()}", eps=eps, labels=labels, acc=accs, sigma=e.release_.params["sigma"]))
            print(out[-1]["task"], eps, labels, f"{100*np.mean(accs):.1f} ± {100*np.std(accs):.1f}", round(out[-1]["sigma"],3), flush=True)
json.dump(out, open("benchmarks/dpot/results/dpot-identity-probe.json", "w"), indent=1)
