"""The family contract's examples of ``dpswd`` and ``dpda`` (``api.Family.example`` / ``run_parties``).

Each runs the registered family's party steps (:func:`dpadapt.api.family`, defined in
:mod:`dpadapt.deep.families`, which imports this module) on 60 + 40 rows of small shifted
blobs in well under a second; ``tests/test_family_contract.py`` checks them.
"""

from __future__ import annotations

from typing import Any

from dpadapt.api import family as family_steps
from dpadapt.datasets.synthetic import contract_blobs
from dpadapt.configs.deep import DPDAConfig, DPSWDConfig
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import Release


def dpswd_example(random_state: int) -> tuple[DPSWDConfig, dict[str, Any]]:
    """One DP-SWD release of the target's 40 rows on k = 10 public directions (a distance: no label set)."""
    return DPSWDConfig(epsilon=1.0, random_state=random_state, k=10), contract_blobs(random_state)


def dpswd_run(config: DPSWDConfig, data: dict[str, Any]) -> tuple[list[Release], float]:
    """plan on public facts → the target's release ``clip(X_t) U + V`` → the source's DP-SWD (a float)."""
    family = family_steps("dpswd")
    _, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
    Xt = data["Xt"]
    rel = family.release(family.plan(config, {"n": Xt.shape[0], "d": Xt.shape[1]}), Xt, noise)
    return [rel], family.adapt(rel, data["Xs"], config)


def dpda_example(random_state: int) -> tuple[DPDAConfig, dict[str, Any]]:
    """DPDA with full-batch DP-SGD (batch = the target's 40 rows, no subsampling: a fast accountant), 2 epochs."""
    config = DPDAConfig(epsilon=8.0, noise_multiplier=2.0, batch_size=40, epochs=2, hidden=(8,),
                        classes=(0, 1, 2), random_state=random_state)
    return config, contract_blobs(random_state)


def dpda_run(config: DPDAConfig, data: dict[str, Any]) -> tuple[list[Release], Any]:
    """plan on public sizes → the target trains by DP-SGD and releases the network → the receiver's model."""
    family = family_steps("dpda")
    _, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
    plan = family.plan(config, {"n_source": len(data["Xs"]), "n_target": len(data["Xt"])})
    rel = family.release(plan, (data["Xs"], data["ys"], data["Xt"]), noise)
    return [rel], family.adapt(rel, data["Xt"], config)
