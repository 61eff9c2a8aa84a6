"""dpadapt — differentially private domain adaptation.

Five published families (DPOT, DP-SWD, private discrepancy minimisation, PRIMA/PRISA,
DPDA/G-DPDA) and their non-private counterparts, with every released quantity carrying a
:class:`~dpadapt.privacy.Guarantee` computed with ``dp-accounting``.
"""

__version__ = "0.1.0"

from dpadapt.privacy.guarantee import Guarantee  # noqa: E402
from dpadapt.release import Release  # noqa: E402

__all__ = ["Guarantee", "Release", "__version__"]
