"""Deep domain adaptation in PyTorch: DANN and its differentially private variants (DPDA, G-DPDA)."""

from dpadapt.deep.dann import DANN, DANNNetwork, GradientReversal, grl_schedule, mlp_network

__all__ = ["DANN", "DANNNetwork", "GradientReversal", "grl_schedule", "mlp_network"]
