"""Where the deep training loops run: the device, and one thread budget for torch and numpy.

* :func:`training_device` — ``"auto"`` trains on the GPU when torch sees one (CUDA), else on the
  CPU. Only the loops move there: data and networks go to the device at the start of a run and
  the networks come back to the CPU at its end, so prediction, releases and saved models are the
  same objects whatever trained them. Privacy noise is still drawn on the CPU from the secret
  stream (:mod:`dpadapt.privacy.mechanisms`) and then moved, so the device changes no guarantee.
* :func:`blas_like_torch` — the per-step DP-SWD loops run a torch step, then numpy/SciPy work
  (‖U‖op, the noisy projections) on every step. Left alone, OpenBLAS sizes its own pool to every
  core and its idle threads keep spinning while torch computes: on 2 cores this made the sound
  per-step design 1.7× slower than non-private SWD, although it does less work (no gradient
  through the target batch). Measured in ``benchmarks/perf/deep_overheads.py``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from threadpoolctl import threadpool_limits

from dpadapt.configs.deep import check_device


def training_device(requested: str = "auto") -> torch.device:
    """The device a training loop runs on: ``"auto"`` → CUDA when available, else CPU; otherwise the one asked for."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(check_device(requested))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {requested!r} was asked for but torch sees no CUDA device; use 'auto' or 'cpu'")
    return device


@contextlib.contextmanager
def blas_like_torch() -> Iterator[None]:
    """Within the block, numpy's BLAS uses as many threads as torch (``torch.get_num_threads()``)."""
    with threadpool_limits(limits=torch.get_num_threads(), user_api="blas"):
        yield
