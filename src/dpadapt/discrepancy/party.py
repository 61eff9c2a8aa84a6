"""Two-party steps: the private target releases q̂ (or (q̂, ŵ)); the public source adapts.

Protocol (spec 03 §1: the source S is public and "hard-wired"; only the target T is protected):

1. The source publishes its feature rows (and, for the single-stage algorithm, its labels).
2. **Target** (:func:`plan_weights_release`): clips its rows to the public r, runs the noisy
   optimisation locally (every iteration needs ∇F̃_T, i.e. T) and releases only the final q̂ ∈ Δ_m
   over the source rows (single-stage: also ŵ ∈ B(Λ)). The release records a SHA-256 fingerprint
   of the source features so q̂ cannot be applied to different rows by mistake.
3. **Source** (:func:`adapt_from_weights`): fits the q̂-weighted norm-constrained regression on
   its labelled rows (post-processing) or, single-stage, uses ŵ directly.

The Guarantee is computed before any noise is drawn (:class:`PlannedWeights`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable

import numpy as np

from dpadapt.discrepancy import private
from dpadapt.discrepancy.core import check_simplex
from dpadapt.discrepancy.estimator import DiscrepancyRegressor
from dpadapt.discrepancy.stage2 import weighted_regression
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.release import Release, ReleaseError
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.validation import check_features

METHOD = "discrepancy"
KIND = "source_weights"
PRIVATE_ALGORITHMS = ("frank_wolfe", "mirror_descent", "single_stage")


def source_fingerprint(X_source) -> str:
    """SHA-256 of the public source features (float64, C order) — ties q̂ to its rows."""
    X = np.ascontiguousarray(check_features(X_source, "X_source"), dtype=np.float64)
    return hashlib.sha256(repr(X.shape).encode() + X.tobytes()).hexdigest()


@dataclasses.dataclass(frozen=True)
class PlannedWeights:
    """The target's release, priced (``guarantee``) but not yet drawn (``execute``)."""

    guarantee: Guarantee
    execute: Callable[[], Release]


def plan_weights_release(
    X_target,
    X_source,
    epsilon: float,
    delta: float,
    *,
    algorithm: str = "frank_wolfe",
    y_source=None,
    r: float,
    K: int = 1000,
    lam: float = 1e-3,
    mu: float | None = None,
    Lambda: float = 2.0,
    md_variant: str = "entropic",
    selection: str = "last",
    privacy_mode: str = "sound",
    random_state=None,
) -> PlannedWeights:
    """Target side: price and prepare the release of q̂ (and ŵ for ``single_stage``).

    Privacy: the returned guarantee — (ε, δ)-DP for the target, record level, replace-one — is
    the one of the chosen algorithm (:mod:`dpadapt.discrepancy.private`); ε must be finite.
    """
    if algorithm not in PRIVATE_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {PRIVATE_ALGORITHMS}, got {algorithm!r}")
    if math.isinf(float(epsilon)):
        raise ValueError("a release needs a finite epsilon (the non-private baseline releases nothing private)")
    public, noise = random_streams(random_state)
    problem = private.make_problem(X_target, X_source, K=K, lam=0.0 if algorithm == "single_stage" else lam,
                                   r=r, mu=mu)
    if algorithm == "single_stage":
        if y_source is None:
            raise ValueError("the single-stage algorithm needs the public source labels")
        plan = private.plan_single_stage(problem, epsilon, delta, privacy_mode, Lambda, selection)
    elif algorithm == "frank_wolfe":
        plan = private.plan_rnm_steps(problem, epsilon, delta, privacy_mode)
    else:
        plan = private.plan_gaussian_steps(problem, epsilon, delta, privacy_mode)
    fingerprint = source_fingerprint(problem.X_source)

    def execute() -> Release:
        arrays: dict[str, np.ndarray] = {}
        if algorithm == "single_stage":
            res = private.run_single_stage(problem, plan, y_source, Lambda, None, selection, public, noise)
            arrays["q"], arrays["w"] = res.q, res.w
        elif algorithm == "frank_wolfe":
            arrays["q"] = private.run_noisy_frank_wolfe(problem, plan, noise)
        else:
            arrays["q"] = private.run_noisy_mirror_descent(problem, plan, noise, md_variant)
        params = {
            "algorithm": algorithm, "m": problem.m, "d": problem.X_source.shape[1], "n": problem.n,
            "K": problem.K, "lam": problem.lam, "mu": problem.mu, "r": problem.r, "r_hat": problem.r_hat,
            "Lambda": Lambda, "md_variant": md_variant, "selection": selection, "privacy_mode": privacy_mode,
            "source_sha256": fingerprint,
        }
        return Release(METHOD, KIND, "target", arrays, plan.guarantee, params)

    return PlannedWeights(plan.guarantee, execute)


def adapt_from_weights(release: Release, X_source, y_source, *, Lambda: float | None = None,
                       ridge: float = 0.0) -> DiscrepancyRegressor:
    """Source side: a fitted :class:`DiscrepancyRegressor` from the target's release (post-processing).

    Two-stage releases: q̂-weighted regression with ‖w‖ ≤ Λ (default: the Λ recorded in the
    release). Single-stage: the released ŵ. Refuses a release computed for other source rows.
    """
    if release.method != METHOD or release.kind != KIND:
        raise ReleaseError(f"expected a {METHOD}/{KIND} release, got {release.method}/{release.kind}")
    Xs = check_features(X_source, "X_source")
    if release.params.get("source_sha256") != source_fingerprint(Xs):
        raise ReleaseError("this release was computed for different source rows (fingerprint mismatch); "
                           "use the exact source feature file the target party used")
    ys = np.asarray(y_source, dtype=np.float64).ravel()
    Lambda = float(release.params["Lambda"]) if Lambda is None else Lambda
    q = check_simplex(release["q"], Xs.shape[0])
    w = np.asarray(release["w"], dtype=np.float64) if "w" in release.arrays else weighted_regression(
        q, Xs, ys, Lambda=Lambda, ridge=ridge)
    model = DiscrepancyRegressor(epsilon=None, algorithm=release.params["algorithm"], Lambda=Lambda, ridge=ridge,
                                 r=float(release.params["r"]), K=int(release.params["K"]))
    model.config_ = model.make_config()
    model.q_, model.coef_, model.n_features_in_ = q, w, Xs.shape[1]
    model.details_ = dict(release.params)
    model.guarantees_ = {"target": release.guarantee}
    return model
