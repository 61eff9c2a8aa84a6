"""The shift between units, stated on the receiver's own rows: the scale of a binary discriminant on the target.

Receiver-side post-processing (no new release, no privacy cost): it reads the released model, the stated
temperature of :mod:`dpadapt.sound.calibrate` and the receiver's unlabelled rows only.

**The model.** For two classes the (tempered) discriminant's log-likelihood ratio
g(z) = s₁(z) − s₀(z) − logit π_s (π_s the DP source prior) is affine in the mapped row z. Under the source's
Gaussian model z | y ~ N(μ_y, Σ) it is Gaussian within each class, g | y ~ N(m_y, v), and the stated temperature
makes it the Gaussian log-likelihood ratio along its direction; for such a calibrated ratio the separation of the
class means equals the within-class variance, Δ = m₁ − m₀ = v (log N(g; Δ/2, v) − log N(g; −Δ/2, v) = g·Δ/v).
The release states Δ through the noise-corrected separation the temperature already computes: the plug-in means
m̂_y = g(μ̂_y) of the released class means are separated by t·D̂², and Δ = t·(m̂₁ − m̂₀) = t²·D̂² = t·D̃²; their
midpoint c = (m̂₀ + m̂₁)/2.

**The target.** Assumed: g | y ~ N(c + δ ± Δ/2, v_t) with prior π on the target — the SAME separation Δ as on the
source, a location shift δ and a within-class spread v_t of its own (the units differ by a shift along the
discriminant and by how widely their patients scatter around their class, not by how far apart the classes lie).
Then, by Bayes' rule, the target's log posterior odds are

    (Δ / v_t)·(g − c − δ) + logit π,

a monotone affine map of g (ROC-AUC unchanged). Its moments: E_t g = c + δ + (π − ½)Δ and
Var_t g = v_t + π(1 − π)Δ². The estimate from the receiver's rows, ``"moments"``: π̂ the reported prevalence
(:data:`dpadapt.sound.calibrate.PREVALENCE`), then in closed form δ̂ = ḡ − c − (π̂ − ½)Δ and
v̂_t = s²_g − π̂(1 − π̂)Δ² (ḡ, s²_g the mean and variance of g over the rows). Two other readings of the same
rows were measured beside it and lost (a target with the source's spread and a separation of its own; a
one-dimensional mixture fitted by EM: the rule "a receiver-side statement of the shift between units" of
``benchmarks/decisions/README.md``), and left the library.

**Guards.** v_t is floored at :data:`MIN_SPREAD_SHARE`·Δ (the target's odds at most 1/share times as steep as the
source's); where the rows' variance cannot be explained (v̂_t ≤ 0: the separation alone would spread g more
than the rows do) the model is kept as it was (the source-prior posteriors shifted to π̂, ``"none"``). Binary
discriminant with the temperature applied only; any other model is left as it is.

:data:`dpadapt.sound.calibrate.TARGET_SCALE` selects the step (``"moments"``, chosen by the rule "a receiver-side
statement of the shift between units" of ``benchmarks/decisions/README.md``, where what it does not fix is stated).
The fit is recorded in the model's ``details["target_scale"]`` and read at prediction (:func:`on_target`); the
model's (W, b), its ``decision_function`` and any score request made from it stay the released model's.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

METHODS = ("none", "moments")
#: The floor of the target's within-class variance, as a share of the source's (Δ).
MIN_SPREAD_SHARE = 0.25


@dataclasses.dataclass(frozen=True)
class TargetScale:
    """The target's log posterior odds ``slope``·(g − ``offset``) + logit ``prior`` (``method`` "none": not applied)."""

    method: str
    slope: float
    offset: float
    prior: float
    separation: float
    spread: float
    reason: str = ""

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def llr_of_scores(s: np.ndarray, source_prior) -> np.ndarray:
    """g from binary class scores ``s`` (n, 2) (log-likelihoods + log DP source prior ``source_prior``): class 1
    against class 0 at no prior."""
    log_prior = np.log(np.asarray(source_prior, dtype=np.float64))
    return s[:, 1] - s[:, 0] - (log_prior[1] - log_prior[0])


def llr(model, Z: np.ndarray) -> np.ndarray:
    """g on mapped rows ``Z``: the binary model's log-likelihood ratio at no prior (class 1 against class 0)."""
    return llr_of_scores(model.scores(Z), model.details["source_prior"])


def source_llr_moments(W: np.ndarray, b: np.ndarray, log_prior: np.ndarray, means: np.ndarray, t: float
                       ) -> tuple[float, float]:
    """(Δ, c) of the module docstring: the tempered model (W, b) with its log DP prior, the released class means
    ``means`` (2, k) and the temperature ``t``."""
    m = llr_of_scores(np.asarray(means @ np.asarray(W).T + b), np.exp(log_prior))
    return float(t * (m[1] - m[0])), float((m[0] + m[1]) / 2.0)


def _unchanged(prior: float, separation: float, reason: str) -> TargetScale:
    return TargetScale("none", math.nan, math.nan, prior, separation, math.nan, reason)


def moments(g: np.ndarray, separation: float, midpoint: float, prior: float) -> TargetScale:
    """The closed form of ``"moments"`` at the prevalence ``prior`` (its guards; module docstring)."""
    d = float(separation)
    if not (math.isfinite(d) and d > 0) or g.size < 2:
        return _unchanged(prior, d, "no separation or too few rows")
    v = float(np.var(g)) - prior * (1.0 - prior) * d * d
    if not v > 0:
        return _unchanged(prior, d, "the rows' variance is not explained by the stated separation")
    v = max(v, MIN_SPREAD_SHARE * d)
    delta = float(np.mean(g)) - midpoint - (prior - 0.5) * d
    return TargetScale("moments", d / v, midpoint + delta, prior, d, v)


def apply(model, fit: TargetScale) -> None:
    """Record ``fit`` on ``model`` (``details["target_scale"]``); its (W, b) stay the released model's (its
    ``decision_function`` and any score request made from it are unchanged), and ``predict``/``predict_proba`` read
    the target's scale through :func:`on_target`."""
    model.details.update(target_scale={k: v if isinstance(v, str) else (float(v) if math.isfinite(v) else None)
                                       for k, v in fit.to_dict().items()})


def on_target(details: dict, s: np.ndarray) -> np.ndarray:
    """Binary scores ``s`` (log-likelihoods + log DP source prior) put on the target's scale recorded in ``details``:
    class 1 against class 0 scores ``slope``·(g − ``offset``) + logit π_s, so that the prior shift to π̂ gives the
    target's log posterior odds of the module docstring; ``s`` as it is where none was applied."""
    fit = details.get("target_scale")
    if not fit or fit.get("method", "none") == "none":
        return s
    src = np.asarray(details["source_prior"], dtype=np.float64)
    logit_src = math.log(src[1]) - math.log(src[0])
    g = llr_of_scores(s, src)
    return np.column_stack([np.zeros(g.shape), float(fit["slope"]) * (g - float(fit["offset"])) + logit_src])
