"""Deep domain adaptation in PyTorch: DANN, DPDA / G-DPDA, and DP-SWD representation learning.

* :class:`~dpadapt.deep.dann.DANN` — non-private DANN (``adapt=False``: source-only network).
* :class:`~dpadapt.deep.dpda.DPDA` — target protected by DP-SGD (source public).
* :class:`~dpadapt.deep.dpda.GDPDA` — source and target protected, accounted separately.
* :class:`~dpadapt.deep.swd_da.DPSWDAdapter` — DP sliced-Wasserstein DA (target protected through
  noisy projections of its features), :mod:`~dpadapt.deep.generator` — DP-SWD generative model.
* :mod:`~dpadapt.deep.dpsgd` — per-example gradients (ghost clipping for Linear layers, torch.func
  otherwise), joint clipping, Gaussian noise.
"""

from dpadapt.deep.dann import (
    DANN,
    DANNNetwork,
    GradientReversal,
    grl_schedule,
    mlp_network,
)
from dpadapt.deep.dpda import DPDA, GDPDA
from dpadapt.deep.swd_da import DPSWDAdapter

__all__ = ["DANN", "DANNNetwork", "DPDA", "DPSWDAdapter", "GDPDA", "GradientReversal", "grl_schedule", "mlp_network"]
