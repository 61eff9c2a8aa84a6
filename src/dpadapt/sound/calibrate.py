"""Noise-aware calibration of the sound model, then the target's prior: receiver-side post-processing (no cost).

The post-processings (:mod:`dpadapt.sound.receiver`) return scores ``Z @ W.T + b`` = class log-likelihood +
log DP source prior. A plug-in discriminant is over-confident for two stated reasons, both of which the
receiver can size from public quantities alone (σ, the released counts, k, n and the released moments):

* **the release noise**: a noisy class mean μ̂_y = μ_y + e_y with e_y ≈ N(0, σ²/n_y² I) inflates the
  squared Mahalanobis separation of two classes by σ²·tr(Σ⁻¹)·(1/n_a² + 1/n_b²) in expectation;
* **the sampling of the source rows**: the plug-in separation of an LDA in k dimensions is inflated by
  k·(1/n_a + 1/n_b) and by n/(n − k − 3) (the classical bias of the sample Mahalanobis distance, e.g.
  McLachlan, *Discriminant Analysis and Statistical Pattern Recognition*, 1992, §6.4).

On the discriminant's direction w = Σ⁻¹(μ̂_a − μ̂_b) the scores of either class have variance wᵀΣw = D̂² and
their means are separated by wᵀ(μ_a − μ_b), an unbiased estimate of which is D̂² minus the two inflations. The
Gaussian log-likelihood ratio along w is therefore the released one times t = D̃²/D̂² (D̃² the corrected
separation, floored at :data:`MIN_SEPARATION_SHARE` of D̂²): :func:`temperature` returns that factor (one
for the whole model: the pair-weighted mean over class pairs) and :func:`calibrate` tempers the
log-likelihood part of the scores by it, keeping the DP source prior. The prototypes design scores with a
von Mises–Fisher concentration fitted on the receiver's own rows; its factor is 1.

The target's prior is then estimated on the receiver's rows (:mod:`dpadapt.prevalence`), and the model
predicts at it. The temperature makes the model calibrated on the source; for two classes the shift between the
source's and the receiver's unit is then stated on the receiver's rows against the released class moments
(:mod:`dpadapt.sound.target_scale`, :data:`TARGET_SCALE`): the target's log posterior odds are a monotone affine
map of the tempered log-likelihood ratio (ranking unchanged). Everything here reads only the release, its public σ
and the receiver's rows.
"""

from __future__ import annotations

import math

import numpy as np

from dpadapt.sound import target_scale
from dpadapt.sound.receiver import Statistics

#: The corrected separation is kept at least this share of the plug-in one (a separation all noise keeps a trace).
MIN_SEPARATION_SHARE = 0.05


def _pooled(st: Statistics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    c = np.maximum(st.counts, 1.0)
    means = st.sums / c[:, None]
    S = st.second - (st.sums.T / c) @ st.sums
    vals, vecs = np.linalg.eigh((S + S.T) / 2.0)
    cov = (vecs * np.clip(vals, 0.0, None)) @ vecs.T / max(float(c.sum()) - len(c), 1.0)
    return c, means, cov


def temperature(st: Statistics, W: np.ndarray) -> tuple[float, dict]:
    """The factor t ∈ (0, 1] on the log-likelihood ratios of the discriminant (module docstring), with its terms.

    ``W`` (K, k): the discriminant's class directions Σ_used⁻¹ μ̂_y (so w_ab = W_a − W_b). Needs the second
    moment (the discriminant design); the inflations use Σ_used through the released pooled covariance.
    """
    c, means, cov = _pooled(st)
    K, k = W.shape
    n = float(c.sum())
    # The noise inflation σ²·tr(Σ⁻¹)·(…) is taken as σ²·k/m·(…), m the mean eigenvalue of the released pooled
    # covariance (tr(Σ⁻¹) ≈ k/m; Σ_used⁻¹ itself is known only through W on the span of the means).
    vals = np.clip(np.linalg.eigvalsh(cov), 0.0, None)
    scale = float(vals.mean()) if vals.size and vals.mean() > 0 else 1.0
    shares, weights = [], []
    for a in range(K):
        for b_ in range(a + 1, K):
            w = W[a] - W[b_]
            d_hat = float(w @ (means[a] - means[b_]))
            if not math.isfinite(d_hat) or d_hat <= 0:
                continue
            sample = k * (1.0 / c[a] + 1.0 / c[b_])
            noise = st.sigma**2 * k / scale * (1.0 / c[a] ** 2 + 1.0 / c[b_] ** 2)
            shrink = max(n - k - 3.0, 1.0) / max(n - 2.0, 1.0)
            d_true = max(shrink * d_hat - sample - noise, MIN_SEPARATION_SHARE * d_hat)
            shares.append(d_true / d_hat)
            weights.append(c[a] + c[b_])
    t = float(np.average(shares, weights=weights)) if shares else 1.0
    return t, {"temperature": t, "separation_share": shares}


def calibrate(design: str, st: Statistics, W: np.ndarray, b: np.ndarray, *, method: str | None = None
              ) -> tuple[np.ndarray, np.ndarray, dict]:
    """(W, b) with the log-likelihood part tempered by :func:`temperature` (discriminant; ``method``
    "temperature") or as released ("none"; default :data:`CALIBRATION`), the DP prior kept. ``details``
    records the factor t either way and whether it was applied."""
    method = CALIBRATION if method is None else method
    if design != "discriminant" or st.second is None:
        return W, b, {"temperature": 1.0, "temperature_applied": False,
                      "calibration": "none (the prototypes' concentration is fitted on the receiver's rows)"}
    t, details = temperature(st, W)
    if method == "none":
        return W, b, {**details, "temperature_applied": False, "calibration": "none (scores as released)"}
    log_prior = np.log(np.maximum(st.counts, 1.0) / np.maximum(st.counts, 1.0).sum())
    W, b = t * W, t * (b - log_prior) + log_prior
    if W.shape[0] == 2:  # the stated class moments of the log-likelihood ratio (dpadapt.sound.target_scale)
        _, means, _ = _pooled(st)
        details["llr_separation"], details["llr_midpoint"] = target_scale.source_llr_moments(W, b, log_prior, means, t)
    return W, b, {**details, "temperature_applied": True, "calibration": "noise- and sample-aware temperature"}


#: The calibration applied by default ("temperature" or "none") and the prevalence estimator of
#: :mod:`dpadapt.prevalence` the model predicts at: chosen by the rule of ``benchmarks/decisions/README.md``
#: on its development cells (``benchmarks/decisions/results/decisions-tables.md``).
CALIBRATION = "temperature"
PREVALENCE = "mean"
#: The receiver-side statement of the shift between units on a binary tempered discriminant
#: (:mod:`dpadapt.sound.target_scale`: "none" or "moments"): "moments", chosen by the rule "a receiver-side
#: statement of the shift between units" of ``benchmarks/decisions/README.md``
#: (``benchmarks/decisions/results/target-moments-rule.md``).
TARGET_SCALE = "moments"


def at_target_prior(model, Z: np.ndarray, *, method: str | None = None, n_boot: int = 100, scale: str | None = None):
    """``model`` with the target's prior estimated on the receiver's mapped rows ``Z`` (``details``:
    ``target_prior`` and its interval ``prevalence``); its predict/predict_proba then use it. A binary tempered
    discriminant is then put on the target's scale by ``scale`` (default :data:`TARGET_SCALE`;
    :mod:`dpadapt.sound.target_scale`) at that prior."""
    from scipy.special import logsumexp

    from dpadapt import prevalence

    method = PREVALENCE if method is None else method
    scale = TARGET_SCALE if scale is None else scale
    if scale not in target_scale.METHODS:
        raise ValueError(f"scale must be one of {target_scale.METHODS}, got {scale!r}")
    model.details.pop("target_scale", None)
    s = model.scores(Z)
    P = np.exp(s - logsumexp(s, axis=1, keepdims=True))
    est = prevalence.estimate(P, model.details["source_prior"], method=method, n_boot=n_boot if Z.shape[0] else 0) \
        if Z.shape[0] else None
    if est is None:
        return model
    if scale == "moments" and "llr_separation" in model.details:
        g = target_scale.llr_of_scores(s, model.details["source_prior"])
        fit = target_scale.moments(g, model.details["llr_separation"], model.details["llr_midpoint"], float(est.prior[1]))
        target_scale.apply(model, fit)
    model.details.update(target_prior=est.prior.tolist(), prevalence=est.to_dict())
    return model
