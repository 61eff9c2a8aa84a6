"""Names a package exports but imports on first use (PEP 562).

A method package's party steps need NumPy only; its estimator (a scikit-learn ``BaseEstimator``) and the
privacy accountant are what make an import slow. The package lists the estimator with :func:`attach`, so that
``import dpadapt.sound`` stays light while ``from dpadapt.sound import SoundDA``, ``dir()``, pickles and the
documentation (``__all__`` plus an import under ``TYPE_CHECKING``) see it as before.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def attach(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for the module ``package``: each of ``names`` (name → the module that defines
    it) is imported from its module on first access and then kept in ``package``'s namespace."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(names[name]), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
