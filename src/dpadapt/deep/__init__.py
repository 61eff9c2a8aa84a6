"""Deep domain adaptation in PyTorch: DANN and its differentially private variants (DPDA, G-DPDA).

* :class:`~dpadapt.deep.dann.DANN` — non-private DANN (``adapt=False``: source-only network).
* :class:`~dpadapt.deep.dpda.DPDA` — target protected by DP-SGD (source public).
* :class:`~dpadapt.deep.dpda.GDPDA` — source and target protected, accounted separately.
* :mod:`~dpadapt.deep.dpsgd` — per-example gradients (ghost clipping for Linear layers, torch.func
  otherwise), joint clipping, Gaussian noise.
"""

from dpadapt.deep.dann import DANN, DANNNetwork, GradientReversal, grl_schedule, mlp_network
from dpadapt.deep.dpda import DPDA, GDPDA

__all__ = ["DANN", "DANNNetwork", "DPDA", "GDPDA", "GradientReversal", "grl_schedule", "mlp_network"]
