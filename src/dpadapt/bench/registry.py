"""Declarative benchmark rows and the suite registry.

A suite is a function ``build(quick, epsilons) -> list[BenchTask]`` registered with
:func:`register_suite` in a module of :mod:`dpadapt.bench.suites` (discovered automatically),
optionally with a ``report(rows, out) -> list[Path]`` that writes the suite's own tables and plots
beside the result file ``out``.
Each :class:`BenchTask` names its dataset pair, method, mode, (ε, δ) and the number the paper
reports, and carries the function that runs one seed.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dpadapt.privacy.guarantee import Guarantee


@dataclasses.dataclass
class RunOutcome:
    """What one run of one task produced: the metric value and the guarantees actually spent."""

    value: float
    guarantees: dict[str, Guarantee] = dataclasses.field(default_factory=dict)
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def epsilon_spent(self) -> float:
        """Largest ε over the protected parties (∞ when nothing is protected)."""
        return max((g.epsilon for g in self.guarantees.values()), default=math.inf)

    @property
    def delta_spent(self) -> float | None:
        return max((g.delta for g in self.guarantees.values()), default=None)

    @property
    def guarantee_valid(self) -> bool:
        return bool(self.guarantees) and all(g.valid for g in self.guarantees.values())


#: How a cause is labelled: measured (a run isolates it) or a candidate (no run isolates it yet).
CAUSE_LABELS = ("measured: ", "candidate: ")


@dataclasses.dataclass
class BenchTask:
    """One benchmark row: suite × task × method × mode × (ε, δ)."""

    suite: str
    task: str
    method: str
    mode: str
    run: Callable[[int], RunOutcome]
    epsilon: float = math.inf
    delta: float | None = None
    metric: str = "accuracy"
    paper_value: float | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: The paper's table row this row stands beside (e.g. "PRIMA"): rows of one task sharing it form
    #: one line of the paper comparison (paper, paper mode, paper mode without noise, sound mode).
    paper_row: str | None = None
    #: One line: why paper mode misses the paper's number (shown when it is > 5 points off). It starts
    #: with "measured: " (backed by a run that isolates it, named in the suite's write-up) or
    #: "candidate: " (not isolated by a run); anything else is refused (:data:`CAUSE_LABELS`).
    cause: str | None = None
    #: Why this row cannot be compared with the paper here (e.g. the paper's data is not available);
    #: printed as "blocked on data: ..." in both tables.
    blocked: str | None = None

    def __post_init__(self) -> None:
        if self.cause is not None and not self.cause.startswith(CAUSE_LABELS):
            raise ValueError(f"a cause must start with one of {CAUSE_LABELS}: {self.cause!r}")

    @property
    def key(self) -> tuple:
        return (self.task, self.method, self.mode, self.epsilon)


SuiteBuilder = Callable[[bool, Sequence[float] | None], list[BenchTask]]
SuiteReport = Callable[[list[dict[str, Any]], Path], list[Path]]


@dataclasses.dataclass(frozen=True)
class Suite:
    name: str
    build: SuiteBuilder
    description: str
    report: SuiteReport | None = None


_SUITES: dict[str, Suite] = {}


def register_suite(name: str, description: str = "", report: SuiteReport | None = None) -> Callable[[SuiteBuilder], SuiteBuilder]:
    """Decorator registering ``build(quick, epsilons)`` as benchmark suite ``name`` (``report``: see module doc)."""

    def deco(build: SuiteBuilder) -> SuiteBuilder:
        if name in _SUITES and _SUITES[name].build is not build:
            raise ValueError(f"benchmark suite {name!r} is registered twice")
        _SUITES[name] = Suite(name, build, description or (build.__doc__ or "").strip().splitlines()[0], report)
        return build

    return deco


def _discover() -> None:
    import dpadapt.bench.suites as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{mod.name}")


def all_suites() -> dict[str, Suite]:
    """All registered suites (importing every module of :mod:`dpadapt.bench.suites`)."""
    _discover()
    return dict(sorted(_SUITES.items()))


def get_suite(name: str) -> Suite:
    registered = all_suites()
    if name not in registered:
        raise KeyError(f"unknown benchmark suite {name!r}; available: {', '.join(registered)}")
    return registered[name]
