"""Optimal-transport methods.

* DPOT (family ``dpot``): sound mode is the class-statistics protocol (:mod:`dpadapt.classstats`);
  the per-row DPOT/DPDA release (LeTien et al. 2019) and the non-private OTDA baseline
  (:mod:`.dpot`, :mod:`.da`).
* Sliced Wasserstein and DP-SWD (Rakotomamonjy & Ralaivola 2021) in :mod:`dpadapt.transport.swd`.
"""

from dpadapt.transport.coupling import (
    barycentric_map,
    debiased_cost,
    normalised_cost,
    solve_ot,
)
from dpadapt.transport.da import OTDA, Config, DPOTAdaptation, DPOTAdapter, adapt, adapt_dpot, plan, release
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
    "Config",
    "adapt",
    "plan",
    "release",
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

import functools  # noqa: E402

from dpadapt.api import Family, register  # noqa: E402
from dpadapt.classstats import contract_example, contract_run  # noqa: E402

register(Family(
    name="dpot", config=Config, protected=("source",), plan=plan, release=release, adapt=adapt,
    estimator=DPOTAdapter, summary="DPOT: target basis → source DP class statistics → target refinement (sound); per-row release (weak / paper)",
    example=functools.partial(contract_example, config_class=Config), run_parties=contract_run,
    public_arrays=("mean", "components"), noisy_arrays=("sums", "counts"),
))
