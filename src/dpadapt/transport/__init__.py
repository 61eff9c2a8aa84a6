"""Optimal-transport methods.

* DPOT (family ``dpot``): sound mode is a post-processing of the sound route's request and release
  (:mod:`dpadapt.sound`, the ``prototypes`` design: DP class prototypes refined by entropic OT on the
  receiver's rows); the per-row DPOT/DPDA release (LeTien et al. 2019, paper mode) and the non-private
  OTDA baseline (:mod:`.dpot`, :mod:`.da`).
* Sliced Wasserstein and DP-SWD (Rakotomamonjy & Ralaivola 2021) in :mod:`dpadapt.transport.swd`.
"""

from dpadapt.transport.coupling import (
    barycentric_map,
    debiased_cost,
    normalised_cost,
    solve_ot,
)
from dpadapt.transport.da import OTDA, Config, DPOTAdaptation, DPOTAdapter, adapt, adapt_dpot, contract_example, contract_run, plan
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

from dpadapt import sound  # noqa: E402
from dpadapt.api import Family, register  # noqa: E402

register(Family(
    name="dpot", config=Config, protected=("source",), plan=plan, release=sound.release, adapt=adapt,
    estimator=DPOTAdapter, summary="DPOT: the receiver's prototypes request → the source's ONE Gaussian of class sums and "
                                   "counts → prototypes refined by OT (sound); per-row release (paper)",
    example=contract_example, run_parties=contract_run, public_arrays=("mean", "components"),
    noisy_arrays=("sums", "counts"),
))
