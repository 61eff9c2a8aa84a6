"""Every script under ``benchmarks/perf/`` runs in its quick mode, so that none silently stops running.

Each runs as its own process (its command line is what rots: options, routes, arguments) with one
thread and a small input; the scripts that read the benchmark data skip without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PERF = ROOT / "benchmarks" / "perf"

#: script → (arguments of its quick mode, whether it reads ../shared/data).
QUICK = {
    "release_floor.py": (["--quick"], False),
    "stream_memory.py": (["--quick"], False),
    "noise_sampler.py": (["--quick"], False),
    "cli_imports.py": (["--quick"], False),
    "basis_error.py": (["--quick"], True),
    "deep_overheads.py": (["{tmp}/deep.json", "1", "1"], True),
}


def test_every_perf_script_has_a_quick_mode_here():
    assert sorted(QUICK) == sorted(p.name for p in PERF.glob("*.py"))


@pytest.mark.parametrize("script", sorted(QUICK))
def test_perf_script_runs_quick(script, tmp_path, request):
    args, needs_data = QUICK[script]
    if needs_data:
        request.getfixturevalue("data_root")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "DPADAPT_TORCH_THREADS": "1"}
    done = subprocess.run([sys.executable, str(PERF / script), *(a.format(tmp=tmp_path) for a in args)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip(), "the quick run printed nothing"
