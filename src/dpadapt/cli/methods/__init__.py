"""Per-method two-party commands (``dpadapt release METHOD`` / ``dpadapt adapt METHOD``).

Each module in this package calls :func:`register` with a :class:`MethodCommands`. The generic
driver (:mod:`dpadapt.cli.party_cmd`) loads the party's data file, asks the method to *plan*
its release — computing the :class:`~dpadapt.privacy.Guarantee` it will cost **before any noise
is drawn** — checks the owner's privacy budget, executes the plan, saves the Release and records
the spend. ``adapt`` receives the other party's Release(s) and the receiver's own data.

What the driver provides (plugins may rely on these attributes of ``args``):

* ``release``: ``args.data`` (path), ``args.label_column``, ``args.epsilon``, ``args.delta``
  (the release's target ε, δ), ``args.seed`` (int or ``None``: the seed of the PUBLIC randomness;
  split it with :func:`dpadapt.privacy.mechanisms.random_streams`, whose noise source is fresh OS
  entropy), ``args.out``. With ``--schema`` the table was read through the declared schema
  (:class:`dpadapt.cli.table_options.SchemaTable`) and ``args.classes`` holds the label indices.
* ``adapt``: ``args.release`` (list of paths, already loaded and verified into ``releases``),
  ``args.data``, ``args.label_column``, ``args.out``, ``args.return_release`` (path or ``None``),
  ``args.epsilon`` / ``args.delta`` (``None`` unless given: the budget of a return release),
  ``args.seed``.

A plugin may re-declare these options (to change the help or a default); the driver's parsers
use ``conflict_handler="resolve"``. The driver overwrites ``release_id`` of the executed Release
with the id it reserved in the ledger, adds ``params["n_features"]`` (the owner's feature
dimension; ``adapt`` rejects data of another dimension) and refuses a Release whose guarantee
differs from the planned one. Plugins outside this package are loaded from the comma-separated
module names in ``$DPADAPT_PLUGINS`` (used by tests; third-party methods).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: a method module imports its family when its command runs
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
    """The party steps of one method (one release file each way; no method needs rounds)."""

    name: str
    help: str
    add_release_arguments: Callable[[argparse.ArgumentParser], None]
    plan_release: Callable[[argparse.Namespace, Table], PlannedRelease]
    add_adapt_arguments: Callable[[argparse.ArgumentParser], None]
    adapt: Callable[[argparse.Namespace, Table, list[Release]], AdaptOutcome]
    #: For the generic tests: given small generated data files ``{"source": labelled .npz,
    #: "target": unlabelled .npz}`` (same features), the method's ``release`` arguments
    #: (``--data`` included; ``--epsilon/--delta/--out/--seed`` are added). Default: ``--data source``.
    example_release_args: Callable[[dict[str, Path]], list[str]] | None = None
    #: The ``method`` its Release files carry when it differs from ``name`` (``dpswd-marginals`` reads and
    #: writes ``dpswd`` releases; ``dpot`` the ``sound`` request and release, or its own per-row release);
    #: ``adapt`` accepts only releases of this method (or these methods).
    release_method: str | tuple[str, ...] | None = None

    def file_method(self) -> str | tuple[str, ...]:
        """The ``method`` (or methods) of this method's Release files."""
        return self.release_method or self.name


_METHODS: dict[str, MethodCommands] = {}

#: Comma-separated importable module names that register extra methods.
PLUGINS_ENV = "DPADAPT_PLUGINS"


def register(commands: MethodCommands) -> MethodCommands:
    _METHODS[commands.name] = commands
    return commands


#: The party steps a method module may define, under these names (see :class:`MethodCommands`).
STEPS = (
    "add_release_arguments", "plan_release", "add_adapt_arguments", "adapt",
)


def register_module(module_name: str, help: str, **options: Any) -> MethodCommands:
    """Register the method of module ``module_name``: named after the module's last component, with
    the party steps the module defines under the names in :data:`STEPS`, and ``options`` (e.g.
    ``example_release_args``)."""
    module = sys.modules[module_name]
    steps = {step: getattr(module, step) for step in STEPS if hasattr(module, step)}
    return register(MethodCommands(name=module_name.rpartition(".")[2], help=help, **steps, **options))


def load_plugins() -> None:
    """Import the modules named in ``$DPADAPT_PLUGINS`` (they may register methods and model kinds)."""
    for name in filter(None, (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(","))):
        importlib.import_module(name)


def methods() -> dict[str, MethodCommands]:
    """Every registered method (imports all modules of this package and the plugins)."""
    for mod in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{mod.name}")
    load_plugins()
    return dict(sorted(_METHODS.items()))
