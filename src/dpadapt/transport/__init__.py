"""Optimal-transport methods: DPOT / DPDA (LeTien et al. 2019) and the non-private OTDA baseline."""

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

__all__ = [
    "OTDA",
    "DPOTAdaptation",
    "DPOTAdapter",
    "DPOTSourcePlan",
    "adapt_dpot",
    "barycentric_map",
    "debiased_cost",
    "draw_projection",
    "execute_dpot_source",
    "normalised_cost",
    "plan_dpot_source",
    "preprocess_rows",
    "release_dpot_source",
    "solve_ot",
]
