"""Optimal-transport methods (DPOT, DP-SWD, ...); import submodules directly, e.g. ``dpadapt.transport.swd``."""
