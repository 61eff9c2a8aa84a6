"""One thread budget for loops that interleave torch with numpy linear algebra.

The per-step DP-SWD loops run a torch step, then numpy/SciPy work (‖U‖op, the noisy projections)
on every step. Left alone, OpenBLAS sizes its own pool to every core and its idle threads keep
spinning while torch computes: on 2 cores this made the sound per-step design 1.7× slower than
non-private SWD, although it does less work (no gradient through the target batch). Measured in
``benchmarks/scripts/deep_overheads.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from threadpoolctl import threadpool_limits


@contextlib.contextmanager
def blas_like_torch() -> Iterator[None]:
    """Within the block, numpy's BLAS uses as many threads as torch (``torch.get_num_threads()``)."""
    with threadpool_limits(limits=torch.get_num_threads(), user_api="blas"):
        yield
