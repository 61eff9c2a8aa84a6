"""One shape for every method family: ``Config → plan → release → adapt → estimator``.

Every family (``dpot``, ``dpswd``, ``discrepancy``, ``prima``, ``dpda``, ``classstats``) exposes

* ``Config`` — a frozen dataclass declaring each hyper-parameter **once**, with its help text and
  constraints (:func:`param`). The estimator's ``__init__`` signature and the CLI options are
  generated from it.
* ``plan(config, facts) -> Plan`` — everything that can be decided from public facts (sizes, the
  public label set, the feature dimension) before any private row is read or any noise drawn: σ,
  steps, and the :class:`~dpadapt.privacy.Guarantee` of what will be released.
* ``release(plan, data, noise) -> Release`` — the data owner's step; noise only through
  :mod:`dpadapt.privacy.mechanisms`.
* ``adapt(release, data, config) -> model`` — the receiver's step; post-processing only.
* an estimator (:class:`~dpadapt.base.ConfigEstimator` subclass) that runs exactly those party steps. It loads
  scikit-learn, so this module and the party steps do not: ``ConfigEstimator`` is imported from
  :mod:`dpadapt.base` on first use, and a family may register its estimator by name (:class:`Family`).

Conventions shared by every family: non-private is ``epsilon=None``; ``privacy_mode`` is
``"sound"`` or ``"paper"``; the public random source is ``random_state`` (noise never comes from it,
see :func:`dpadapt.privacy.mechanisms.random_streams`); a release of the wrong family or kind is a
:class:`~dpadapt.release.ReleaseError`; the label set ``classes`` is public and required whenever
a private label-dependent quantity is released.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dpadapt import lazy
from dpadapt.configs.base import Config, ConfigError, param, resolve_epsilon  # noqa: F401  (the family API: declared in configs/)
from dpadapt.privacy.guarantee import REPRODUCIBLE_NOISE_REASON, Guarantee

if TYPE_CHECKING:
    from dpadapt.base import ConfigEstimator

__getattr__, __dir__ = lazy.attach(__name__, {"ConfigEstimator": "dpadapt.base"})


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a party will release, decided from public facts before any private row is read.

    ``guarantee`` is the :class:`Guarantee` of the release (``None`` when non-private);
    ``calibration`` holds the numbers the release will use (σ, steps, clipping bound, ...);
    ``facts`` the public facts it was made from (sizes, the label set, the basis dimension, ...).
    """

    family: str
    kind: str
    config: Config
    facts: Mapping[str, Any]
    guarantee: Guarantee | None
    calibration: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.config.private and self.guarantee is None:
            raise ValueError("a private plan needs its guarantee")
        if self.guarantee is not None and self.config.reproducible_noise:
            object.__setattr__(self, "guarantee", self.guarantee.invalidated(REPRODUCIBLE_NOISE_REASON))


@dataclasses.dataclass(frozen=True)
class Family:
    """One method family's party steps, for the CLI, the benchmarks and the contract tests.

    Required: ``name``, ``config`` (its :class:`Config` subclass), ``protected`` (the parties whose
    data it protects), ``plan``/``release``/``adapt`` (the party steps) and ``estimator``: the estimator
    class, or its public dotted name (``"dpadapt.sound.SoundDA"``) for a family whose module leaves
    scikit-learn unimported; :meth:`estimator_class` imports it.

    Optional, read by the family contract test (``tests/test_family_contract.py``), which runs every
    registered family that fills in ``example`` and ``run_parties``:

    example : callable ``(random_state: int) -> (Config, data)``
        A small private run that finishes in about a second: a Config with ``epsilon`` set,
        ``classes`` set to the public label set and ``random_state`` the given integer
        (``reproducible_noise`` False), and ``data``, a dict of the parties' arrays with the keys
        ``"Xs"``, ``"ys"``, ``"Xt"`` (and ``"yt"`` if needed). The test may change ``classes``
        (adding a label absent from the data) and ``reproducible_noise`` with ``Config.replace``.
    run_parties : callable ``(config, data) -> (releases, model)``
        Runs ``plan`` → ``release`` → ``adapt`` on ``data`` exactly as two parties would: the
        noise from :func:`dpadapt.privacy.mechanisms.random_streams` of ``config.random_state``
        and ``config.reproducible_noise``; returns every :class:`~dpadapt.release.Release` that
        crosses between the parties (in order) and the adapted model (with ``classes_`` when it
        is a classifier).
    public_arrays : tuple of str
        Names of release arrays (or ``params`` keys) that are public randomness (projections,
        directions, partitions): equal for two runs with the same integer ``random_state``.
    noisy_arrays : tuple of str
        Names of release arrays that carry privacy noise: different for two runs with the same
        integer ``random_state`` unless ``reproducible_noise=True`` (then equal). At least one.
    classes_param : str or None
        The ``params`` key (or array name) under which a release that carries labels states its
        label set (``"classes"``); at least one release must state it, and every stated set must
        equal ``config.classes`` exactly. ``None`` for a family that is not a classifier (a
        regression, a distance): its example may leave ``classes`` None.
    """

    name: str
    config: type[Config]
    protected: tuple[str, ...]
    plan: Callable[..., Plan]
    release: Callable[..., Any]
    adapt: Callable[..., Any]
    estimator: type | str
    summary: str = ""
    example: Callable[[int], tuple[Config, Mapping[str, Any]]] | None = None
    run_parties: Callable[[Config, Mapping[str, Any]], tuple[Sequence[Any], Any]] | None = None
    public_arrays: tuple[str, ...] = ()
    noisy_arrays: tuple[str, ...] = ()
    classes_param: str | None = "classes"

    def estimator_class(self) -> type:
        """The family's estimator class (imported now when :attr:`estimator` names it)."""
        if not isinstance(self.estimator, str):
            return self.estimator
        module, _, name = self.estimator.rpartition(".")
        return getattr(importlib.import_module(module), name)


_FAMILIES: dict[str, Family] = {}


def register(family: Family) -> Family:
    """Add a family to the registry used by the CLI, the benchmarks and the contract tests."""
    _FAMILIES[family.name] = family
    return family


#: the modules whose import registers a family (each registers itself once, on first import)
FAMILY_MODULES = (
    "dpadapt.classstats",
    "dpadapt.sound",
    "dpadapt.transport",
    "dpadapt.alignment",
    "dpadapt.discrepancy",
    "dpadapt.deep.families",
)


def families() -> dict[str, Family]:
    """Every registered family, importing the method packages on first use."""
    for module in FAMILY_MODULES:
        importlib.import_module(module)  # idempotent: a family registers itself on first import
    return dict(_FAMILIES)


def family(name: str) -> Family:
    """The registered family ``name`` (its method packages are imported only if it is not registered yet)."""
    if name not in _FAMILIES:
        families()
    return _FAMILIES[name]
