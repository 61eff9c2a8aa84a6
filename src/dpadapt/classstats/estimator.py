"""The class-statistics estimator: :class:`ClassStatsDA` runs the party steps of :mod:`dpadapt.classstats` in one
process.

A module of its own because a scikit-learn estimator loads scikit-learn: importing the party steps (the sound
default reads the receiver's basis and refinement from them) does not import this module.
"""

from __future__ import annotations

import warnings

from dpadapt.base import ConfigEstimator
from dpadapt.classstats import run_parties
from dpadapt.classstats.baselines import DPNearestClassMean
from dpadapt.configs.classstats import Config


class ClassStatsDA(ConfigEstimator):
    """Class-statistics domain adaptation: target basis → source DP class statistics → target refinement.

    Record-level (ε, δ)-DP for the labelled source (one analytic-Gaussian release, labels
    included); the target is not protected (its basis is disclosed). ``epsilon=None`` runs the
    same pipeline without noise.
    """

    config_class = Config

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR rows are mapped without densifying
        tags.non_deterministic = self.epsilon is not None and not self.reproducible_noise
        return tags

    def fit_domains(self, Xs, ys, Xt, yt=None):
        """Fit; ``ys`` may hold any labels of the public label set ``classes`` (strings included: see
        :mod:`dpadapt.base`)."""
        self.config_ = config = self.make_config()
        Xs, ys, Xt, _ = self._check_domains(Xs, ys, Xt, None, allow_sparse=True)
        self.basis_release_, self.release_, self.model_ = run_parties(config, Xs, ys, Xt)
        self.classes_ = self.model_.classes_
        self.n_features_in_ = int(Xs.shape[1])
        self._set_guarantees(*([] if not self.config_.private else [self.release_.guarantee]))
        return self

    def fit_source_only(self, X, y, **fit_params):
        """``fit(X, y)`` without target rows: nothing to adapt to, so the same release in the feature space
        (k = 0) with no refinement, i.e. :class:`DPNearestClassMean` with these hyper-parameters (warned)."""
        warnings.warn("ClassStatsDA got no target rows (no sample_domain and no label -1): fitting the release in "
                      "the feature space without a target basis or refinement (DPNearestClassMean)", UserWarning,
                      stacklevel=2)
        c = self.make_config()
        baseline = DPNearestClassMean(epsilon=c.epsilon, delta=c.delta, privacy_mode=c.privacy_mode, classes=self.classes,
                                      random_state=c.random_state, reproducible_noise=c.reproducible_noise,
                                      feature_type=c.feature_type, log1p=c.log1p, relation=c.relation)
        self.model_ = baseline.fit(X, y, **fit_params)
        self.config_, self.basis_release_, self.release_ = c, None, baseline.release_
        self.classes_, self.n_features_in_ = baseline.classes_, baseline.n_features_in_
        self.guarantees_ = dict(baseline.guarantees_)
        return self

    def predict(self, X):
        return self.model_.predict(X)

    def predict_proba(self, X):
        return self.model_.predict_proba(X)
