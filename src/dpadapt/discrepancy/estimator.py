"""scikit-learn estimators: private discrepancy minimisation from a public labelled source.

:class:`DiscrepancyRegressor` fits on the public labelled source and the private unlabelled
target and predicts with a linear model ⟨w, x⟩. :class:`DiscrepancyClassifier` computes ONE private
weighting q̂ of the source rows (the only access to the target: ε spent once) and then, as
post-processing on the public source, one q̂-weighted ±1 regression per class (one-vs-rest; a single
one for two classes), predicting the class of the largest score. Both run the target's private step
and the source's public second stage in one process; the two-party split is in
:mod:`dpadapt.discrepancy.party`. ``guarantees_`` holds the target's Guarantee.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from sklearn.base import RegressorMixin

from dpadapt.api import ConfigEstimator, ConfigError
from dpadapt.configs.discrepancy import DiscrepancyConfig
from dpadapt.discrepancy import nonprivate, private
from dpadapt.discrepancy.core import default_mu, second_moment, source_radius
from dpadapt.discrepancy.stage2 import weighted_regression
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.validation import check_features, check_fitted_features, check_same_features

def fit_weights(Xs, ys, Xt, config: DiscrepancyConfig) -> private.PrivateResult:
    """The target's step: q̂ (and ŵ for single-stage) with the target's guarantee."""
    algorithm = config.algorithm
    m = Xs.shape[0]
    if algorithm == "public_only":
        return private.PrivateResult(np.full(m, 1.0 / m), None, Guarantee.non_private("target", "target data not used"),
                                     {"algorithm": "public_only"})
    if config.private:
        epsilon, delta = float(config.epsilon), config.resolved_delta(Xt.shape[0])
    else:
        if algorithm != "single_stage":
            mu = default_mu(config.K, m, Xt.shape[0], source_radius(Xs)) if config.mu is None else config.mu
            q = nonprivate.minimize_discrepancy(second_moment(Xt, config.r), Xs, mu, config.lam)
            return private.PrivateResult(q, None, Guarantee.non_private("target", "non-private discrepancy minimisation"),
                                         {"algorithm": "non_private", "mu": mu})
        epsilon, delta = math.inf, 1.0
    common = dict(r=config.r, K=config.K, mu=config.mu, random_state=config.random_state, privacy_mode=config.privacy_mode,
                  reproducible_noise=config.reproducible_noise)
    if algorithm == "frank_wolfe":
        return private.noisy_frank_wolfe(Xt, Xs, epsilon, delta, lam=config.lam, **common)
    if algorithm == "mirror_descent":
        return private.noisy_mirror_descent(Xt, Xs, epsilon, delta, lam=config.lam, variant=config.md_variant, **common)
    return private.single_stage_frank_wolfe(Xt, Xs, ys, epsilon, delta, Lambda=config.Lambda, selection=config.selection,
                                            **common)


class _DiscrepancyBase(ConfigEstimator):
    config_class: ClassVar[type] = DiscrepancyConfig

    def _weights(self, Xs, ys, Xt) -> private.PrivateResult:
        Xs = check_features(Xs, "Xs (source)")
        Xt = check_features(Xt, "Xt (target)")
        check_same_features(Xs, Xt)
        self.config_ = self.make_config()
        result = fit_weights(Xs, ys, Xt, self.config_)
        self.q_ = result.q
        self.details_ = result.details
        g = result.guarantee
        self._set_guarantees(*(() if math.isinf(g.epsilon) else (g,)))
        self.n_features_in_ = Xs.shape[1]
        return result

    def _check_X(self, X) -> np.ndarray:
        return check_fitted_features(self, X, "coef_")


class DiscrepancyRegressor(RegressorMixin, _DiscrepancyBase):
    """Linear regression adapted to a private target by (private) discrepancy minimisation.

    Privacy: the target's guarantee (``guarantee_``) is the one of the chosen algorithm — record
    level, replace-one, see :mod:`dpadapt.discrepancy.private`. The public source is not protected.
    """

    def fit_domains(self, Xs, ys, Xt, yt=None):
        """Fit on the public labelled source ``(Xs, ys)`` and the private unlabelled target ``Xt`` (``yt`` ignored)."""
        ys = np.asarray(ys, dtype=np.float64).ravel()
        if ys.shape[0] != np.asarray(Xs).shape[0] or not np.all(np.isfinite(ys)):
            raise ValueError(f"ys must hold {np.asarray(Xs).shape[0]} finite values")
        result = self._weights(Xs, ys, Xt)
        Xs = check_features(Xs, "Xs (source)")
        self.coef_ = result.w if result.w is not None else weighted_regression(
            result.q, Xs, ys, Lambda=self.config_.Lambda, ridge=self.config_.ridge)
        return self

    def decision_function(self, X) -> np.ndarray:
        return self._check_X(X) @ self.coef_

    def predict(self, X) -> np.ndarray:
        return self.decision_function(X)


class DiscrepancyClassifier(_DiscrepancyBase):
    """Multi-class classification: one private weighting q̂, then one q̂-weighted ±1 regression per class.

    The target is touched once (ε spent once, whatever the number of classes); the per-class
    regressions on the public source are post-processing. Two classes: one regression, the sign
    decides. The label set is ``classes`` (or the public source's labels; a label outside ``classes``
    is an error). ``single_stage`` optimises one w jointly with q̂ and is binary only.
    """

    def fit_domains(self, Xs, ys, Xt, yt=None):
        Xs, ys, Xt, _ = self._check_domains(Xs, ys, Xt)
        config = self.make_config()
        self.classes_ = np.asarray(config.classes) if config.classes is not None else np.unique(ys)
        if not np.isin(ys, self.classes_).all():
            raise ValueError(f"source labels outside the label set classes={tuple(self.classes_.tolist())}")
        K = self.classes_.size
        if K < 2:
            raise ValueError("classification needs at least two classes")
        if config.algorithm == "single_stage" and K > 2:
            raise ConfigError("single_stage fits one w jointly with q̂ (binary only); use frank_wolfe or mirror_descent")
        targets = [np.where(ys == self.classes_[1], 1.0, -1.0)] if K == 2 else [
            np.where(ys == c, 1.0, -1.0) for c in self.classes_]
        result = self._weights(Xs, targets[0], Xt)
        if result.w is not None:
            self.coef_ = result.w[:, None]
        else:
            self.coef_ = np.column_stack([
                weighted_regression(result.q, Xs, t, Lambda=config.Lambda, ridge=config.ridge) for t in targets])
        return self

    def decision_function(self, X) -> np.ndarray:
        scores = self._check_X(X) @ self.coef_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X) -> np.ndarray:
        s = self.decision_function(X)
        return self.classes_[(s > 0).astype(int)] if s.ndim == 1 else self.classes_[s.argmax(axis=1)]
