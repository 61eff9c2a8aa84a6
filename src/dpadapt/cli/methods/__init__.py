"""Per-method two-party commands (``dpadapt release METHOD`` / ``dpadapt adapt METHOD``).

Each module in this package calls :func:`register` with a :class:`MethodCommands`. The generic
driver (:mod:`dpadapt.cli.party_cmd`) loads the party's data file, asks the method to *plan*
its release — computing the :class:`~dpadapt.privacy.Guarantee` it will cost **before any noise
is drawn** — checks the owner's privacy budget, executes the plan, saves the Release and records
the spend. ``adapt`` receives the other party's Release(s) and the receiver's own data.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import pkgutil
from collections.abc import Callable
from typing import Any

from dpadapt.io import Table
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.release import Release


@dataclasses.dataclass(frozen=True)
class PlannedRelease:
    """A release whose privacy cost is known but whose noise has not been drawn yet."""

    guarantee: Guarantee
    execute: Callable[[], Release]


@dataclasses.dataclass
class AdaptOutcome:
    """What ``adapt`` produced: a model to save, guarantees it carries, optional return release."""

    model: Any
    guarantees: dict[str, Guarantee] = dataclasses.field(default_factory=dict)
    return_release: PlannedRelease | None = None
    metrics: dict[str, float] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class MethodCommands:
    name: str
    help: str
    add_release_arguments: Callable[[argparse.ArgumentParser], None]
    plan_release: Callable[[argparse.Namespace, Table], PlannedRelease]
    add_adapt_arguments: Callable[[argparse.ArgumentParser], None]
    adapt: Callable[[argparse.Namespace, Table, list[Release]], AdaptOutcome]


_METHODS: dict[str, MethodCommands] = {}


def register(commands: MethodCommands) -> MethodCommands:
    _METHODS[commands.name] = commands
    return commands


def methods() -> dict[str, MethodCommands]:
    """Every registered method (imports all modules of this package)."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    return dict(sorted(_METHODS.items()))
