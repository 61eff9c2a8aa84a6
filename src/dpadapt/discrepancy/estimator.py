"""scikit-learn estimators: private discrepancy minimisation from a public labelled source.

:class:`DiscrepancyRegressor` fits on the public labelled source and the private unlabelled
target and predicts with a linear model ⟨w, x⟩. :class:`DiscrepancyClassifier` is the same on
binary labels mapped to ±1 (squared loss), predicting by the sign. Both run the target's private
step (q̂ or (q̂, ŵ)) and the source's public second stage in one process; the two-party split is in
:mod:`dpadapt.discrepancy.party`. ``guarantees_`` holds the target's Guarantee.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from dpadapt.base import DAEstimator
from dpadapt.discrepancy import nonprivate, private
from dpadapt.discrepancy.core import default_mu, second_moment, source_radius
from dpadapt.discrepancy.stage2 import weighted_regression
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.validation import (
    check_features,
    check_random_state,
    check_same_features,
    split_domains,
)

ALGORITHMS = ("frank_wolfe", "mirror_descent", "single_stage", "non_private", "public_only")


def fit_weights(
    Xs, ys, Xt, *, algorithm: str, epsilon: float, delta: float, K: int, lam: float, r: float,
    mu: float | None, Lambda: float, md_variant: str, selection: str, privacy_mode: str, rng,
) -> private.PrivateResult:
    """The target's step for every algorithm (``non_private`` and ``public_only`` protect nothing)."""
    if algorithm == "frank_wolfe":
        return private.noisy_frank_wolfe(Xt, Xs, epsilon, delta, r=r, K=K, lam=lam, mu=mu,
                                         random_state=rng, privacy_mode=privacy_mode)
    if algorithm == "mirror_descent":
        return private.noisy_mirror_descent(Xt, Xs, epsilon, delta, r=r, K=K, lam=lam, mu=mu, variant=md_variant,
                                            random_state=rng, privacy_mode=privacy_mode)
    if algorithm == "single_stage":
        return private.single_stage_frank_wolfe(Xt, Xs, ys, epsilon, delta, r=r, Lambda=Lambda, K=K, mu=mu,
                                                selection=selection, random_state=rng, privacy_mode=privacy_mode)
    m = Xs.shape[0]
    if algorithm == "public_only":
        return private.PrivateResult(np.full(m, 1.0 / m), None, Guarantee.non_private("target", "target data not used"),
                                     {"algorithm": "public_only"})
    if algorithm == "non_private":
        mu_ = default_mu(K, m, Xt.shape[0], source_radius(Xs)) if mu is None else mu
        q = nonprivate.minimize_discrepancy(second_moment(Xt, r), Xs, mu_, lam)
        return private.PrivateResult(q, None, Guarantee.non_private("target", "non-private discrepancy minimisation"),
                                     {"algorithm": "non_private", "mu": mu_})
    raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")


class DiscrepancyRegressor(RegressorMixin, BaseEstimator):
    """Linear regression adapted to a private target by (private) discrepancy minimisation.

    Parameters
    ----------
    algorithm : {"frank_wolfe", "mirror_descent", "single_stage", "non_private", "public_only"}
        Noisy Frank–Wolfe (Alg. 2) or noisy mirror descent (Alg. 3) for q̂ followed by q̂-weighted
        regression; single-stage private Frank–Wolfe over (q, w) (Alg. 1); the non-private
        two-stage baseline; or uniform weights (public-only).
    epsilon, delta : float
        Target privacy budget (``epsilon=inf``: the algorithm without noise, no privacy).
    K, lam, mu : int, float, float or None
        Iterations, ℓ2 regulariser λ on q, softmax parameter (None: μ = √(K log(m+n)/(8r̂⁴))).
    r : float
        Public bound on target row norms; target rows are clipped to it.
    Lambda, ridge : float
        Norm bound on w (hypothesis set) and optional ridge term of the second stage.
    md_variant : {"entropic", "pnorm"}; selection : {"last", "uniform", "paper_argmin"}
    privacy_mode : {"sound", "paper"}
    random_state : None, int or Generator

    Privacy: the target's guarantee (``guarantee_``) is the one of the chosen algorithm — record
    level, replace-one, see :mod:`dpadapt.discrepancy.private`. The public source is not protected.
    """

    def __init__(self, algorithm: str = "frank_wolfe", epsilon: float = 1.0, delta: float = 1e-5, K: int = 1000,
                 lam: float = 1e-3, mu: float | None = None, r: float = 1.0, Lambda: float = 2.0, ridge: float = 0.0,
                 md_variant: str = "entropic", selection: str = "last", privacy_mode: str = "sound",
                 random_state=None):
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.delta = delta
        self.K = K
        self.lam = lam
        self.mu = mu
        self.r = r
        self.Lambda = Lambda
        self.ridge = ridge
        self.md_variant = md_variant
        self.selection = selection
        self.privacy_mode = privacy_mode
        self.random_state = random_state

    def fit(self, X, y=None, sample_domain=None):
        """skada-style fit: source rows ``sample_domain ≥ 0`` (labelled), target rows ``< 0``."""
        if y is None:
            raise ValueError("y is required: source targets (target rows may carry any value)")
        X = check_features(X)
        Xs, ys, Xt, _ = split_domains(X, y, sample_domain)
        return self.fit_domains(Xs, ys, Xt)

    def fit_domains(self, Xs, ys, Xt, yt=None):
        """Fit on the public labelled source ``(Xs, ys)`` and the private unlabelled target ``Xt``.

        ``yt`` is accepted for API symmetry and ignored (the target is unlabelled).
        """
        Xs = check_features(Xs, "Xs (source)")
        Xt = check_features(Xt, "Xt (target)")
        check_same_features(Xs, Xt)
        ys = np.asarray(ys, dtype=np.float64).ravel()
        if ys.shape[0] != Xs.shape[0] or not np.all(np.isfinite(ys)):
            raise ValueError(f"ys must hold {Xs.shape[0]} finite values")
        rng = check_random_state(self.random_state)
        result = fit_weights(
            Xs, ys, Xt, algorithm=self.algorithm, epsilon=self.epsilon, delta=self.delta, K=self.K, lam=self.lam,
            r=self.r, mu=self.mu, Lambda=self.Lambda, md_variant=self.md_variant, selection=self.selection,
            privacy_mode=self.privacy_mode, rng=rng,
        )
        self.q_ = result.q
        self.coef_ = (
            result.w if result.w is not None
            else weighted_regression(result.q, Xs, ys, Lambda=self.Lambda, ridge=self.ridge)
        )
        self.details_ = result.details
        g = result.guarantee
        self.guarantees_ = {} if math.isinf(g.epsilon) else {g.party: g}
        self.n_features_in_ = Xs.shape[1]
        return self

    def decision_function(self, X) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = check_features(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the model was fitted on {self.n_features_in_}")
        return X @ self.coef_

    def predict(self, X) -> np.ndarray:
        return self.decision_function(X)

    @property
    def guarantee_(self) -> Guarantee | None:
        """The target's guarantee (``None`` when nothing is protected: ε = ∞ or public-only)."""
        check_is_fitted(self, "guarantees_")
        return self.guarantees_.get("target")

    def privacy_report(self) -> str:
        check_is_fitted(self, "guarantees_")
        if not self.guarantees_:
            return f"{type(self).__name__}({self.algorithm}): non-private (no differential-privacy guarantee)."
        return self.guarantees_["target"].report()


class DiscrepancyClassifier(DAEstimator):
    """Binary classification through :class:`DiscrepancyRegressor` on labels mapped to ±1 (squared loss).

    Same parameters and guarantee as :class:`DiscrepancyRegressor`; predicts the class on the
    side of the sign of ⟨w, x⟩. No intercept (the hypothesis set is {⟨w, x⟩ : ‖w‖ ≤ Λ}).
    """

    def __init__(self, algorithm: str = "frank_wolfe", epsilon: float = 1.0, delta: float = 1e-5, K: int = 1000,
                 lam: float = 1e-3, mu: float | None = None, r: float = 1.0, Lambda: float = 2.0, ridge: float = 0.0,
                 md_variant: str = "entropic", selection: str = "last", privacy_mode: str = "sound",
                 random_state=None):
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.delta = delta
        self.K = K
        self.lam = lam
        self.mu = mu
        self.r = r
        self.Lambda = Lambda
        self.ridge = ridge
        self.md_variant = md_variant
        self.selection = selection
        self.privacy_mode = privacy_mode
        self.random_state = random_state

    def fit_domains(self, Xs, ys, Xt, yt=None):
        Xs, ys, Xt, _ = self._check_domains(Xs, ys, Xt)
        self.classes_ = np.unique(ys)
        if self.classes_.size != 2:
            raise ValueError(f"DiscrepancyClassifier is binary; got {self.classes_.size} classes")
        signed = np.where(ys == self.classes_[1], 1.0, -1.0)
        self.regressor_ = DiscrepancyRegressor(**self.get_params()).fit_domains(Xs, signed, Xt)
        self.guarantees_ = dict(self.regressor_.guarantees_)
        self.q_, self.coef_ = self.regressor_.q_, self.regressor_.coef_
        return self

    def decision_function(self, X) -> np.ndarray:
        check_is_fitted(self, "regressor_")
        return self.regressor_.decision_function(X)

    def predict(self, X) -> np.ndarray:
        return self.classes_[(self.decision_function(X) > 0).astype(int)]
