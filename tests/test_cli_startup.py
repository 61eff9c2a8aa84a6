"""`dpadapt <command> --help` imports only what that command needs (issue 20): no torch, no
dp-accounting, no scikit-learn, no POT, … for any command, ``release``/``adapt`` methods included.
The help pages come from the parser snapshot in :mod:`dpadapt.cli.help_table`; it must print what the
real parser prints."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from dpadapt.cli.help_snapshot import build
from dpadapt.cli.help_table import TABLE
from dpadapt.cli.main import COMMANDS, OneLineParser, build_parser

HEAVY = ("torch", "dp_accounting", "sklearn", "scipy.optimize", "ot", "skada", "pandas", "matplotlib")
PROBE = """
import sys
from dpadapt.cli.main import main
try:
    main({argv!r})
except SystemExit:
    pass
print(sorted(m for m in {heavy!r} if m in sys.modules))
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


def _pages(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], str]:
    """Every help page of ``parser`` and its sub-parsers, by command path."""
    pages = {path: parser.format_help()}
    for name, child in _subparsers(parser).items():
        pages.update(_pages(child, path + (name,)))
    return pages


def _table_paths(node: dict, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [path]
    for entry in node["actions"]:
        if entry["kind"] == "parsers":
            for name, _, _, child in entry["choices"]:
                out += _table_paths(child, path + (name,))
    return out


def _builtin_methods_only(monkeypatch) -> None:
    """Drop methods that a test plugin registered earlier in this process (the table holds built-in ones)."""
    from dpadapt.cli import methods as cli_methods

    def builtin(commands) -> bool:
        steps = (getattr(commands, step, None) for step in cli_methods.STEPS)
        return all(f.__module__.startswith("dpadapt.") for f in steps if f is not None)

    monkeypatch.delenv(cli_methods.PLUGINS_ENV, raising=False)
    cli_methods.methods()  # register the built-ins in the real table first: a module imported while the copy
    # below is in place would register only there, and be missing from the table restored after the test
    monkeypatch.setattr(cli_methods, "_METHODS", {k: v for k, v in cli_methods._METHODS.items() if builtin(v)})


def test_help_table_prints_what_the_real_parser_prints(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    _builtin_methods_only(monkeypatch)
    real = _pages(build_parser(None))
    snapshot = _pages(build(TABLE, OneLineParser))
    stale = "; regenerate it with `python -m dpadapt.cli.help_snapshot`"
    assert sorted(snapshot) == sorted(real), "the help table lists other commands than the parser" + stale
    for path, page in real.items():
        assert snapshot[path] == page, f"`dpadapt {' '.join(path)} --help` differs from the help table" + stale


def test_help_table_covers_every_command():
    paths = _table_paths(TABLE)
    assert {p[0] for p in paths if p} == set(COMMANDS)
    assert {p[1] for p in paths if len(p) == 2 and p[0] == "release"} >= {"dpot", "sound", "dpda", "prima"}


@pytest.mark.parametrize("path", _table_paths(TABLE), ids=lambda p: " ".join(p) or "dpadapt")
def test_help_imports_no_heavy_module(path, monkeypatch):
    monkeypatch.delenv("DPADAPT_PLUGINS", raising=False)
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=list(path) + ["--help"], heavy=HEAVY)],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    assert "usage: dpadapt" in out and out.strip().splitlines()[-1] == "[]", out


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
