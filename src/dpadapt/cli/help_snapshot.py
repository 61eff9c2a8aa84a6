"""``dpadapt … --help`` without importing the commands (issue 20: every help ≤ 0.5 s, no torch).

The options of ``release``/``adapt`` come from the method families' Config classes, whose modules
import torch, dp-accounting, scikit-learn and POT. So the help pages are served from
:data:`dpadapt.cli.help_table.TABLE`, a snapshot of the *structure* of the full parser (prog, texts,
groups and, per option, its flags, nargs, metavar, choices, help) taken by :func:`capture`; the
parser rebuilt from it by :func:`build` prints the same help as the real one at any terminal width.
Options are still declared once (in the Configs and the command modules): the table is generated
(``python -m dpadapt.cli.help_snapshot``), and ``tests/test_cli_startup.py`` fails when it differs
from the real parser.

:func:`print_help_page` is used only when ``-h``/``--help`` is on the command line and no plugin is
configured (``$DPADAPT_PLUGINS`` may register more methods); the rebuilt parser only ever prints a
help page: if it meets anything else first (a bad value, ``--`` …), the real parser runs as before.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

#: argparse's action classes by the name the table stores (the ``action=`` of ``add_argument``).
_KINDS: dict[type, str] = {
    argparse._StoreAction: "store",
    argparse._StoreConstAction: "store_const",
    argparse._StoreTrueAction: "store_true",
    argparse._StoreFalseAction: "store_false",
    argparse._AppendAction: "append",
    argparse._AppendConstAction: "append_const",
    argparse._CountAction: "count",
    argparse._ExtendAction: "extend",
    argparse._VersionAction: "version",
    argparse.BooleanOptionalAction: "boolean_optional",
}
_DEFAULT_SUFFIX = " (default: %(default)s)"  # BooleanOptionalAction adds it to its help itself
HELP_FLAGS = ("-h", "--help")
TABLE_FILE = Path(__file__).with_name("help_table.py")


def _action(action: argparse.Action, group: int, mutex: int | None) -> dict[str, Any]:
    kind = _KINDS.get(type(action))
    if kind is None:
        raise TypeError(f"help snapshot: unsupported argparse action {type(action).__name__} for {action.dest}")
    entry: dict[str, Any] = {"kind": kind, "group": group, "mutex": mutex, "dest": action.dest, "help": action.help}
    flags = list(action.option_strings)
    if kind == "boolean_optional":
        flags = flags[:1]  # the --no- form is derived again
        if isinstance(action.help, str) and action.help.endswith(_DEFAULT_SUFFIX):
            entry["help"] = action.help[: -len(_DEFAULT_SUFFIX)]
    entry["flags"] = flags
    if kind == "version":
        entry["version"] = action.version
    if kind in ("store", "append", "extend"):
        entry["nargs"] = action.nargs
    if action.metavar is not None:
        entry["metavar"] = action.metavar if isinstance(action.metavar, str) else list(action.metavar)
    if action.choices is not None:
        entry["choices"] = [str(c) for c in action.choices]
    if action.required:
        entry["required"] = True
    if isinstance(action.help, str) and "%(default)" in action.help:
        entry["default"] = str(action.default)
    return entry


def capture(parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The structure of ``parser`` and its sub-parsers, as literals (what the help pages need)."""
    groups = parser._action_groups
    group_of: dict[int, int] = {id(a): i for i, g in enumerate(groups) for a in g._group_actions}
    mutexes = parser._mutually_exclusive_groups
    mutex_of: dict[int, int] = {id(a): i for i, m in enumerate(mutexes) for a in m._group_actions}
    node: dict[str, Any] = {
        "prog": parser.prog, "usage": parser.usage, "description": parser.description, "epilog": parser.epilog,
        "add_help": bool(parser.add_help), "conflict_handler": parser.conflict_handler,
        "groups": [(g.title, g.description) for g in groups],
        "mutexes": [(groups.index(m._container) if m._container in groups else -1, bool(m.required)) for m in mutexes],
        "actions": [],
    }
    if parser.formatter_class is not argparse.HelpFormatter:
        raise TypeError(f"help snapshot: {parser.prog} uses a formatter other than argparse.HelpFormatter")
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help for c in action._choices_actions}
            node["actions"].append({
                "kind": "parsers", "group": group_of[id(action)], "dest": action.dest, "metavar": action.metavar,
                "help": action.help, "required": bool(action.required),
                "choices": [(name, helps.get(name, None), name in helps, capture(child))
                            for name, child in action.choices.items()],
            })
            continue
        node["actions"].append(_action(action, group_of[id(action)], mutex_of.get(id(action))))
    return node


def build(node: dict[str, Any], parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser,
          wanted: frozenset[str] | None = None, **kwargs: Any) -> argparse.ArgumentParser:
    """The parser described by ``node`` (from :func:`capture`), for printing help (values stay strings).

    Sub-parsers are rebuilt in full only when their name is in ``wanted`` (all when ``None``); the
    others are listed with their one-line help, which is all their parent's help page shows.
    """
    parser = parser_class(prog=node["prog"], usage=node["usage"], description=node["description"],
                          epilog=node["epilog"], add_help=node["add_help"], conflict_handler=node["conflict_handler"],
                          **kwargs)
    groups: list[Any] = list(parser._action_groups)
    for title, description in node["groups"][len(groups):]:
        groups.append(parser.add_argument_group(title, description))
    mutexes = [(parser if g < 0 else groups[g]).add_mutually_exclusive_group(required=r) for g, r in node["mutexes"]]
    for entry in node["actions"]:
        if entry["kind"] == "parsers":
            sub = parser.add_subparsers(dest=entry["dest"], metavar=entry["metavar"], help=entry["help"],
                                        required=entry["required"])
            for name, help_, listed, child in entry["choices"]:
                extra = {"help": help_} if listed else {}
                sub.add_parser(name, prog=child["prog"], add_help=False, **extra)
                if wanted is None or name in wanted:
                    sub.choices[name] = build(child, parser_class, wanted)
            continue
        target = mutexes[entry["mutex"]] if entry.get("mutex") is not None else groups[entry["group"]]
        target.add_argument(*(entry["flags"] or [entry["dest"]]), **_argument_kwargs(entry))
    return parser


def _argument_kwargs(entry: dict[str, Any]) -> dict[str, Any]:
    kind = entry["kind"]
    kwargs: dict[str, Any] = {"help": entry["help"]}
    if entry["flags"]:
        kwargs["dest"] = entry["dest"]
    kwargs["action"] = argparse.BooleanOptionalAction if kind == "boolean_optional" else kind
    if kind == "version":
        kwargs["version"] = entry["version"]
    if kind in ("store_const", "append_const"):
        kwargs["const"] = None
    for key in ("nargs", "metavar", "choices", "default"):
        if entry.get(key) is not None:
            kwargs[key] = tuple(entry[key]) if key == "metavar" and isinstance(entry[key], list) else entry[key]
    if entry.get("required") and entry["flags"]:
        kwargs["required"] = True
    if kind == "boolean_optional" and "default" not in kwargs:
        kwargs["default"] = None
    return kwargs


class _Defer(Exception):
    """The rebuilt parser met something other than a help request: the real parser must decide."""


class _HelpOnlyParser(argparse.ArgumentParser):
    """A rebuilt parser that only ever prints a help page: any usage error is left to the real parser."""

    def error(self, message: str):  # type: ignore[override]
        raise _Defer(message)


def print_help_page(argv: list[str]) -> None:
    """Print the help page ``argv`` asks for, from the table, and exit 0. Returns (printing nothing)
    when ``argv`` asks for none, when a plugin is configured, or when the parse meets anything else
    first (a bad value, ``--`` …): the real parser then runs as before, with its own messages."""
    args = argv[: argv.index("--")] if "--" in argv else argv
    if not any(a in HELP_FLAGS for a in args) or os.environ.get("DPADAPT_PLUGINS", "").strip():
        return
    from dpadapt.cli.help_table import TABLE

    parser = build(TABLE, _HelpOnlyParser, frozenset(a for a in args if not a.startswith("-")))
    try:
        parser.parse_args(argv)
    except _Defer:
        return


def render() -> str:
    """The text of :data:`TABLE_FILE` for the current commands (imports every command)."""
    import pprint

    from dpadapt.cli.main import build_parser

    table = pprint.pformat(capture(build_parser(None)), width=120, sort_dicts=False)
    return (
        '"""Generated by ``python -m dpadapt.cli.help_snapshot`` from the real parser; do not edit (see\n'
        ':mod:`dpadapt.cli.help_snapshot`)."""\n\n'
        f"TABLE = {table}\n"
    )


if __name__ == "__main__":
    TABLE_FILE.write_text(render(), encoding="utf-8")
    print(f"wrote {TABLE_FILE}", file=sys.stderr)
