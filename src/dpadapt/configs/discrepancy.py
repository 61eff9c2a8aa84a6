"""Hyper-parameters of private discrepancy minimisation (:mod:`dpadapt.discrepancy`)."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from dpadapt.configs.base import Config, param

ALGORITHMS = ("frank_wolfe", "mirror_descent", "single_stage", "public_only")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DiscrepancyConfig(Config):
    """Hyper-parameters of private discrepancy minimisation (Bassily, Mohri & Suresh, AISTATS 2023).

    ``epsilon=None`` is the non-private counterpart (exact discrepancy minimisation for the two-stage
    algorithms, noiseless iterations for single-stage).
    """

    family: ClassVar[str] = "discrepancy"

    algorithm: str = param("frank_wolfe", choices=ALGORITHMS,
                           help="noisy Frank–Wolfe (Alg. 2), noisy mirror descent (Alg. 3), single-stage FW (Alg. 1) or uniform weights")
    K: int = param(100, low=1, help="iterations (each step costs O(m d²); 100 runs in seconds on a few thousand rows)")
    lam: float = param(1e-3, low=0.0, help="ℓ2 regulariser λ on q")
    mu: float | None = param(None, optional=True, low=0.0, low_open=True,
                             help="softmax parameter (None: μ = √(K log(m+n)/(8r̂⁴)))")
    r: float = param(1.0, low=0.0, low_open=True, help="public bound on target row norms (rows are clipped to it)")
    Lambda: float | None = param(2.0, optional=True, low=0.0, low_open=True,
                                 help="norm bound on w (hypothesis set); None: unconstrained second stage")
    ridge: float = param(0.0, low=0.0, help="ridge term of the second stage")
    md_variant: str = param("entropic", choices=("entropic", "pnorm"), help="mirror map of mirror descent")
    selection: str = param("last", choices=("last", "uniform", "paper_argmin"), help="single-stage output iterate")
