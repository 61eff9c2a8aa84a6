"""Entry point of the ``dpadapt`` command.

Each sub-command lives in a module of :mod:`dpadapt.cli` exposing ``add_parser(subparsers)``; the
parser's ``func`` default runs it and returns the exit status. Only the module of the command
being run is imported (the others appear in ``--help`` from :data:`COMMANDS`), and the command
modules import their method families only when a command runs: every help page (``dpadapt release
dpot --help`` too) is printed by the real parser, built from the light Config declarations of
:mod:`dpadapt.configs`, without torch, dp-accounting, scikit-learn, SciPy or pandas
(``tests/test_cli_startup.py`` times every page).

Errors on bad input end in one line on stderr and exit status 1 (2 for usage errors); set
``DPADAPT_DEBUG=1`` to see the traceback of an unexpected error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings

from dpadapt import __version__
from dpadapt.parsing import is_number

#: Sub-command → (module of :mod:`dpadapt.cli` that defines it, one-line help), in help order.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("demo_cmd", "run the two-party demo on generated data"),
    "datasets": ("datasets_cmd", "list, check or fetch the benchmark datasets"),
    "account": ("account_cmd", "ε for (σ, sampling, steps, δ), or the σ needed for a target ε"),
    "bench": ("bench_cmd", "run a benchmark suite and print measured vs paper numbers"),
    "request": ("request_cmd", "receiver of the sound default: design the release request on your own rows (a disclosure)"),
    "slices": ("slices_cmd", "public source (DP-SWD): disclose its trained extractor, directions and bins for dpswd-marginals"),
    "schema": ("schema_cmd", "draft a table schema from public facts (column names), or check one"),
    "keys": ("keys_cmd", "create a signing key pair (give the public key to the other party)"),
    "release": ("party_cmd", "data owner: compute a private release of your data for the other party (budgeted)"),
    "adapt": ("party_cmd", "receiver: adapt a model to your data using the other party's release(s)"),
    "predict": ("model_cmd", "predict labels of a data file with a model file"),
    "score": ("model_cmd", "accuracy (R² for a regressor) of a model file on labelled data"),
    "report": ("report_cmd", "print the privacy guarantee of a Release file or a model file"),
    "budget": ("budget_cmd", "show / set your privacy budgets and list your releases"),
}


def add_command(
    sub: argparse._SubParsersAction, name: str, description: str | None = None, *, actions: str | None = None
) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction | None]:
    """The parser of sub-command ``name`` (its one-line help from :data:`COMMANDS`) and, when ``actions``
    names the attribute that receives the chosen one (``"action"``, ``"method"``), its sub-parsers."""
    parser = sub.add_parser(name, help=COMMANDS[name][1], description=description or COMMANDS[name][1])
    return parser, parser.add_subparsers(dest=actions, metavar=actions.upper()) if actions else None


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2), not the whole usage."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())} (see `{self.prog} --help`)\n")


def _join_negative_values(argv: list[str]) -> list[str]:
    """``--delta -1e-5`` → ``--delta=-1e-5``: a negative number after an option is its value (argparse
    would take it for an option), so the command's own check reports it in one line."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and arg.startswith("-") and is_number(arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _command_of(argv: list[str]) -> str | None:
    """The sub-command named in ``argv`` (the first argument that is not an option)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the module of the command named in ``argv`` is imported (all of them if ``argv`` is None)."""
    parser = OneLineParser(
        prog="dpadapt",
        description="Differentially private domain adaptation: two-party releases, adaptation, accounting and benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"dpadapt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    wanted = set(m for m, _ in COMMANDS.values()) if argv is None else {COMMANDS[c][0] for c in [_command_of(argv)] if c}
    loaded: set[str] = set()
    for name, (module, help_) in COMMANDS.items():
        if module in wanted:
            if module not in loaded:
                importlib.import_module(f"dpadapt.cli.{module}").add_parser(sub)
                loaded.add(module)
        else:
            sub.add_parser(name, help=help_, add_help=False)
    return parser


def _one_line(exc: BaseException) -> str:
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
    text = " ".join(str(message).split()) or type(exc).__name__
    if isinstance(exc, OverflowError):
        return f"a value is out of the computable range ({text}); check --epsilon / --delta (a huge ε protects nothing)"
    if not isinstance(exc, (ValueError, OSError, KeyError, ArithmeticError, TypeError)):
        text = f"{type(exc).__name__}: {text}"
    return text


def _warning_line(command: str):
    """A ``warnings.showwarning`` that prints one line ``dpadapt CMD: warning: ...`` on stderr."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        print(f"dpadapt {command}: warning: {' '.join(str(message).split())}", file=file or sys.stderr)

    return show


#: Commands that may charge a privacy budget: an interrupt before they start says that nothing was charged.
BUDGETED = ("release", "adapt")


def main(argv: list[str] | None = None) -> int:
    """Run one command; Ctrl-C ends in one line on stderr (exit 130), never a traceback.

    A command interrupted while it holds a budget reservation says what was charged (``KeyboardInterrupt``
    raised with that sentence, see :func:`dpadapt.cli.party_cmd.budgeted_release`).
    """
    argv = _join_negative_values(list(sys.argv[1:] if argv is None else argv))
    command = _command_of(argv)
    try:
        return _run(argv)
    except KeyboardInterrupt as exc:
        detail = " ".join(str(exc.args[0]).split()) if exc.args else (
            "before any privacy budget was reserved: nothing was charged" if command in BUDGETED else "")
        print(f"dpadapt{' ' + command if command else ''}: interrupted" + (f" {detail}" if detail else ""), file=sys.stderr)
        return 130


def _run(argv: list[str]) -> int:
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_line(args.command)
            status = int(args.func(args) or 0)
            sys.stdout.flush()
            return status
    except BrokenPipeError:
        # the reader of our output went away (`dpadapt report FILE | head -1`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:  # noqa: BLE001 - the CLI reports every failure in one line
        if os.environ.get("DPADAPT_DEBUG"):
            raise
        print(f"dpadapt {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
