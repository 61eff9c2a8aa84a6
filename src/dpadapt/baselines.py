"""Non-adaptive baselines."""

from __future__ import annotations

import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from dpadapt.base import DAEstimator
from dpadapt.models import make_classifier
from dpadapt.validation import check_features


class SourceOnly(DAEstimator):
    """Train on the labelled source only and apply to the target (no adaptation, no privacy).

    Parameters
    ----------
    head : {"logreg", "mlp"}
        Classifier (see :func:`dpadapt.models.make_classifier`).
    random_state : int, optional
    """

    def __init__(self, head: str = "logreg", random_state: int | None = None):
        self.head = head
        self.random_state = random_state

    def fit_domains(self, Xs, ys, Xt=None, yt=None):
        Xs = check_features(Xs, "Xs (source)", allow_sparse=True)
        if Xt is not None:
            Xs, ys, Xt, yt = self._check_domains(Xs, ys, Xt, yt, allow_sparse=True)
        self.model_ = make_classifier(self.head, self.random_state, sparse=sp.issparse(Xs)).fit(Xs, ys)
        self.classes_ = self.model_.classes_
        self._set_guarantees()
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(check_features(X, allow_sparse=True))

    def predict_proba(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(check_features(X, allow_sparse=True))
