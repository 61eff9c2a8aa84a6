"""The done-when comparison of the decisions suite over the 12 PhysioNet pairs (``--cases``: or the 3 → 1 cases, Heart).

    python benchmarks/decisions/compare.py benchmarks/decisions/results/decisions.json \\
        benchmarks/decisions/results/decisions-more-seeds.json benchmarks/decisions/results/decisions-baselines-all.json \\
        --out benchmarks/decisions/results/decisions-comparison.md

Per pair: the balanced rule's balanced accuracy (mean over seeds ± its standard error) of ``SoundDA`` at the chosen
defaults and of every DP baseline and non-private source-only with the same rule, and the verdict of the issue's
criterion: SoundDA ≥ baseline − max(1 point, 2 SE), SE the standard error of the difference of the two means (seeds
are independent draws of the release noise; a row with one seed has no SE and is judged against 1 point). Rows of
the same (task, method, ε, seed) in several files are counted once (the first file wins).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from dpadapt.bench.runner import load_rows
from dpadapt.sound.calibrate import CALIBRATION, PREVALENCE

BASELINES = ("dp-ncm", "dp-lr", "dp-lsq", "dpot-cs", "source-only")


def _key(method: str) -> str:
    return f"{CALIBRATION if method == 'sound' else 'none'}|{PREVALENCE}|balanced_ba"


#: Which tasks a comparison covers: the 12 PhysioNet unit pairs, the four three-units → one-unit cases, the Heart pairs.
CASES = {"pairs": lambda t: t.startswith("physionet") and "+" not in t,
         "pooled": lambda t: t.startswith("physionet") and "+" in t,
         "heart": lambda t: t.startswith("heart")}


def load(paths: list[str], epsilon: float, cases: str = "pairs") -> dict[tuple[str, str], list[float]]:
    """(task, method) → balanced accuracies (one per seed) of the tasks of ``cases`` (:data:`CASES`) at ``epsilon``
    (non-private: ∞)."""
    seen, out = set(), defaultdict(list)
    for path in paths:
        for r in load_rows(path):
            task, method = r["task"], r["method"]
            eps = float(r["epsilon_target"])
            if r.get("error") is not None or not CASES[cases](task):
                continue
            if not (eps == epsilon or (method == "source-only" and not math.isfinite(eps))):
                continue
            ident = (task, method, eps, r["seed"])
            if ident in seen or r.get(_key(method)) is None:
                continue
            seen.add(ident)
            out[(task, method)].append(100 * float(r[_key(method)]))
    return out


def _mean_se(v: list[float]) -> tuple[float, float]:
    a = np.asarray(v, dtype=float)
    return float(a.mean()), (float(a.std(ddof=1) / math.sqrt(a.size)) if a.size > 1 else math.nan)


def table(cells: dict[tuple[str, str], list[float]]) -> list[str]:
    tasks = sorted({t for t, m in cells if m == "sound"})
    out = ["| pair | SoundDA (seeds) | " + " | ".join(BASELINES) + " | SoundDA ≥ every DP baseline − max(1, 2 SE)? |",
           "|---|---|" + "---|" * len(BASELINES) + "---|"]
    verdicts, means = [], defaultdict(list)
    for task in tasks:
        s_mean, s_se = _mean_se(cells[(task, "sound")])
        means["sound"].append(s_mean)
        row, fails = [], []
        for b in BASELINES:
            if (task, b) not in cells:
                row.append("—")
                continue
            b_mean, b_se = _mean_se(cells[(task, b)])
            means[b].append(b_mean)
            row.append(f"{b_mean:.1f}" + ("" if math.isnan(b_se) else f" ± {b_se:.1f}") + f" ({len(cells[(task, b)])})")
            if b != "source-only":
                se = math.sqrt(np.nansum([s_se**2, b_se**2])) if not (math.isnan(s_se) and math.isnan(b_se)) else 0.0
                if s_mean < b_mean - max(1.0, 2.0 * se):
                    fails.append(f"{b} by {b_mean - s_mean:.1f}")
        verdicts.append(not fails)
        out.append(f"| {task.split(':', 1)[1]} | {s_mean:.1f}" + ("" if math.isnan(s_se) else f" ± {s_se:.1f}") +
                   f" ({len(cells[(task, 'sound')])}) | " + " | ".join(row) + f" | {'yes' if not fails else 'no: ' + ', '.join(fails)} |")
    out.append(f"| mean over pairs | {np.mean(means['sound']):.1f} | " +
               " | ".join(f"{np.mean(means[b]):.1f}" if means[b] else "—" for b in BASELINES) +
               f" | met on {sum(verdicts)} of {len(verdicts)} pairs |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--cases", choices=sorted(CASES), default="pairs")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    lines = [f"# SoundDA against the DP baselines, balanced rule, ε = {args.epsilon:g} (balanced accuracy, %, mean ± SE (seeds))",
             "", *table(load(args.files, args.epsilon, args.cases)), ""]
    text = "\n".join(lines)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
