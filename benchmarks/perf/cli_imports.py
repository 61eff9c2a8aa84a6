"""What ``dpadapt release sound`` spends importing, against the library call that does the same release.

Rule (fixed before the run): ``python -X importtime`` on (a) the CLI release of a 1 000-row ``.npz``
source (sound, the receiver's request from ``dpadapt request`` on a 300-row target, ε = 8) and (b) a
script that makes the same release through the API (``dpadapt.sound.plan`` / ``release`` of the same
request on the same file read with ``dpadapt.stream.open_source``, the Release saved); import time = the
sum of the top-level entries; "CLI overhead" = (a) − (b); heavy modules listed for each; medians of 5
alternated runs (``--quick``: one). Also every command's ``--help`` CPU time is in
``tests/test_cli_startup.py``.

    python benchmarks/perf/cli_imports.py [--quick]

Writes ``benchmarks/perf/results/cli_imports.json``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
HEAVY = ("torch", "dp_accounting", "sklearn", "scipy", "pandas", "pyarrow", "ot", "skada", "matplotlib", "cryptography")
API = """
import sys
from pathlib import Path
from dpadapt import sound
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import Release
from dpadapt.stream import open_source
src = open_source(sys.argv[1])
request = Release.load(Path(sys.argv[3]))
config = sound.Config(epsilon=8.0, delta=1e-6, classes=(0, 1, 2))
plan = sound.plan(config, {"request": request, "n_source": src.n_rows})
sound.release(plan, request, src, noise=random_streams(None)[1]).save(Path(sys.argv[2]))
"""


def import_profile(cmd: list[str], cwd: Path) -> tuple[float, list[str]]:
    """(seconds of top-level imports, heavy modules imported) from ``-X importtime``."""
    done = subprocess.run([sys.executable, "-X", "importtime", *cmd], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    total, heavy = 0, set()
    for line in done.stderr.splitlines():
        parts = line[len("import time:"):].split("|") if line.startswith("import time:") else []
        if len(parts) != 3 or not parts[1].strip().isdigit():
            continue
        if not parts[2].startswith("  "):  # a top-level import (nested ones are indented)
            total += int(parts[1])
        root = parts[2].strip().split(".")[0]
        if root in HEAVY:
            heavy.add(root)
    return total / 1e6, sorted(heavy)


def main() -> None:
    from dpadapt.io import save_table

    work = Path(tempfile.mkdtemp(prefix="i30-imports-"))
    rng = np.random.default_rng(0)
    save_table(work / "s.npz", rng.normal(size=(1000, 8)), rng.integers(0, 3, 1000))
    save_table(work / "t.npz", rng.normal(size=(300, 8)) + 0.3)
    ledger = str(work / "l.sqlite")
    for setup in (["budget", "set", "--party", "source", "--dataset-id", "d", "--epsilon", "1e6", "--delta", "0.5",
                   "--ledger", ledger],
                  ["request", "--data", "t.npz", "--classes", "0,1,2", "--n-source", "1000", "--epsilon", "8", "--delta",
                   "1e-6", "--declare-public", "--out", "q.release", "--quiet"]):
        subprocess.run([sys.executable, "-m", "dpadapt.cli.main", *setup], check=True, capture_output=True, cwd=work)
    cli = ["-m", "dpadapt.cli.main", "release", "sound", "--classes", "0,1,2", "--data", "s.npz", "--request", "q.release",
           "--epsilon", "8", "--delta", "1e-6", "--out", "r.release", "--ledger", ledger, "--dataset-id", "d", "--force",
           "--quiet"]
    api = ["-c", API, "s.npz", "a.release", "q.release"]
    runs: dict[str, list[float]] = {"cli": [], "api": []}
    heavy = {}
    rounds = 1 if "--quick" in sys.argv else 5
    for _ in range(rounds):
        for name, cmd in (("cli", cli), ("api", api)):
            seconds, mods = import_profile(cmd, work)
            runs[name].append(seconds)
            heavy[name] = mods
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"imports: CLI {med['cli']:.2f} s, API {med['api']:.2f} s, CLI overhead {med['cli'] - med['api']:.2f} s "
          f"(medians of {rounds}, load {os.getloadavg()[0]:.1f})")
    print(f"heavy modules: CLI {heavy['cli']}, API {heavy['api']}")
    if "--quick" in sys.argv:
        return
    out = HERE / "results" / "cli_imports.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"median_s": med, "runs": runs, "heavy": heavy, "overhead_s": med["cli"] - med["api"],
                               "loadavg": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
