"""The base of every family's hyper-parameters: a frozen dataclass whose fields are declared with :func:`param`.

Each hyper-parameter is declared once, with its help text and constraints; the estimators'
signatures and the CLI options are generated from it. Light on purpose (numpy only): the CLI reads
these declarations for its help pages without importing any method family.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

_MISSING = dataclasses.MISSING

#: The budget a DP estimator uses when ``epsilon`` is not given (diffprivlib's practice: a stated private
#: default and a :class:`PrivacyDefaultWarning`, never a silent non-private run). ``epsilon=None`` is the
#: non-private counterpart and must be said out loud.
PRIVATE_DEFAULT_EPSILON = 1.0


class PrivacyDefaultWarning(UserWarning):
    """``epsilon`` was not given: the estimator runs at the stated private default :data:`PRIVATE_DEFAULT_EPSILON`."""


#: ``epsilon``'s default, "not given" (a plain string, as scikit-learn's ``"auto"`` / ``"warn"`` defaults): resolved
#: to :data:`PRIVATE_DEFAULT_EPSILON` with a :class:`PrivacyDefaultWarning`.
DEFAULT_EPSILON = "default"


def resolve_epsilon(value: Any, owner: str = "this estimator") -> Any:
    """``value``, or the private default (with a warning) when it is :data:`DEFAULT_EPSILON`."""
    if not (isinstance(value, str) and value == DEFAULT_EPSILON):
        return value
    import warnings

    warnings.warn(f"{owner}: epsilon not given, so the run is private at the default ε = {PRIVATE_DEFAULT_EPSILON:g}; "
                  "pass epsilon=... to choose the budget, or epsilon=None for the non-private counterpart",
                  PrivacyDefaultWarning, stacklevel=4)
    return PRIVATE_DEFAULT_EPSILON


class ConfigError(ValueError):
    """A hyper-parameter is out of its declared range (one line, names the parameter)."""


def param(
    default: Any = _MISSING,
    *,
    help: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    choices: Sequence[Any] | None = None,
    optional: bool = False,
    cli: bool = True,
    check: Callable[[Any], Any] | None = None,
) -> Any:
    """Declare one hyper-parameter of a :class:`Config` with its constraints.

    ``low``/``high`` bound a number (``low_open`` makes the lower bound strict); ``choices`` lists the
    allowed values; ``optional`` allows ``None``; ``check`` is a last custom validator returning the
    normalised value (or raising). ``cli=False`` keeps it out of the generated CLI options.
    """
    meta = {
        "help": help,
        "low": low,
        "high": high,
        "low_open": low_open,
        "choices": tuple(choices) if choices is not None else None,
        "optional": optional,
        "cli": cli,
        "check": check,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("param defaults must be immutable (use a tuple)")
    return dataclasses.field(default=default, metadata=meta)


def _check_value(name: str, value: Any, meta: Mapping[str, Any]) -> Any:
    if value is None:
        if meta.get("optional"):
            return None
        raise ConfigError(f"{name} must be given (None is not allowed)")
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    low, high = meta.get("low"), meta.get("high")
    if low is not None or high is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ConfigError(f"{name} must be a number, got {value!r}")
        if math.isnan(float(value)):
            raise ConfigError(f"{name} must be a number, got NaN")
        if low is not None and (value < low or (meta.get("low_open") and value == low)):
            sign = ">" if meta.get("low_open") else "≥"
            raise ConfigError(f"{name} must be {sign} {low:g}, got {value!r}")
        if high is not None and value > high:
            raise ConfigError(f"{name} must be ≤ {high:g}, got {value!r}")
    check = meta.get("check")
    if check is not None:
        try:
            value = check(value)
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{name}: {exc}") from None
    return value


def _check_classes(classes: Any) -> tuple:
    values = tuple(np.asarray(classes).ravel().tolist())
    if len(values) < 2:
        raise ValueError("the public label set needs at least two classes")
    if len(set(values)) != len(values):
        raise ValueError("the public label set has repeated labels")
    return values


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
    """Hyper-parameters shared by every family; subclasses add their own with :func:`param`."""

    epsilon: float | None = param(
        DEFAULT_EPSILON, optional=True, low=0.0, low_open=True,
        help=f"privacy budget ε of each protected party; not given: the private default {PRIVATE_DEFAULT_EPSILON:g} "
             "(with a PrivacyDefaultWarning); None = the non-private counterpart",
    )
    delta: float | None = param(
        None, optional=True, low=0.0, high=1.0, low_open=True,
        help="δ of each protected party; None = 1/(10 n) from the public size n",
    )
    privacy_mode: str = param(
        "sound", choices=("sound", "paper"),
        help="'sound': a record-level guarantee that holds; 'paper': the published procedure (flagged invalid)",
    )
    classes: tuple | None = param(
        None, optional=True, check=_check_classes,
        help="the public label set (required when labels are protected; never inferred from private labels)",
    )
    random_state: int | None = param(
        None, optional=True, cli=True,
        help="seed of the public randomness (projections, directions, splits); noise never depends on it",
    )
    reproducible_noise: bool = param(
        False, choices=(False, True),
        help="derive the privacy noise from random_state too (for tests; the noise is then only as secret as the seed)",
    )

    #: family name, set by each subclass
    family: ClassVar[str] = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", resolve_epsilon(self.epsilon, type(self).__name__))
        for f in dataclasses.fields(self):
            if not f.metadata:
                continue
            value = _check_value(f.name, getattr(self, f.name), f.metadata)
            object.__setattr__(self, f.name, value)
        if self.epsilon is not None and math.isinf(self.epsilon):
            raise ConfigError("epsilon must be finite; use epsilon=None for the non-private counterpart")

    @property
    def private(self) -> bool:
        """Whether a protected party's data goes through a DP mechanism (``epsilon`` set)."""
        return self.epsilon is not None

    def replace(self, **changes: Any) -> Config:
        """A copy with some hyper-parameters changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def parameters(cls) -> list[dataclasses.Field]:
        """The declared hyper-parameters in declaration order (base ones first)."""
        return [f for f in dataclasses.fields(cls) if f.metadata]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self.parameters()}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Config:
        known = {f.name for f in cls.parameters()}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown parameter(s) for {cls.family or cls.__name__}: {', '.join(unknown)}")
        return cls(**values)

    def resolved_delta(self, n: int) -> float:
        """δ to use for a protected dataset of public size ``n``: the configured one, or 1/(10 n).

        In sound mode δ ≥ 1/n is refused (a mechanism that publishes one random record satisfies it).
        Under ``relation="add_remove"`` n is private: δ must be given — a default
        1/(10 n), or a refusal that depends on n, would reveal it — and is used as given.
        """
        if getattr(self, "relation", "replace_one") == "add_remove":
            if self.delta is None:
                raise ConfigError(
                    "relation='add_remove' needs an explicit delta: the default 1/(10 n) would publish the private size n "
                    "(choose δ ≪ 1/n from a public bound on n)"
                )
            return float(self.delta)
        if self.delta is None:
            return 1.0 / (10.0 * max(int(n), 1))
        if self.privacy_mode == "sound" and n > 0 and self.delta >= 1.0 / n:
            raise ConfigError(
                f"delta={self.delta:g} is ≥ 1/n = {1.0 / n:g}: such a δ allows publishing a whole record; use δ ≤ 1/(10 n)"
            )
        return float(self.delta)

    def required_classes(self) -> tuple:
        """The public label set; an error naming ``classes=`` when it was not given."""
        if self.classes is None:
            raise ConfigError(
                "classes= must be given: the label set is a public parameter (inferring it from private labels leaks them)"
            )
        return self.classes
