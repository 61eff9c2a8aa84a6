"""Base class for domain-adaptation estimators (scikit-learn / skada conventions)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from dpadapt.privacy.guarantee import REPRODUCIBLE_NOISE_REASON, Guarantee
from dpadapt.validation import check_features, check_labels, check_same_features, split_domains


class DAEstimator(ClassifierMixin, BaseEstimator):
    """A domain-adaptation classifier that runs both party steps in one process.

    Subclasses implement :meth:`fit_domains` (explicit source/target arrays) and
    :meth:`predict`. :meth:`fit` accepts skada's ``X, y, sample_domain`` (source rows have
    ``sample_domain ≥ 0``, target rows ``< 0`` with ``y = −1`` when unlabelled).

    After fitting, ``guarantees_`` maps each protected party to its
    :class:`~dpadapt.privacy.Guarantee` (empty for non-private baselines), and
    :meth:`privacy_report` prints them.

    ``fit`` requests ``sample_domain`` through scikit-learn's metadata routing, so the estimator
    runs as the last step of skada's ``make_da_pipeline`` and inside ``cross_validate`` with
    ``params={"sample_domain": ...}`` (skada's own estimators make the same request).
    """

    __metadata_request__fit = {"sample_domain": True}

    def fit(self, X, y=None, sample_domain=None, **fit_params):
        """Fit on skada-style inputs; see :meth:`fit_domains`."""
        if y is None:
            raise ValueError("y is required: source labels (target rows may carry -1)")
        X = check_features(X, allow_sparse=True)
        Xs, ys, Xt, yt = split_domains(X, y, sample_domain)
        return self.fit_domains(Xs, ys, Xt, yt, **fit_params)

    def fit_domains(self, Xs, ys, Xt, yt=None, **fit_params):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- prediction: the fitted classifier ``model_`` on the receiver's features ----------------

    def _has_model_input(self) -> bool:
        return hasattr(type(self), "_model_input")

    @available_if(_has_model_input)
    def predict(self, X):
        """Labels of ``X`` (subclasses define ``_model_input(X)``: raw rows → ``model_``'s input)."""
        check_is_fitted(self, "model_")
        return self.model_.predict(self._model_input(X))

    @available_if(_has_model_input)
    def predict_proba(self, X):
        """Class probabilities of ``X`` (columns in the order of ``classes_``)."""
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._model_input(X))

    # -- helpers for subclasses --------------------------------------------------------------

    def _check_domains(self, Xs, ys, Xt, yt=None, allow_sparse: bool = False):
        """Validate and return dense (or CSR) source/target arrays with integer labels.

        With the estimator's public label set (its ``classes`` parameter) a one-class source is valid.
        """
        Xs = check_features(Xs, "Xs (source)", allow_sparse=allow_sparse)
        Xt = check_features(Xt, "Xt (target)", allow_sparse=allow_sparse)
        check_same_features(Xs, Xt)
        ys = check_labels(ys, Xs.shape[0], "ys (source labels)", classes=getattr(self, "classes", None))
        if yt is not None:
            yt = np.asarray(yt)
            if yt.shape[0] != Xt.shape[0]:
                raise ValueError(f"yt has {yt.shape[0]} labels for {Xt.shape[0]} target rows")
            yt = yt.astype(np.int64)
        return Xs, ys, Xt, yt

    def _set_guarantees(self, *guarantees: Guarantee) -> None:
        """Record the fitted guarantees; with ``reproducible_noise=True`` they are marked invalid (issue 19, item 8)."""
        if getattr(self, "reproducible_noise", False):
            guarantees = tuple(g.invalidated(REPRODUCIBLE_NOISE_REASON) for g in guarantees)
        self.guarantees_ = {g.party: g for g in guarantees}

    # -- privacy reporting -----------------------------------------------------------------

    @property
    def guarantee_(self) -> Guarantee | None:
        """The guarantee of the single protected party (``None`` for a non-private estimator)."""
        check_is_fitted(self, "guarantees_")
        if not self.guarantees_:
            return None
        if len(self.guarantees_) > 1:
            raise AttributeError("both parties are protected; use guarantees_['source'] / guarantees_['target']")
        return next(iter(self.guarantees_.values()))

    def privacy_report(self) -> str:
        """Every protected party's guarantee in words."""
        check_is_fitted(self, "guarantees_")
        if not self.guarantees_:
            return f"{type(self).__name__}: non-private (no differential-privacy guarantee)."
        return "\n\n".join(g.report() for g in self.guarantees_.values())
