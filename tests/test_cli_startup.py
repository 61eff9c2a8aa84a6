"""`dpadapt <command> --help` imports only what that command needs (issue 20): no torch, no
dp-accounting, no scikit-learn, no POT for the commands whose options do not come from a method."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("torch", "dp_accounting", "sklearn", "ot")
PROBE = """
import sys
from dpadapt.cli.main import main
try:
    main({argv!r})
except SystemExit:
    pass
print(sorted(m for m in {heavy!r} if m in sys.modules))
"""


@pytest.mark.parametrize("argv", [[], ["account"], ["bench"], ["budget"], ["budget", "show"], ["keys"], ["datasets"], ["demo"]])
def test_help_imports_no_heavy_module(argv):
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv + ["--help"], heavy=HEAVY)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    assert out.strip().splitlines()[-1] == "[]", out
