"""Every ``dpadapt … --help`` page comes from the real parser, fast and light (issues 20 and 30).

The command modules import their method families only when a command runs, and the options come
from the light Config declarations of :mod:`dpadapt.configs`; so no help page imports torch,
dp-accounting, scikit-learn, SciPy, POT, pandas or pyarrow, and each takes ≤ 0.3 s of CPU (measured
in a fresh process, from the first import of :mod:`dpadapt.cli.main` to the printed page; CPU time,
not wall time, so a loaded machine does not fail it; the assertion keeps a 1.5× margin for slower CPUs).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from dpadapt.cli.main import COMMANDS, build_parser

HEAVY = ("torch", "dp_accounting", "sklearn", "scipy", "ot", "skada", "pandas", "pyarrow", "matplotlib", "cryptography")
#: the issue's bound on one help page (CPU seconds), and the margin the assertion allows for a slower CI CPU
PAGE_SECONDS, MARGIN = 0.3, 1.5
PROBE = """
import json, sys, time
start = time.process_time()
from dpadapt.cli.main import main
try:
    main({argv!r})
except SystemExit:
    pass
seconds = time.process_time() - start
sys.stdout = sys.__stdout__
print(json.dumps({{"seconds": seconds, "heavy": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


def _paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of ``parser`` (``()``, ``("release",)``, ``("release", "sound")``, …)."""
    out = [path]
    for name, child in _subparsers(parser).items():
        out += _paths(child, path + (name,))
    return out


def _builtin_paths() -> list[tuple[str, ...]]:
    """The pages of the built-in commands (methods registered by test plugins are left out)."""
    from dpadapt.cli import methods as cli_methods

    builtin = {name for name, c in cli_methods.methods().items()
               if all(getattr(c, step).__module__.startswith("dpadapt.") for step in cli_methods.STEPS)}
    return [p for p in _paths(build_parser(None))
            if not (len(p) >= 2 and p[0] in ("release", "adapt") and p[1] not in builtin)]


PATHS = _builtin_paths()


def test_the_walk_covers_every_command_and_method():
    assert {p[0] for p in PATHS if p} == set(COMMANDS)
    assert {p[1] for p in PATHS if len(p) == 2 and p[0] == "release"} >= {"dpot", "sound", "dpda", "prima", "dpswd"}
    assert len(PATHS) > 30


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "dpadapt")
def test_every_help_page_is_fast_and_imports_no_heavy_module(path, monkeypatch):
    monkeypatch.delenv("DPADAPT_PLUGINS", raising=False)
    done = subprocess.run([sys.executable, "-c", PROBE.format(argv=list(path) + ["--help"], heavy=HEAVY)],
                          capture_output=True, text=True, check=True, timeout=120)
    page, _, last = done.stdout.rstrip().rpartition("\n")
    result = json.loads(last)
    assert "usage: dpadapt" in page, done.stdout
    assert result["heavy"] == [], f"`dpadapt {' '.join(path)} --help` imports {result['heavy']}"
    assert result["seconds"] <= PAGE_SECONDS * MARGIN, f"`dpadapt {' '.join(path)} --help` took {result['seconds']:.2f} s of CPU"


@pytest.mark.parametrize("argv, message", [
    (["release", "dpot", "--design", "foo", "--help"], "invalid choice: 'foo'"),
    (["release", "nosuch", "--help"], "invalid choice: 'nosuch'"),
])
def test_bad_input_beside_help_is_reported_by_the_real_parser(argv, message, capsys):
    from dpadapt.cli.main import main

    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and message in err and len(err.strip().splitlines()) == 1, err
