"""dpadapt — differentially private domain adaptation.

Five published families (DPOT, DP-SWD, private discrepancy minimisation, PRIMA/PRISA,
DPDA/G-DPDA) and their non-private counterparts, with every released quantity carrying a
:class:`~dpadapt.privacy.Guarantee` computed with ``dp-accounting``.

Sub-packages are imported on first use (``import dpadapt`` is cheap; ``dpadapt.Release`` imports
what it needs).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {"Guarantee": "dpadapt.privacy.guarantee", "Release": "dpadapt.release"}

__all__ = ["Guarantee", "Release", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpadapt' has no attribute {name!r}")
