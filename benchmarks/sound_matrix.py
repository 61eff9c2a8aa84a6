"""Join ``dpadapt bench sound`` result files run in parts into one matrix: rows, markdown, heat maps.

    python benchmarks/sound_matrix.py OUT.json PART.json [PART.json ...]

Later parts win for a (task, method, ε, seed) present twice. Writes OUT.json (+ .csv), OUT.md and the
two heat maps (:func:`dpadapt.bench.suites.sound_report.write_report`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from dpadapt.bench import load_rows, write_rows
from dpadapt.bench.suites.sound_report import write_report


def main(out: str, *parts: str) -> int:
    rows: dict[tuple, dict] = {}
    for part in parts:
        for r in load_rows(part):
            rows[(r["task"], r["method"], r["epsilon_target"], r["seed"])] = r
    merged = list(rows.values())
    write_rows(merged, out)
    for path in write_report(merged, Path(out)):
        print("written:", path)
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
