"""The CLI reference page: every command's ``--help``, read from the argparse parser itself.

The documentation build calls :func:`markdown` (the MkDocs hook ``scripts/mkdocs_hooks.py`` fills
``docs/cli.md`` with it), so the page cannot drift from the parser.
"""

from __future__ import annotations

import argparse
import os

#: the width help texts are wrapped to on the page (fixed, so the page does not depend on a terminal)
WIDTH = 100


def _commands(parser: argparse.ArgumentParser, prog: str) -> list[tuple[str, argparse.ArgumentParser]]:
    """``(name, parser)`` of ``parser`` and every sub-command below it, depth first, each parser once."""
    out, seen = [(prog, parser)], set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out += _commands(sub, f"{prog} {name}")
    return out


def markdown() -> str:
    """Markdown for every command of ``dpadapt``: a heading and its help text, in the parser's order."""
    from dpadapt.cli.main import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        commands = _commands(build_parser(), "dpadapt")
        sections = [f"## `{name}`\n\n```text\n{parser.format_help().rstrip()}\n```\n" for name, parser in commands]
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    return "\n".join(sections)
