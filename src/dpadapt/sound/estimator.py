"""The sound default's estimator: :class:`SoundDA` runs the party steps of :mod:`dpadapt.sound` in one process.

A module of its own because a scikit-learn estimator loads scikit-learn: ``import dpadapt.sound`` (the party steps,
NumPy only) does not import this module; ``dpadapt.sound.SoundDA`` does, on first use.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from dpadapt.base import ConfigEstimator, binary_scores, several_sources
from dpadapt.configs.sound import Config
from dpadapt.release import Release, ReleaseError
from dpadapt.sound import _per_party, run_parties, scores
from dpadapt.stream import dask_engine
from dpadapt.validation import check_features


class SoundDA(ConfigEstimator):
    """Sound domain adaptation for protected labelled sources: the receiver designs ONE release per source.

    Record-level (ε, δ)-DP for every source (labels included; each source its own guarantee); the target is
    not protected (its request — a basis of its rows — is disclosed). Labels may be any values of the public
    label set ``classes``. ``fit_domains(Xs, ys, Xt)`` takes one source, or lists ``Xs=[X1, X2, ...]``,
    ``ys=[y1, y2, ...]`` for several; a source too large for one machine is a ``dask.array`` (with its labels),
    or a ``dask.dataframe`` / partitioned Parquet directory with the name of its label column as ``ys``, summed
    on the current Dask scheduler (e.g. a ``distributed.Client`` made before the fit); ``fit(X, y, sample_domain)`` treats each non-negative domain id as its own
    source. ``epsilon=None`` runs the same pipeline without noise. After fitting: ``request_``, ``releases_``,
    ``model_``, ``design_`` (the request's stated quantities) and ``guarantees_``.
    """

    config_class = Config

    def fit(self, X, y=None, sample_domain=None, **fit_params):
        if sample_domain is None:
            return super().fit(X, y, sample_domain)
        X = check_features(X, allow_sparse=True)
        dom = np.asarray(sample_domain)
        y = np.asarray(y)
        ids = sorted({int(d) for d in dom if d >= 0})
        return self.fit_domains([X[dom == d] for d in ids], [y[dom == d] for d in ids], X[dom < 0])

    def fit_domains(self, Xs, ys, Xt, yt=None):
        self.config_ = config = self.make_config()
        pairs = list(zip(Xs, ys)) if several_sources(Xs) else [(Xs, ys)]
        Xt = check_features(Xt, "Xt (target)", allow_sparse=True)
        sources = []
        for i, (X, y) in enumerate(pairs):
            if dask_engine.on_cluster(X):  # summed on the cluster, partition by partition (checked there)
                sources.append((X, y))
                continue
            X = check_features(X, f"Xs[{i}] (source)", allow_sparse=True)
            if X.shape[1] != Xt.shape[1]:
                raise ValueError(f"source {i} has {X.shape[1]} features but the target has {Xt.shape[1]}")
            y = np.asarray(y).ravel()
            if y.shape[0] != X.shape[0]:
                raise ValueError(f"source {i} has {y.shape[0]} labels for {X.shape[0]} rows")
            sources.append((X, y))
        if config.classes is None and not config.private:  # the non-private counterpart may read the labels seen
            if any(dask_engine.on_cluster(X) for X, _ in sources):
                raise ValueError("a source on a cluster needs the public label set (classes=...)")
            config = config.replace(classes=tuple(np.unique(np.concatenate([y for _, y in sources])).tolist()))
        self.request_, self.releases_, self.model_ = run_parties(config, sources, Xt)
        self.design_ = self.request_.params["design"]
        self.classes_ = self.model_.classes_
        self._set_guarantees(*([] if not config.private else _per_party(self.releases_)))
        return self

    def calibrate_with(self, score_releases: list[Release], X_target, **options):
        """Calibrate the fitted model with score histograms released separately (``dpadapt.sound.scores``: a score request
        made from ``model_``, answered by the sources) and predict at the target's prevalence estimated from them;
        ``options``: ``calibration``, ``prevalence``, ``interval``, ``n_boot`` of :func:`dpadapt.sound.scores.adapt`."""
        check_is_fitted(self, "model_")
        reqs = [r for r in score_releases if r.kind == scores.REQUEST_KIND]
        if len(reqs) != 1:
            raise ReleaseError(f"calibrate_with needs the one score request the sources answered; got {len(reqs)}")
        X_target = check_features(X_target, "Xt (target)", allow_sparse=True)
        self.model_ = scores.adapt(self.model_, scores.ScoreRequest.from_release(reqs[0], X_target.shape[1]),
                                   score_releases, X_target, **options)
        self.releases_ = [*self.releases_, *score_releases]
        if self.config_.private:
            self._set_guarantees(*_per_party(self.releases_))
        return self

    def decision_function(self, X):
        """The released model's scores, at the DP source prior (before the target's scale and prior that ``predict`` and
        ``predict_proba`` apply): (n, K); for two classes (scikit-learn's shape) the 1-D log-odds ``s₁ − s₀`` of
        ``classes_[1]``, > 0 where the released model picks ``classes_[1]`` at the source prior (``predict``, at the
        target's estimated prior, can differ near the boundary)."""
        check_is_fitted(self, "model_")
        return binary_scores(self.model_.decision_function(X))

    def predict(self, X):
        return self.model_.predict(X)

    def predict_proba(self, X):
        return self.model_.predict_proba(X)
