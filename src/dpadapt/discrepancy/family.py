"""The discrepancy family in the shared shape: ``plan(config, facts)`` once, target release, source adapt.

The target (private, unlabelled) releases q̂ over the public source rows (single-stage: also ŵ);
the public source fits the q̂-weighted regression (post-processing). ``facts``: ``X_source`` (the
public source rows, hard-wired) and ``n_target`` (public size).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpadapt.api import Family, Plan, register
from dpadapt.discrepancy import party, private
from dpadapt.discrepancy.core import default_mu, source_radius
from dpadapt.discrepancy.estimator import DiscrepancyConfig, DiscrepancyRegressor
from dpadapt.datasets.synthetic import make_bms_regression
from dpadapt.privacy.mechanisms import NoiseSource, random_streams
from dpadapt.release import Release, ReleaseError
from dpadapt.validation import check_features


def plan(config: DiscrepancyConfig, facts: dict[str, Any]) -> Plan:
    """The target's Guarantee and noise scale of the release of q̂, from public facts only."""
    if config.algorithm == "public_only":
        raise ValueError("public_only releases nothing from the target")
    Xs = check_features(facts["X_source"], "X_source")
    n, m = int(facts["n_target"]), Xs.shape[0]
    r_hat = source_radius(Xs)
    lam = 0.0 if config.algorithm == "single_stage" else config.lam
    mu = default_mu(config.K, m, n, r_hat) if config.mu is None else config.mu
    problem = private.Problem(None, Xs, n, float(mu), float(config.r), float(r_hat), float(lam), int(config.K))
    if not config.private:
        steps = private._non_private_plan()
        return Plan("discrepancy", party.KIND, config, dict(facts), None, {"steps": steps})
    eps, delta = float(config.epsilon), config.resolved_delta(n)
    if config.algorithm == "frank_wolfe":
        steps = private.plan_rnm_steps(problem, eps, delta, config.privacy_mode)
    elif config.algorithm == "mirror_descent":
        steps = private.plan_gaussian_steps(problem, eps, delta, config.privacy_mode)
    else:
        steps = private.plan_single_stage(problem, eps, delta, config.privacy_mode, config.Lambda, config.selection)
    return Plan("discrepancy", party.KIND, config, dict(facts), steps.guarantee, {"steps": steps, "mu": mu})


def release(plan_: Plan, data: dict[str, Any], public: np.random.Generator, noise: NoiseSource) -> Release:
    """Target party: run the planned noisy optimisation on its rows ``data["Xt"]`` and release q̂ (and ŵ)."""
    config: DiscrepancyConfig = plan_.config
    steps = plan_.calibration["steps"]
    Xs = check_features(plan_.facts["X_source"], "X_source")
    Xt = check_features(data["Xt"], "Xt (target)")
    if Xt.shape[0] != int(plan_.facts["n_target"]):
        raise ValueError("the target has a different number of rows than its plan")
    lam = 0.0 if config.algorithm == "single_stage" else config.lam
    problem = private.make_problem(Xt, Xs, K=config.K, lam=lam, r=config.r, mu=plan_.calibration.get("mu"))
    arrays: dict[str, np.ndarray] = {}
    if config.algorithm == "single_stage":
        res = private.run_single_stage(problem, steps, data["ys"], config.Lambda, None, config.selection, public, noise)
        arrays["q"], arrays["w"] = res.q, res.w
    elif config.algorithm == "frank_wolfe":
        arrays["q"] = private.run_noisy_frank_wolfe(problem, steps, noise)
    else:
        arrays["q"] = private.run_noisy_mirror_descent(problem, steps, noise, config.md_variant)
    params = {
        "algorithm": config.algorithm, "m": problem.m, "d": Xs.shape[1], "n": problem.n, "K": problem.K,
        "lam": problem.lam, "mu": problem.mu, "r": problem.r, "r_hat": problem.r_hat, "Lambda": config.Lambda,
        "md_variant": config.md_variant, "selection": config.selection, "privacy_mode": config.privacy_mode,
        "source_sha256": party.source_fingerprint(Xs),
    }
    return Release("discrepancy", party.KIND, "target", arrays, steps.guarantee, params)


def adapt(release_: Release, data: dict[str, Any], config: DiscrepancyConfig) -> DiscrepancyRegressor:
    """Source party: the q̂-weighted regression on its public rows ``data["Xs"], data["ys"]``."""
    if release_.method != "discrepancy" or release_.kind != party.KIND:
        raise ReleaseError(f"expected a discrepancy/{party.KIND} release, got {release_.method}/{release_.kind}")
    return party.adapt_from_weights(release_, data["Xs"], data["ys"], Lambda=config.Lambda, ridge=config.ridge)


def contract_example(random_state: int) -> tuple[DiscrepancyConfig, dict[str, Any]]:
    """The family contract's example (``api.Family.example``): noisy Frank–Wolfe, 60 public + 40 private rows.

    A regression (no label set): the family's ``classes_param`` is None.
    """
    data = make_bms_regression(m=60, n=40, d=5, n_test=1, random_state=random_state)
    return DiscrepancyConfig(epsilon=1.0, random_state=random_state, K=20), data


def contract_run(config: DiscrepancyConfig, data: dict[str, Any]) -> tuple[list[Release], DiscrepancyRegressor]:
    """The family contract's ``run_parties``: plan on public facts → target's release of q̂ → source's regression."""
    public, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
    rel = release(plan(config, {"X_source": data["Xs"], "n_target": len(data["Xt"])}), data, public, noise)
    return [rel], adapt(rel, data, config)


register(Family(
    name="discrepancy", config=DiscrepancyConfig, protected=("target",), plan=plan, release=release, adapt=adapt,
    estimator=DiscrepancyRegressor, example=contract_example, run_parties=contract_run,
    noisy_arrays=("q",), classes_param=None,
    summary="private target weights q̂ over a public labelled source, then a weighted regression (Bassily et al. 2023)",
))
