"""Entry point of the ``dpadapt`` command.

Each sub-command lives in its own module exposing ``add_parser(subparsers)``; the parser's
``func`` default runs it and returns the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from dpadapt import __version__

#: Modules of :mod:`dpadapt.cli` that define sub-commands, in help order.
COMMAND_MODULES = (
    "demo_cmd",
    "datasets_cmd",
    "account_cmd",
    "bench_cmd",
    "party_cmd",
    "basis_cmd",
    "report_cmd",
    "budget_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpadapt",
        description="Differentially private domain adaptation: two-party releases, adaptation, accounting and benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"dpadapt {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"dpadapt.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"dpadapt.cli.{name}":
                continue  # command not built yet
            raise
        module.add_parser(sub)
    return parser


def _quiet_accountant_logs() -> None:
    """dp-accounting logs one absl warning per RDP order it drops; on a terminal that is noise."""
    import absl.logging

    absl.logging.set_verbosity(absl.logging.ERROR)


def main(argv: list[str] | None = None) -> int:
    _quiet_accountant_logs()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, FileNotFoundError, KeyError, PermissionError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"dpadapt {args.command}: error: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
