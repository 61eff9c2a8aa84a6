"""Optimal-transport methods.

* DPOT / DPDA (LeTien et al. 2019) and the non-private OTDA baseline (:mod:`.dpot`, :mod:`.da`).
* Sliced Wasserstein and DP-SWD (Rakotomamonjy & Ralaivola 2021) in :mod:`dpadapt.transport.swd`.
"""

from dpadapt.transport.coupling import (
    barycentric_map,
    debiased_cost,
    normalised_cost,
    solve_ot,
)
from dpadapt.transport.da import OTDA, DPOTAdaptation, DPOTAdapter, adapt_dpot
from dpadapt.transport.dpot import (
    DPOTSourcePlan,
    draw_projection,
    execute_dpot_source,
    plan_dpot_source,
    preprocess_rows,
    release_dpot_source,
)
from dpadapt.transport.swd import dp_swd

__all__ = [
    "OTDA",
    "DPOTAdaptation",
    "DPOTAdapter",
    "DPOTSourcePlan",
    "adapt_dpot",
    "barycentric_map",
    "debiased_cost",
    "dp_swd",
    "draw_projection",
    "execute_dpot_source",
    "normalised_cost",
    "plan_dpot_source",
    "preprocess_rows",
    "release_dpot_source",
    "solve_ot",
]
