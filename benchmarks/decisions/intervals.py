"""The prevalence intervals of ``dpadapt.sound.scores.INTERVALS`` on rows of the suite's ``sound-scores`` task, and the
outcome of the rule "an interval that states the shift between units" of this folder's README.

    python benchmarks/decisions/intervals.py results/decisions-intervals.json.gz \\
        --synthetic results/decisions-intervals-synthetic.json.gz --out results/decisions-intervals.md

Each candidate is rebuilt from what a row records for the default calibration (``platt``) — every estimator's
``resample`` interval and point estimate, and the mixture-fit residual r and class separation d of the default
estimator — exactly as :func:`dpadapt.sound.scores.estimate` forms it (``hull``: of ``match``, ``em``, ``mean``;
``residual``: widened by r / d; ``residual-tv``: by r; clipped to [0, 1]). Target labels serve for scoring only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from dpadapt.sound import scores

CAL = "platt"
EPS_ORDER = ("1.0", "4.0", "None")
#: The rule's width bounds (README): PhysioNet mean width per ε, and the synthetic family's at ε = 4.
WIDTH_BOUND = {"1.0": 0.25, "4.0": 0.20, "None": 0.20}
SYNTHETIC_WIDTH_BOUND = 0.20
COVERAGE_BAR = 0.85


def interval(row: dict, name: str, method: str = scores.PREVALENCE) -> tuple[float, float]:
    """(low, high) of candidate ``name`` around ``method``'s estimate, from one row."""
    key = f"{CAL}|{method}|"
    low, high = row[key + "low"], row[key + "high"]
    if name == "hull":
        for m in scores.HULL:
            k = f"{CAL}|{m}|"
            low, high = min(low, row[k + "low"], row[k + "prevalence"]), max(high, row[k + "high"], row[k + "prevalence"])
    elif name.startswith("residual"):
        r, d = row[key + "residual"], row[key + "separation"]
        w = r if name == "residual-tv" else (r / d if d > 0 else 1.0)
        low, high = max(low - w, 0.0), min(high + w, 1.0)
    return low, high


def eps_of(row: dict) -> str:
    e = row.get("epsilon_target")
    return "None" if e is None or not math.isfinite(float(e)) else str(float(e))


def summarise(rows: list[dict]) -> dict:
    """{candidate: {ε: (coverage, mean width, runs)}}."""
    out: dict = defaultdict(dict)
    for name in scores.INTERVALS:
        by = defaultdict(list)
        for row in rows:
            if row.get("error") or f"{CAL}|{scores.PREVALENCE}|low" not in row:
                continue
            low, high = interval(row, name)
            t = row[f"{CAL}|{scores.PREVALENCE}|true_rate"]
            by[eps_of(row)].append((float(low <= t <= high), high - low))
        for e, v in by.items():
            a = np.asarray(v)
            out[name][e] = (float(a[:, 0].mean()), float(a[:, 1].mean()), len(v))
    return out


def load(path: str) -> list[dict]:
    """Rows of a result file, as written or gzip-compressed (``.gz``)."""
    raw = Path(path).read_bytes()
    return json.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("rows")
    ap.add_argument("--synthetic", default=None)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    phys = summarise([r for r in load(args.rows) if str(r["task"]).startswith("physionet:")])
    syn = summarise(load(args.synthetic)) if args.synthetic else {}
    lines = ["| interval | PhysioNet coverage ε = 1 / 4 / None | mean width ε = 1 / 4 / None | runs | "
             "synthetic coverage ε = 1 / 4 / None | synthetic mean width ε = 1 / 4 / None | admissible |",
             "|---|---|---|---|---|---|---|"]
    admissible, overall = {}, {}
    for name in scores.INTERVALS:
        p, s = phys[name], syn.get(name, {})
        ok = all(e in p and p[e][1] <= WIDTH_BOUND[e] for e in EPS_ORDER) and \
            ("4.0" in s and s["4.0"][1] <= SYNTHETIC_WIDTH_BOUND)
        admissible[name] = ok
        overall[name] = (float(np.mean([p[e][0] for e in EPS_ORDER if e in p])),
                         float(np.mean([p[e][1] for e in EPS_ORDER if e in p])))

        def cell(d, i):
            return " / ".join(f"{d[e][i]:.2f}" if e in d else "–" for e in EPS_ORDER)

        lines.append(f"| `{name}` | {cell(p, 0)} | {cell(p, 1)} | {' / '.join(str(p[e][2]) for e in EPS_ORDER if e in p)} | "
                     f"{cell(s, 0)} | {cell(s, 1)} | {'yes' if ok else 'no'} |")
    ranked = sorted((n for n in scores.INTERVALS if admissible[n]), key=lambda n: (-overall[n][0], overall[n][1]))
    chosen = "resample"
    if ranked:
        best = ranked[0]
        ties = [n for n in ranked if overall[best][0] - overall[n][0] <= 0.02]
        chosen = min(ties, key=lambda n: (overall[n][1], n != "resample"))
    default = chosen if all(phys[chosen].get(e, (0,))[0] >= COVERAGE_BAR for e in EPS_ORDER) else "resample"
    lines += ["", f"Rule: chosen among the admissible **`{chosen}`** (PhysioNet coverage {overall[chosen][0]:.2f}, "
              f"mean width {overall[chosen][1]:.2f}); default → **`{default}`** "
              f"({'coverage ≥ 0.85 at every ε' if default == chosen and chosen != 'resample' else 'the chosen candidate does not reach coverage 0.85 at every ε, or none widened is admissible'})."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
