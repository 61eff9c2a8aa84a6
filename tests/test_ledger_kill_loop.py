"""Issue 19, item 5: SIGKILL ``dpadapt release`` at random moments; no usable release is ever refunded.

Runs :mod:`benchmarks/ledger/ledger_kill_loop.py` with 8 kills (the benchmark runs 30).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "benchmarks" / "ledger" / "ledger_kill_loop.py"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_kill_loop_never_refunds_a_usable_release(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parents[1] / "src"), os.environ.get("PYTHONPATH", "")]))
    spec = importlib.util.spec_from_file_location("ledger_kill_loop", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rounds = module.kill_loop(tmp_path, kills=8, seed=19, log=lambda record: None)
    assert len(rounds) == 8
    assert not [r for r in rounds if r["violation"]]
