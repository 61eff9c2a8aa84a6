"""Markdown table of G-DPDA pair rows (mean ± std over seeds) beside the paper's G-DPDA.

Usage: python benchmarks/dpda/gdpda_table.py [ROWS.jsonl ...]  (default results/gdpda-pairs-r3.jsonl; several files are pooled)
"""

import collections
import json
import sys

import numpy as np

from dpadapt.bench.suites.dpda import PAPER_COLUMN, TABLE_V

rows = collections.defaultdict(list)
for path in sys.argv[1:] or ["benchmarks/dpda/results/gdpda-pairs-r3.jsonl"]:
    for line in open(path):
        r = json.loads(line)
        rows[r["pair"]].append(r)
short = {"books": "B", "dvd": "D", "electronics": "E", "kitchen": "K"}
print("| pair | G-DPDA round 3 (ε_t 4 / ε_s 8 spent) | σ target / source | seeds | paper G-DPDA |")
print("|---|---|---|---|---|")
means = []
for pair in sorted(rows):
    s, t = pair.split("->")
    acc = np.array([r["target_test_acc"] for r in rows[pair]])
    eps = (max(r["eps_target"] for r in rows[pair]), max(r["eps_source"] for r in rows[pair]))
    paper = TABLE_V[(s, t)][PAPER_COLUMN["gdpda"]]
    dev = " (dev pair)" if pair == "electronics->kitchen" else ""
    sig = f"{rows[pair][0]['sigma_target']:.3f} / {rows[pair][0]['sigma_source']:.3f}"
    print(f"| {short[s]}→{short[t]}{dev} | {acc.mean():.3f} ± {acc.std():.3f} ({eps[0]:.2f} / {eps[1]:.2f}) | {sig} | {len(acc)} | {paper:.3f} |")
    means.append((acc.mean(), paper, pair))
m = np.array([a for a, _, _ in means])
print(f"\nmean over {len(m)} pairs: {m.mean():.3f} (paper {np.mean([p for _, p, _ in means]):.3f}); "
      f"without the dev pair: {np.mean([a for a, _, p in means if p != 'electronics->kitchen']):.3f}")
