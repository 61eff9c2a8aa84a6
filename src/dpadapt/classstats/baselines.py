"""DP source-only baselines at the same (ε, δ) as the adaptation methods (no adaptation at all).

* :class:`DPNearestClassMean` — one class-statistics release of the source's mapped rows in the
  feature space itself (a data-independent space: no basis), classify by the nearest class direction.
* :class:`DPLogisticRegression` — multinomial logistic regression by full-batch noisy gradient
  descent: each step releases the sum of per-example gradients clipped to norm C with one Gaussian
  (:func:`dpadapt.privacy.mechanisms.gaussian`); the T steps compose exactly into one Gaussian
  (see :func:`dpadapt.privacy.families.classstats.noisy_gd_plan`).

Both read only the labelled source; the target rows passed to ``fit_domains`` are ignored.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from dpadapt import api
from dpadapt.api import ConfigEstimator, param
from dpadapt.classstats.adapt import ClassStatsModel, prototypes_from_release, row_map
from dpadapt.privacy.families.classstats import noisy_gd_plan
from dpadapt.privacy.mechanisms import gaussian, random_streams
from dpadapt.validation import check_features, check_labels


@dataclasses.dataclass(frozen=True, kw_only=True)
class SourceOnlyConfig(api.Config):
    """Public per-row map and relation shared by the DP source-only baselines."""

    family = "classstats"

    feature_type: str = param("dense", choices=("dense", "counts"), help="public feature type ('counts' → log1p under log1p='auto')")
    log1p: str = param("auto", choices=("auto", "true", "false"), help="log1p of counts before normalising")
    relation: str = param("replace_one", choices=("replace_one", "add_remove"), help="neighbouring relation")

    def use_log1p(self) -> bool:
        return self.log1p == "true" or (self.log1p == "auto" and self.feature_type == "counts")


class _SourceOnly(ConfigEstimator):
    def _classes(self, ys) -> tuple:
        return self.config_.required_classes() if self.config_.private else (self.config_.classes or tuple(np.unique(ys).tolist()))

    def fit(self, X, y=None, sample_domain=None, **kw):
        if sample_domain is None:  # plain (X, y): all rows are source rows
            return self.fit_domains(X, y)
        return super().fit(X, y, sample_domain, **kw)


class DPNearestClassMean(_SourceOnly):
    """DP nearest-class-mean on the source alone: one class-statistics release, no adaptation."""

    config_class = SourceOnlyConfig

    def fit_domains(self, Xs, ys, Xt=None, yt=None):
        from dpadapt.classstats import Config, plan, release

        self.config_ = self.make_config()
        c = self.config_
        cfg = Config(epsilon=c.epsilon, delta=c.delta, privacy_mode=c.privacy_mode, classes=c.classes,
                     random_state=c.random_state, reproducible_noise=c.reproducible_noise, k=0,
                     feature_type=c.feature_type, log1p=c.log1p, relation=c.relation, refinement="none")
        Xs = check_features(Xs, "Xs (source)", allow_sparse=True)
        _, noise = random_streams(c.random_state, reproducible_noise=c.reproducible_noise)
        the_plan = plan(cfg, {"n_source": Xs.shape[0], "n_features": Xs.shape[1], "k": 0})
        self.release_ = release(the_plan, Xs, ys, noise)
        centers, _ = prototypes_from_release(self.release_["sums"], self.release_["counts"])
        self.model_ = ClassStatsModel(np.asarray(self.release_.params["classes"]), cfg.use_log1p(), None, None, centers)
        self.classes_ = self.model_.classes_
        self._set_guarantees(*([self.release_.guarantee] if c.private else []))
        return self

    def predict(self, X):
        return self.model_.predict(X)

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


@dataclasses.dataclass(frozen=True, kw_only=True)
class GDConfig(SourceOnlyConfig):
    """Noisy full-batch gradient descent (fixed a priori: 25 steps, step 2, clip 1 — not tuned on any target)."""

    steps: int = param(25, low=1, help="number of full-batch gradient steps T (each a Gaussian release)")
    learning_rate: float = param(2.0, low=0.0, low_open=True, help="step size on the mean gradient")
    clip: float = param(1.0, low=0.0, low_open=True, help="per-example gradient clipping norm C")


def clipped_gradient_sum(F: np.ndarray, R: np.ndarray, clip: float) -> np.ndarray:
    """Σ_i of the per-example gradients r_i ⊗ f_i (K × d), each clipped to ℓ2 norm ``clip``.

    The same sum as :func:`dpadapt.privacy.mechanisms.clip_rows` on the flattened per-example
    gradients, without forming the n × K·d array: the norm of the outer product is ‖r_i‖·‖f_i‖.
    """
    f_norms = np.sqrt(np.asarray(F.multiply(F).sum(axis=1)).ravel()) if sp.issparse(F) else np.linalg.norm(F, axis=1)
    norms = np.linalg.norm(R, axis=1) * f_norms
    scale = np.where(norms > clip, clip / np.where(norms > 0, norms, 1.0), 1.0)
    return np.asarray((F.T @ (R * scale[:, None])).T)


def _features(X, log1p: bool):
    """Mapped rows with a bias coordinate, scaled to norm ≤ 1 (a public per-row map).

    Sparse count rows stay sparse (the same map as :func:`~dpadapt.classstats.adapt.row_map`,
    computed on the non-zeros), so noisy GD on 5000-d bag-of-words costs a sparse product per step.
    """
    if sp.issparse(X):
        M = sp.csr_matrix(X, dtype=np.float64, copy=True)
        if log1p:
            if np.any(M.data < 0):
                raise ValueError("log1p is a map for non-negative count features; got negative values")
            M.data = np.log1p(M.data)
        norms = np.sqrt(np.asarray(M.multiply(M).sum(axis=1)).ravel())
        M = sp.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ M
        return sp.hstack([M, np.ones((M.shape[0], 1))], format="csr") / np.sqrt(2.0)
    M = row_map(X, log1p)
    return np.hstack([M, np.ones((M.shape[0], 1))]) / np.sqrt(2.0)


class DPLogisticRegression(_SourceOnly):
    """DP multinomial logistic regression by full-batch noisy GD with per-example clipped gradients."""

    config_class = GDConfig

    def fit_domains(self, Xs, ys, Xt=None, yt=None):
        self.config_ = c = self.make_config()
        Xs = check_features(Xs, "Xs (source)", allow_sparse=True)
        ys = check_labels(ys, Xs.shape[0], "ys (source labels)")
        from dpadapt.classstats import label_indices

        classes = self._classes(ys)
        idx = label_indices(ys, classes)
        F = _features(Xs, c.use_log1p())
        n, d = F.shape
        K = len(classes)
        _, noise = random_streams(c.random_state, reproducible_noise=c.reproducible_noise)
        guarantee = None
        if c.private:
            sigma, guarantee = noisy_gd_plan(c.epsilon, c.resolved_delta(n), steps=c.steps, clip=c.clip,
                                             classes=classes, relation=c.relation)
        W = np.zeros((K, d))
        onehot = np.eye(K)[idx]
        for _ in range(c.steps):
            logits = np.asarray(F @ W.T)
            P = np.exp(logits - logsumexp(logits, axis=1, keepdims=True))
            total = clipped_gradient_sum(F, P - onehot, c.clip).ravel()
            if c.private:
                total = gaussian(total, sigma=sigma, sensitivity=guarantee.sensitivity, noise=noise).value
            W -= c.learning_rate * total.reshape(K, d) / n
        self.coef_ = W
        self.classes_ = np.asarray(classes)
        self._set_guarantees(*([guarantee] if guarantee is not None else []))
        return self

    def predict_proba(self, X):
        logits = np.asarray(_features(check_features(X, allow_sparse=True), self.config_.use_log1p()) @ self.coef_.T)
        return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
