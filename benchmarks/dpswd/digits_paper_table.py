"""Markdown table of ``results/digits-paper.jsonl`` (rows of the ``dpswd-digits-paper`` suite): mean ± sample
std over seeds per task and method, with the paper's value, the ε spent, releases and the wall time per run.
Usage: python benchmarks/dpswd/digits_paper_table.py [results/digits-paper.jsonl]"""

import collections
import json
import statistics
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "benchmarks/dpswd/results/digits-paper.jsonl"
rows = collections.defaultdict(list)
for line in open(path):
    r = json.loads(line)
    rows[(r["task"], r["method"], r["mode"])].append(r)


def ms(values):
    m = statistics.mean(values)
    return f"{m:.2f} ± {statistics.stdev(values):.2f}" if len(values) > 1 else f"{m:.2f}"


print("| task | method | mode | accuracy % (mean ± std) | seeds | paper | ε spent | releases | steps | minutes per run (max) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for (task, method, mode), rs in sorted(rows.items()):
    eps = {round(r["epsilon_spent"], 2) for r in rs if r.get("epsilon_spent") is not None}
    rel = {r.get("releases") for r in rs if r.get("epsilon_spent") is not None}  # private rows only
    print(f"| {task} | {method} | {mode} | {ms([r['accuracy'] for r in rs])} | {','.join(str(r['seed']) for r in rs)} | "
          f"{rs[0].get('paper') or '—'} | {'/'.join(map(str, sorted(eps))) or '—'} | {'/'.join(map(str, sorted(rel))) or '—'} | "
          f"{rs[0].get('steps', '—')} | {max(r['seconds'] for r in rs) / 60:.1f} |")
