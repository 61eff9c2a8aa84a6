"""dpadapt — differentially private domain adaptation.

Five published families (DPOT, DP-SWD, private discrepancy minimisation, PRIMA/PRISA,
DPDA/G-DPDA) and their non-private counterparts, with every released quantity carrying a
:class:`~dpadapt.privacy.Guarantee` computed with ``dp-accounting``.

Sub-packages are imported on first use (``import dpadapt`` is cheap; ``dpadapt.Release`` imports
what it needs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpadapt import lazy

__version__ = "0.1.0"

if TYPE_CHECKING:
    from dpadapt.privacy.guarantee import Guarantee
    from dpadapt.release import Release

__getattr__, __dir__ = lazy.attach(__name__, {"Guarantee": "dpadapt.privacy.guarantee", "Release": "dpadapt.release"})

__all__ = ["Guarantee", "Release", "__version__"]
