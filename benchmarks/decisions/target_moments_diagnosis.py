"""Why the target scale falls short (after the rule's run; target labels for diagnosis only).

    OMP_NUM_THREADS=1 nice -n 10 python benchmarks/decisions/target_moments_diagnosis.py \\
        --out benchmarks/decisions/results/target-moments-diagnosis.md

Noise-free, every development pair: the released separation Δ of the tempered log-likelihood ratio g (= the source
model's within-class variance), the target's TRUE class moments of g (separation, pooled within-class variance, from
its labels), and what ``moments`` reads from the unlabelled rows (π̂, v̂_t), beside the true rate. The target's odds
slope the labels imply under the same Gaussian model is Δ_t/v_t; ``moments`` states Δ/v̂_t.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prior_shift_rule import fit_cell

from dpadapt.bench.suites import decisions as D
from dpadapt.bench.suites.sound_rows import HEART_PAIRS, PHYSIONET_PAIRS
from dpadapt.sound import target_scale


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    lines = ["| pair | Δ (source) | Δ_t (true) | v_t (true) | v̂_t (moments) | π̂ | true rate | slope Δ_t/v_t (true) | "
             "slope Δ/v̂_t (moments) |", "|---|---|---|---|---|---|---|---|---|"]
    for spec in (p for p in (*PHYSIONET_PAIRS, *HEART_PAIRS, *D.SYNTHETIC_PAIRS) if p.available()):
        pair, y, model = fit_cell(spec, None, 60)
        m = model.model_
        g = target_scale.llr(m, m.row_map()(pair.Xt))
        d = m.details["llr_separation"]
        m0, m1 = g[y == 0].mean(), g[y == 1].mean()
        vt = (((g[y == 0] - m0) ** 2).sum() + ((g[y == 1] - m1) ** 2).sum()) / len(g)
        fit = m.details["target_scale"]
        lines.append(f"| {spec.task} | {d:.2f} | {m1 - m0:.2f} | {vt:.2f} | {fit['spread'] or float('nan'):.2f} | "
                     f"{m.details['prevalence']['prior'][1]:.3f} | {y.mean():.3f} | {(m1 - m0) / vt:.2f} | "
                     f"{fit['slope'] or float('nan'):.2f} |")
    Path(args.out).write_text("# Why the target scale falls short: the target's class moments of g (noise-free)\n\n"
                              f"Written by `{Path(__file__).name}`.\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
