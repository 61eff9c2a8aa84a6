"""Issue 20: run ``dpadapt bench scale`` (full) once and summarise it against the issue's targets.

Rule (fixed before the run, nothing tuned on its output): sizes, repeats, k = 20 and 10 classes are
those of :mod:`dpadapt.bench.suites.scale`; the release is compared with the one-pass floor as the
median of alternated runs (5 where the issue sets a ratio target, 1 for the 8 GB / 5 GB inputs);
the slope in n is the least-squares slope of log(release time) on log(n) at d = 64, n = 1e4…1e7;
targets: ratio ≤ 1.5 at 1e6 × 64 and 1e5 × 1024, slope ≤ 1.05, peak traced memory ≤ 300 MB at
1e6 × 1024 and 1e7 × 64, adapt ≤ 5 s and basis ≤ 3 s at 1e5 × 1024.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 python benchmarks/scale/scale.py [--quick]

Writes benchmarks/scale/scale.json (rows), benchmarks/scale/scale_loglog.png and prints a summary.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dpadapt.bench import run_suite
from dpadapt.bench.scale import loglog_slope

HERE = Path(__file__).resolve().parent


def main(quick: bool) -> None:
    out = HERE / ("scale_quick.json" if quick else "scale.json")
    rows = run_suite("scale", seeds=1, quick=quick, out=str(out), progress=False)
    rel = sorted((r for r in rows if r["method"] == "release" and r.get("error") is None), key=lambda r: (r["d"], r["n"]))
    for r in rows:
        if r.get("error"):
            print("ERROR", r["task"], r["method"], r["error"])
    print(f"{'task':<14}{'release s':>11}{'floor s':>10}{'ratio':>8}{'peak MB':>9}{'input MB':>10}")
    for r in rel:
        print(f"{r['task']:<14}{r['release_s']:>11.3f}{r['floor_s']:>10.3f}{r['value']:>8.2f}{r['peak_mb']:>9.1f}{r['input_mb']:>10.0f}")
    d64 = [r for r in rel if r["d"] == 64]
    print(f"slope in n at d=64: release {loglog_slope([r['n'] for r in d64], [r['release_s'] for r in d64]):.3f}, "
          f"floor {loglog_slope([r['n'] for r in d64], [r['floor_s'] for r in d64]):.3f}")
    for r in rows:
        if r["method"] in ("receiver", "dask-release") and r.get("error") is None:
            print(r["method"], r["task"], {k: round(v, 3) for k, v in r.items() if k.endswith("_s") or k == "value"})
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for d in sorted({r["d"] for r in rel}):
        part = [r for r in rel if r["d"] == d]
        ax.loglog([r["n"] for r in part], [r["release_s"] for r in part], "o-", label=f"release d={d}")
        ax.loglog([r["n"] for r in part], [r["floor_s"] for r in part], "x--", label=f"one-pass floor d={d}")
    ax.set_xlabel("source rows n")
    ax.set_ylabel("seconds (median)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / ("scale_loglog_quick.png" if quick else "scale_loglog.png"), dpi=110)
    json.dump(rows, open(out, "w"), indent=1, default=str)


if __name__ == "__main__":
    main("--quick" in sys.argv)
