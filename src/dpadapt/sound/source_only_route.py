"""The ``ncm`` and ``dplr`` routes of :class:`dpadapt.sound.SoundDA`: a DP classifier of the source alone.

On the full mapped features (no basis, the receiver's rows are not read), by the existing estimators
of :mod:`dpadapt.classstats.baselines`: DP nearest class mean (ONE Gaussian release of per-class sums
and counts, Δ = 2 replace-one / √2 add/remove) or DP logistic regression (full-batch noisy GD with
per-example clipping, composed by the Gaussian-mechanism accountant). The Guarantee is the chosen
estimator's own.
"""

from __future__ import annotations

from dpadapt.classstats.baselines import DPLogisticRegression, DPNearestClassMean
from dpadapt.sound.rule import Choice

ESTIMATORS = {"ncm": DPNearestClassMean, "dplr": DPLogisticRegression}


def run(config, Xs, ys, Xt, choice: Choice):
    """(None, the release or None, the fitted DP source-only estimator); ``Xt`` is not read."""
    est = ESTIMATORS[choice.design](
        epsilon=config.epsilon, delta=config.delta, privacy_mode=config.privacy_mode, classes=config.classes,
        random_state=config.random_state, reproducible_noise=config.reproducible_noise,
        feature_type="counts" if config.use_log1p() else "dense", relation=config.relation,
    ).fit_domains(Xs, ys)
    return None, getattr(est, "release_", None), est
