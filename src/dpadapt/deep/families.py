"""The ``dpswd`` and ``dpda`` families on the shared shape of :mod:`dpadapt.api`.

``dpswd`` (target protected) — one-shot DP-SWD release:
    ``plan(DPSWDConfig, {"n": n_t, "d": d}) -> Plan`` (σ multiplier and Guarantee of one release
    of all n rows, spectral sensitivity 2R‖U‖op); ``release(plan, X_t, noise=None) -> Release``
    (``clip(X_t) U + V``; U from the public stream of ``random_state``, V secret);
    ``adapt(release, X_s, config) -> float`` (DP-SWD between the receiver's rows and the release,
    post-processing). Estimator: :class:`~dpadapt.deep.swd_da.DPSWDAdapter` (the iterative
    protocol of Algorithm 2 in one process).

``dpda`` (target protected; G-DPDA: both) — DP-SGD training of DANN by the protected party:
    ``plan(DPDAConfig | GDPDAConfig, {"n_source": n_s, "n_target": n_t}) -> Plan`` (σ, steps and
    the Guarantee, before any row is read); ``release(plan, (X_s, y_s, X_t), noise=None) ->
    Release`` (the trained network's parameters, covered by DP-SGD); ``adapt(release, X, config)
    -> ReleasedNetwork`` (a predictor built from the released parameters only).
"""

from __future__ import annotations


import numpy as np
import torch

from dpadapt.api import Family, Plan, register
from dpadapt.base import binary_scores
from dpadapt.deep import contract_examples
from dpadapt.configs.deep import DANNConfig, DPDAConfig, DPSWDConfig, GDPDAConfig
from dpadapt.deep.dann import DANN, mlp_network, to_tensor
from dpadapt.deep.dpda import DPDA, GDPDA
from dpadapt.deep.swd_da import DPSWDAdapter
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import NoiseSource
from dpadapt.release import Release, ReleaseError
from dpadapt.transport import swd

# --- dpswd ---------------------------------------------------------------------------------------


def plan_dpswd(config: DPSWDConfig, facts) -> Plan:
    """One release of n clipped rows on k public directions (analytic Gaussian, spectral sensitivity)."""
    n, d = int(facts["n"]), int(facts["d"])
    clip = float(config.clip_norm or 1.0)
    if not config.private:
        return Plan("dpswd", "target_projections", config, dict(facts), None, {"sigma_multiplier": 0.0, "clip_norm": clip})
    p = swd.plan_projection_release(n, d, epsilon=config.epsilon, delta=config.resolved_delta(n), k=config.k,
                                    clip_norm=clip, method=config.sensitivity)
    return Plan("dpswd", "target_projections", config, dict(facts), p.guarantee,
                {"plan": p, "noise_multiplier": p.noise_multiplier, "clip_norm": clip, "k": config.k})


def release_dpswd(plan: Plan, X, noise: NoiseSource | None = None) -> Release:
    """The target party's release ``clip(X) U + V`` (see :func:`dpadapt.transport.swd.release_projections`)."""
    cfg = plan.config
    if plan.guarantee is None:  # non-private: exact projections, no noise
        X = np.asarray(X, dtype=np.float64)
        U = swd.directions(X.shape[1], cfg.k, np.random.default_rng(cfg.random_state))
        P = swd.project_rows(X, U, 0.0, None, plan.calibration["clip_norm"])
        return Release("dpswd", "target_projections", "target", {"projections": P, "directions": U},
                       Guarantee.non_private("target", "epsilon=None: exact projections"),
                       {"sigma": 0.0, "clip_norm": plan.calibration["clip_norm"], "k": cfg.k})
    return swd.release_projections(X, plan=plan.calibration["plan"], random_state=cfg.random_state, noise=noise,
                                   reproducible_noise=cfg.reproducible_noise)


def adapt_dpswd(release: Release, Xs, config: DPSWDConfig) -> float:
    """DP-SWD between the receiver's rows and the released projections (post-processing)."""
    return swd.distance_from_release(release, Xs, q=config.q, random_state=config.random_state)


DPSWD = register(Family(
    name="dpswd", config=DPSWDConfig, protected=("target",), plan=plan_dpswd, release=release_dpswd,
    adapt=adapt_dpswd, estimator=DPSWDAdapter, example=contract_examples.dpswd_example, run_parties=contract_examples.dpswd_run,
    public_arrays=("directions",), noisy_arrays=("projections",), classes_param=None,
    summary="DP sliced Wasserstein distance (Rakotomamonjy & Ralaivola 2021): noisy target projections",
))


# --- dpda ----------------------------------------------------------------------------------------


def _estimator(config) -> DANN:
    cls = GDPDA if isinstance(config, GDPDAConfig) else DPDA if isinstance(config, DPDAConfig) else DANN
    return cls(**config.to_dict())


def plan_dpda(config: DANNConfig | DPDAConfig | GDPDAConfig, facts) -> Plan:
    """σ, steps and the target's Guarantee (G-DPDA: the source's in ``calibration['guarantees']``)."""
    n_s, n_t = int(facts["n_source"]), int(facts["n_target"])
    est = _estimator(config)
    if isinstance(config, DANNConfig):
        return Plan("dpda", "model", config, dict(facts), None, {"steps": est._total_steps(n_s, n_t)})
    plans = est.plan(n_s, n_t)
    steps = min(p.max_steps for p in plans.values())
    guarantees = {party: p.guarantee(steps) for party, p in plans.items()}
    return Plan("dpda", "model", config, dict(facts), guarantees["target"],
                {"steps": steps, "plans": plans, "guarantees": guarantees,
                 "noise_multiplier": plans["target"].spec.noise_multiplier})


def model_release(model: DANN, guarantee: Guarantee) -> Release:
    """The trained network's parameters (covered by the protected parties' DP-SGD guarantees)."""
    if model.config_.network is not None:
        raise ReleaseError("only the built-in MLP network can be released as parameters")
    arrays = {f"param.{k}": v.detach().numpy().copy() for k, v in model.network_.state_dict().items()}
    arrays["classes"] = np.asarray(model.classes_)
    params = {"hidden": list(model.config_.hidden), "activation": model.config_.activation,
              "n_features": model.n_features_in_}
    return Release("dpda", "model", "target", arrays, guarantee, params)


def release_dpda(plan: Plan, data, noise: NoiseSource | None = None) -> Release:
    """The protected party trains (DP-SGD) and releases the network; the noise is fresh unless configured."""
    Xs, ys, Xt = data
    est = _estimator(plan.config)
    est.fit_domains(Xs, ys, Xt)
    if plan.guarantee is not None and est.guarantees_["target"].to_dict() != plan.guarantee.to_dict():
        raise RuntimeError("the training run does not match its plan")
    guarantee = plan.guarantee or Guarantee.non_private("target", "epsilon=None: DANN without DP-SGD")
    return model_release(est, guarantee)


class ReleasedNetwork:
    """A classifier rebuilt from a ``dpda`` model release (post-processing of the released parameters)."""

    def __init__(self, release: Release):
        if release.method != "dpda" or release.kind != "model":
            raise ReleaseError(f"expected a dpda model release, got {release.method}/{release.kind}")
        p = release.params
        self.classes_ = np.asarray(release["classes"])
        self.network_ = mlp_network(int(p["n_features"]), len(self.classes_), tuple(p["hidden"]), p["activation"])
        state = {k.removeprefix("param."): torch.as_tensor(release[k]) for k in release.arrays if k.startswith("param.")}
        self.network_.load_state_dict(state)
        self.network_.eval()
        self.guarantee = release.guarantee

    def decision_function(self, X) -> np.ndarray:
        """The released network's logits: (n, K); for two classes (scikit-learn's shape) the 1-D ``z₁ − z₀``, > 0
        exactly where ``predict`` picks ``classes_[1]``."""
        return binary_scores(self._logits(X))

    def _logits(self, X) -> np.ndarray:
        with torch.no_grad():
            return np.concatenate([self.network_(to_tensor(X[s : s + 2048])).numpy()
                                   for s in range(0, X.shape[0], 2048)]) if X.shape[0] else np.zeros((0, len(self.classes_)))

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self._logits(X), axis=1)]

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


def adapt_dpda(release: Release, X=None, config=None) -> ReleasedNetwork:
    """The receiver's model: the released network (nothing else is learnt from private data)."""
    return ReleasedNetwork(release)


DPDA_FAMILY = register(Family(
    name="dpda", config=DPDAConfig, protected=("target",), plan=plan_dpda, release=release_dpda,
    adapt=adapt_dpda, estimator=DPDA, example=contract_examples.dpda_example, run_parties=contract_examples.dpda_run,
    noisy_arrays=("param.label_head.weight",),
    summary="DPDA / G-DPDA (Wang et al. 2020): DANN trained with DP-SGD on the protected domain(s)",
))

__all__ = ["DPDA_FAMILY", "DPSWD", "ReleasedNetwork", "model_release", "plan_dpda", "plan_dpswd"]
