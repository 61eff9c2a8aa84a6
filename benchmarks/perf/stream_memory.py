"""Peak memory and time of ``dpadapt release sound`` on a 1e6 × 64 table in every format, plain and through a schema.

Rule (fixed before the run; nothing is tuned on its output):

* data: n rows (default 1e6) × 64 features, 10 classes with class-dependent means, values rounded to
  4 decimals; written to ``--dir`` (default /tmp/i30-stream, never the repository) as CSV (pyarrow's
  writer), Parquet (pyarrow, 64k-row row groups), ``.npz`` (``dpadapt.io.save_table``: compressed) and
  ``.npy`` (+ a ``.npy`` of labels); a 20 000-row unlabelled target ``.npz`` for the basis; a schema
  declaring the 64 columns numeric in [-8, 8] and the label set 0..9;
* releases (the sound default, ε = 8, δ = 1e-8): the receiver's request from ``dpadapt request`` on the
  target (its design: map, basis, statistics), then plain — ``release sound --request R``; schema —
  ``release sound --request R --schema S`` (CSV and Parquet: the schema reader's formats; the request made
  on the target read through the same schema);
* measure: ``/usr/bin/time -v`` peak RSS and wall time of each command, ``nice -n 10``; "extra
  memory" = peak RSS minus the peak RSS of the same command on the first 1 000 rows of the same
  format (the interpreter and imports); CSV reference: pyarrow's own streaming read of the same file
  (``pyarrow.csv.open_csv`` with its default options, every column of every batch converted to numpy
  and dropped);
* runs: ``--runs`` (default 5) rounds; each round runs every command once, in the same order,
  so that the load of the shared machine falls on all of them alike; medians reported.

    python benchmarks/perf/stream_memory.py [--rows 1000000] [--runs 5] [--dir /tmp/i30-stream]
    python benchmarks/perf/stream_memory.py --quick   # 2 000 rows, every command once in this process (seconds)

Writes ``benchmarks/perf/results/stream_memory.json`` and prints a table (``--quick`` writes nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
D, K = 64, 10
PYARROW_READ = """
import csv, sys, pyarrow as pa, pyarrow.csv as pacsv
names = next(csv.reader([open(sys.argv[1]).readline()]))
reader = pacsv.open_csv(sys.argv[1], convert_options=pacsv.ConvertOptions(column_types={n: pa.float64() for n in names}))
for batch in reader:
    for column in batch.columns:
        column.to_numpy(zero_copy_only=False)
"""


def generate(root: Path, n: int, seed: int = 0, tiny: int = 1000, n_target: int = 20000) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from dpadapt.io import save_table

    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    means = rng.normal(size=(K, D))
    for tag, rows in (("full", n), ("tiny", tiny)):
        y = rng.integers(0, K, rows)
        X = np.round(means[y] + rng.normal(size=(rows, D)), 4)
        table = pa.table({**{f"f{j}": X[:, j] for j in range(D)}, "y": y})
        pacsv.write_csv(table, root / f"{tag}.csv")
        pq.write_table(table, root / f"{tag}.parquet", row_group_size=65536)
        save_table(root / f"{tag}.npz", X, y)
        np.save(root / f"{tag}.npy", X)
        np.save(root / f"{tag}_y.npy", y)
        del X, table
    yt = rng.integers(0, K, n_target)
    Xt = np.round(means[yt] + rng.normal(size=(n_target, D)) + 0.3, 4)
    save_table(root / "target.npz", Xt)
    pq.write_table(pa.table({**{f"f{j}": Xt[:, j] for j in range(D)}, "y": yt}), root / "target.parquet")
    columns = "\n".join(f'[[columns]]\nname = "f{j}"\ntype = "numeric"\nrange = [-8, 8]\n' for j in range(D))
    classes = ", ".join(f'"{c}"' for c in range(K))
    (root / "schema.toml").write_text(f'[label]\ncolumn = "y"\nclasses = [{classes}]\n\n{columns}')


def dpadapt(*args: str) -> list[str]:
    return [sys.executable, "-m", "dpadapt.cli.main", *args]


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall seconds, peak RSS MB, CPU seconds user + system) of ``cmd`` under ``/usr/bin/time -v`` and ``nice -n 10``."""
    done = subprocess.run(["/usr/bin/time", "-v", "nice", "-n", "10", *cmd], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    rss = float(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1)) / 1024
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", done.stderr).group(1)
    seconds = sum(float(p) * 60**i for i, p in enumerate(reversed(wall.split(":"))))
    cpu = sum(float(re.search(rf"{kind} time \(seconds\): ([\d.]+)", done.stderr).group(1)) for kind in ("User", "System"))
    return seconds, rss, cpu


def commands(root: Path, tag: str, work: Path) -> dict[str, list[str]]:
    common = ["--epsilon", "8", "--delta", "1e-8", "--ledger", str(work / "ledger.sqlite"), "--dataset-id", "bench",
              "--force", "--quiet"]
    out: dict[str, list[str]] = {}
    for fmt in ("csv", "parquet", "npz", "npy"):
        extra = ["--label-file", str(root / f"{tag}_y.npy")] if fmt == "npy" else []
        out[f"plain {fmt}"] = dpadapt("release", "sound", "--classes", ",".join(map(str, range(K))),
                                      "--data", str(root / f"{tag}.{fmt}"), *extra,
                                      "--request", str(work / "plain.request"),
                                      "--out", str(work / f"plain-{fmt}.release"), *common)
    for fmt in ("csv", "parquet"):
        out[f"schema {fmt}"] = dpadapt("release", "sound", "--data", str(root / f"{tag}.{fmt}"), "--schema",
                                       str(root / "schema.toml"), "--request", str(work / "schema.request"),
                                       "--out", str(work / f"schema-{fmt}.release"), *common)
    return out


def requests(root: Path, work: Path, n: int) -> list[list[str]]:
    """The receiver's requests (plain, and through the schema) for one source of ``n`` rows at ε = 8, δ = 1e-8."""
    common = ["--n-source", str(n), "--epsilon", "8", "--delta", "1e-8", "--declare-public", "--force", "--quiet"]
    return [dpadapt("request", "--data", str(root / "target.npz"), "--classes", ",".join(map(str, range(K))),
                    "--out", str(work / "plain.request"), *common),
            dpadapt("request", "--data", str(root / "target.parquet"), "--schema", str(root / "schema.toml"),
                    "--out", str(work / "schema.request"), *common)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default="/tmp/i30-stream")
    ap.add_argument("--regenerate", action="store_true")
    ap.add_argument("--quick", action="store_true", help="2 000 rows, every command once in this process, a temporary directory (a smoke run)")
    a = ap.parse_args()
    if a.quick:
        a.rows, a.runs, a.dir, a.regenerate = 2000, 1, tempfile.mkdtemp(prefix="stream-memory-quick-"), True
    root = Path(a.dir)
    if a.regenerate or not (root / "full.csv").exists():
        generate(root, a.rows, tiny=min(1000, a.rows), n_target=min(20000, a.rows))
    work = Path(tempfile.mkdtemp(prefix="i30-stream-", dir=root))
    setup = [dpadapt("budget", "set", "--party", "source", "--dataset-id", "bench", "--epsilon", "1e6", "--delta", "0.5",
                     "--ledger", str(work / "ledger.sqlite")), *requests(root, work, a.rows)]
    if a.quick:  # every command once, in this process (no timing: the smoke run checks the command lines still run)
        from dpadapt.cli.main import main as cli

        for cmd in setup + list(commands(root, "full", work).values()):
            if cli(cmd[3:]) != 0:
                raise RuntimeError(f"{' '.join(cmd[3:])} failed")
        print("every command ran")
        return
    for cmd in setup:
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr[-2000:]}")
    full, tiny = commands(root, "full", work), commands(root, "tiny", work)
    reference = [sys.executable, "-c", PYARROW_READ, str(root / "full.csv")]
    runs: dict[str, list[tuple[float, float, float]]] = {}
    for r in range(a.runs):
        for name, cmd in full.items():
            runs.setdefault(name, []).append(timed(cmd, work))
            if name == "plain csv":
                runs.setdefault("pyarrow read csv", []).append(timed(reference, work))
        for name, cmd in tiny.items():
            runs.setdefault(f"tiny {name}", []).append(timed(cmd, work))
        print(f"round {r + 1}/{a.runs} done", file=sys.stderr)
    rows = []
    for name in list(full) + ["pyarrow read csv"]:
        wall, peak, cpu = (statistics.median(r[i] for r in runs[name]) for i in range(3))
        tiny_runs = runs.get(f"tiny {name}")
        base = statistics.median(r[1] for r in tiny_runs) if tiny_runs else None
        base_cpu = statistics.median(r[2] for r in tiny_runs) if tiny_runs else None
        rows.append({"command": name, "wall_s": wall, "cpu_s": cpu, "peak_rss_mb": peak, "baseline_rss_mb": base,
                     "baseline_cpu_s": base_cpu, "extra_mb": None if base is None else peak - base, "runs": len(runs[name]),
                     "all": runs[name], "all_tiny": tiny_runs})
    by = {r["command"]: r for r in rows}
    ratios = {key: by["plain csv"][key] / by["pyarrow read csv"][key] for key in ("wall_s", "cpu_s")}
    load = os.getloadavg()
    print(f"{'command':<18}{'wall s':>9}{'CPU s':>8}{'peak MB':>10}{'extra MB':>10}{'tiny CPU s':>12}")
    for r in rows:
        extra = "" if r["extra_mb"] is None else f"{r['extra_mb']:10.0f}{r['baseline_cpu_s']:12.2f}"
        print(f"{r['command']:<18}{r['wall_s']:9.2f}{r['cpu_s']:8.2f}{r['peak_rss_mb']:10.0f}{extra}")
    print(f"plain CSV release / pyarrow's streaming read: wall {ratios['wall_s']:.2f}, CPU {ratios['cpu_s']:.2f} (medians); "
          f"load average now {load[0]:.1f}")
    out = HERE / "results" / "stream_memory.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"rows": a.rows, "features": D, "classes": K, "runs": a.runs, "results": rows,
                               "csv_ratio": ratios, "loadavg_end": load}, indent=1))


if __name__ == "__main__":
    main()
