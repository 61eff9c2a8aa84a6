"""CLI options generated from a family's :class:`~dpadapt.configs.base.Config` (each hyper-parameter declared once).

:func:`add_config_options` adds one ``--name`` option per declared parameter (``name`` with ``_`` →
``-``), its help, default and choices taken from :func:`dpadapt.configs.base.param`; :func:`config_from_args`
builds the Config back from the parsed arguments, so validation and its one-line errors come from
the Config (:class:`~dpadapt.configs.base.ConfigError`). The driver's own options (``--epsilon``, ``--delta``,
``--seed``) map to ``epsilon``, ``delta`` and ``random_state``; :func:`add_option` adds a hand-written
option unless the parser already has it (the generic driver defines some first).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from dpadapt.configs.base import Config

#: Config fields the driver provides under its own option names (``--seed`` for ``random_state``).
DRIVER_FIELDS = {"epsilon": "epsilon", "delta": "delta", "random_state": "seed"}
#: Config fields never offered on the command line (reproducible noise is for tests only).
HIDDEN_FIELDS = ("reproducible_noise",)


def add_option(parser: argparse.ArgumentParser, *flags: str, **kwargs: Any) -> None:
    """Add an option unless the parser already defines one of ``flags`` (e.g. the driver's ``--seed``)."""
    if any(f in parser._option_string_actions for f in flags):
        return
    parser.add_argument(*flags, **kwargs)


def flag(name: str) -> str:
    """The option of Config field ``name``: ``--name`` with underscores as dashes."""
    return "--" + name.replace("_", "-")


def _scalar(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _tuple(text: str) -> tuple:
    """A comma-separated list: ``0,1,2`` → ``(0, 1, 2)``; ``cat,dog`` → ``('cat', 'dog')``."""
    return tuple(_scalar(v.strip()) for v in text.split(",") if v.strip())


def _kind(f: dataclasses.Field) -> Any:
    """The converter of a field, from its declared type (a string under ``from __future__``)."""
    declared = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    for name, kind in (("bool", bool), ("tuple", _tuple), ("int", int), ("float", float)):
        if name in declared:
            return kind
    return str


def _converter(kind: Any, optional: bool, choices: tuple | None) -> Any:
    def convert(text: str) -> Any:
        if optional and text.strip().lower() == "none" and text not in (choices or ()):
            return None
        return kind(text)

    convert.__name__ = getattr(kind, "__name__", "value")  # argparse names it in its error message
    return convert


def add_config_options(
    parser: argparse.ArgumentParser,
    config_class: type[Config],
    names: Iterable[str] | None = None,
    *,
    defaults: Mapping[str, Any] | None = None,
    required: Iterable[str] = (),
) -> None:
    """Add ``--name`` options for the hyper-parameters of ``config_class`` (all, or only ``names``).

    ``defaults`` changes the default a command offers (e.g. ``None`` = "the value in the release");
    ``required`` makes options mandatory. Booleans become ``--name/--no-name``; optional values
    accept ``none``; tuples are comma-separated. Options the parser already has are left alone.
    """
    fields = {f.name: f for f in config_class.parameters()}
    wanted = list(fields) if names is None else list(names)
    unknown = [n for n in wanted if n not in fields]
    if unknown:
        raise ValueError(f"{config_class.__name__} has no parameter(s) {', '.join(unknown)}")
    defaults = dict(defaults or {})
    required = set(required)
    for name in wanted:
        f, meta = fields[name], fields[name].metadata
        if name in DRIVER_FIELDS or name in HIDDEN_FIELDS or not meta.get("cli", True):
            continue
        default = defaults.get(name, f.default)
        kind = _kind(f)
        kwargs: dict[str, Any] = {"dest": name, "help": meta["help"]}
        if name in required:
            kwargs["required"] = True
        else:
            kwargs["default"] = default
            kwargs["help"] += f" (default: {'none' if default is None else default})"
        if kind is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = _converter(kind, bool(meta.get("optional")), meta.get("choices"))
            if meta.get("choices") is not None and kind is str:
                kwargs["choices"] = meta["choices"] + ((None,) if meta.get("optional") else ())
                kwargs["metavar"] = "{" + ",".join(map(str, meta["choices"])) + "}"
        add_option(parser, flag(name), **kwargs)


def config_from_args(config_class: type[Config], args: argparse.Namespace, **overrides: Any) -> Config:
    """The Config of the parsed ``args`` (fields the command did not offer keep their defaults).

    ``--epsilon``/``--delta``/``--seed`` give ``epsilon``/``delta``/``random_state``; ``overrides``
    win over the options. Validation errors are the Config's one-line :class:`ConfigError`.
    """
    values: dict[str, Any] = {}
    for f in config_class.parameters():
        option = DRIVER_FIELDS.get(f.name, f.name)
        if hasattr(args, option):
            values[f.name] = getattr(args, option)
    values.setdefault("epsilon", None)  # a command without --epsilon releases nothing private (the CLI says ε out loud)
    values.update(overrides)
    return config_class(**values)
