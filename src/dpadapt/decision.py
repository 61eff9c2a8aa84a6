"""Decision rules on top of any fitted classifier with ``predict_proba``: a post-processing, no privacy cost.

:class:`DecisionRule` wraps a fitted estimator (``SoundDA``, ``DPOTAdapter``, DP-NCM, DP-LR, DP least
squares, a non-private baseline alike) and is fitted on the receiver's unlabelled rows only:

* ``"bayes"`` — the most probable class at the target's estimated prior (:mod:`dpadapt.prevalence`): the
  Bayes rule for accuracy on the target;
* ``"balanced"`` — the most probable class at a uniform prior, i.e. the largest likelihood ratio: the Bayes
  rule for balanced error (for a binary outcome the likelihood-ratio rule; it needs calibration, no prevalence);
* ``"sensitivity"`` (binary) — the threshold on P(positive) that flags the given share of the positives the
  model itself expects among the receiver's rows (estimated from its calibrated probabilities at the
  target's prior, no labels);
* ``"alert_rate"`` (binary) — the threshold that flags the given share of the receiver's rows.

``predict_proba`` returns the probabilities at the target's estimated prior; ``prevalence_`` holds the
estimate with its interval; ``threshold_`` the threshold on P(``classes_[-1]``) of a binary rule.
"""

from __future__ import annotations

import numpy as np

from dpadapt import prevalence as prev

RULES = ("bayes", "balanced", "sensitivity", "alert_rate")


def source_prior_of(estimator, K: int) -> np.ndarray:
    """The class prior the estimator's probabilities are for: its recorded DP source prior, else uniform-free
    ``class_prior_`` / ``source_prior_`` attributes, else the model details; uniform as the last resort."""
    for owner in (estimator, getattr(estimator, "model_", None)):
        for name in ("source_prior_", "class_prior_"):
            value = getattr(owner, name, None)
            if value is not None and np.size(value) == K:
                return np.asarray(value, dtype=np.float64)
        details = getattr(owner, "details", None)
        if isinstance(details, dict) and details.get("source_prior") is not None:
            return np.asarray(details["source_prior"], dtype=np.float64)
    return np.full(K, 1.0 / K)


class DecisionRule:
    """A decision rule over a fitted ``estimator`` (module docstring); ``fit(X_target)`` reads unlabelled rows."""

    def __init__(self, estimator, rule: str = "bayes", target: float | None = None, *, prevalence: str = "em",
                 level: float = 0.9, n_boot: int = 200):
        self.estimator = estimator
        self.rule = rule
        self.target = target
        self.prevalence = prevalence
        self.level = level
        self.n_boot = n_boot

    def fit(self, X, y=None):
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {self.rule!r}")
        if self.rule in ("sensitivity", "alert_rate") and not (self.target is not None and 0.0 < self.target < 1.0):
            raise ValueError(f"the {self.rule} rule needs a target in (0, 1), got {self.target!r}")
        P = np.asarray(self.estimator.predict_proba(X), dtype=np.float64)
        self.classes_ = np.asarray(self.estimator.classes_)
        K = P.shape[1]
        if self.rule in ("sensitivity", "alert_rate") and K != 2:
            raise ValueError(f"the {self.rule} rule is for a binary outcome; this model has {K} classes")
        self.source_prior_ = source_prior_of(self.estimator, K)
        self.prevalence_ = prev.estimate(P, self.source_prior_, method=self.prevalence, level=self.level, n_boot=self.n_boot)
        Pt = prev.shift(P, self.source_prior_, self.prevalence_.prior)
        self.threshold_ = self._threshold(Pt[:, -1]) if K == 2 else None
        return self

    def _threshold(self, p: np.ndarray) -> float:
        """The threshold on P(positive) at the target's prior that the rule implies."""
        pi = float(self.prevalence_.prior[-1])
        if self.rule == "bayes":
            return 0.5
        if self.rule == "balanced":
            return pi  # the likelihood ratio exceeds 1 exactly when the posterior at prior π exceeds π
        if self.rule == "alert_rate":
            return float(np.quantile(p, 1.0 - self.target))
        order = np.sort(p)[::-1]  # sensitivity: the expected positives flagged, from the model's own probabilities
        share = np.cumsum(order) / max(order.sum(), np.finfo(float).tiny)
        return float(order[min(int(np.searchsorted(share, self.target)), order.size - 1)])

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities at the target's estimated prior."""
        P = np.asarray(self.estimator.predict_proba(X), dtype=np.float64)
        return prev.shift(P, self.source_prior_, self.prevalence_.prior)

    def predict(self, X) -> np.ndarray:
        Pt = self.predict_proba(X)
        if self.threshold_ is not None:
            return self.classes_[(Pt[:, -1] >= self.threshold_).astype(int)]
        if self.rule == "balanced":
            Pt = Pt / self.prevalence_.prior
        return self.classes_[np.argmax(Pt, axis=1)]

    def describe(self) -> str:
        """One line: the rule, its parameter and its threshold."""
        what = {"bayes": "most probable class at the target's estimated prior",
                "balanced": "balanced (likelihood ratio > 1)",
                "sensitivity": f"target sensitivity {self.target}", "alert_rate": f"alert rate {self.target}"}[self.rule]
        thr = "" if getattr(self, "threshold_", None) is None else f"; flags P({self.classes_[-1]!r}) ≥ {self.threshold_:.3f} at the target's prior"
        return f"decision rule: {what}{thr}"
