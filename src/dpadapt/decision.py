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

import dataclasses
from typing import Any

import numpy as np

from dpadapt import prevalence as prev

RULES = ("bayes", "balanced", "sensitivity", "alert_rate")
#: Methods whose probabilities are known to be badly calibrated on the development pairs
#: (``benchmarks/decisions/README.md``): method → what was measured. ``dpadapt adapt`` warns for these.
KNOWN_MISCALIBRATED = {
    "sound": "its probabilities were miscalibrated on the PhysioNet development pairs (calibrated in 3–4 of 12 pairs; "
             "mean calibration slope 0.7–1.1, mean ECE 0.07–0.09 at ε = 1, 4 and noise-free; benchmarks/decisions) and "
             "over-confident on the tiny image sources (top-label ECE 0.04–0.65; benchmarks/sound)",
    "dpot": "its probabilities were over-confident on the PhysioNet development pairs (mean calibration slope 0.09 at "
            "ε = 1; benchmarks/decisions) and on Heart Cleveland → Hungary (slope 0.2 at ε = 1: docs/tables.md's DPOT flow)",
}
#: A stated temperature (:func:`dpadapt.sound.calibrate.temperature`) below this is said at ``adapt``: the release
#: noise and the source's sample size inflate the class separation more than twofold, and the probabilities rest
#: on that stated correction.
FAR_TEMPERATURE = 0.5


def calibration_warning(method: str, model: Any) -> str | None:
    """One line when ``method``'s probabilities are known to be badly calibrated (:data:`KNOWN_MISCALIBRATED`),
    naming this model's stated temperature when it is far from 1 (:data:`FAR_TEMPERATURE`); else ``None``."""
    words = KNOWN_MISCALIBRATED.get(method)
    if not words:
        return None
    details = getattr(model, "details", None)
    t = details.get("temperature") if isinstance(details, dict) else None
    far = "" if t is None or float(t) >= FAR_TEMPERATURE else (
        f"; this model's stated temperature is {float(t):.2f}: the release noise and the source's sample size inflate "
        f"its class separation {1 / float(t):.1f}-fold, and its probabilities rest on that correction")
    return (f"{method}: {words}{far}; rank by these probabilities, but check calibration before acting on them "
            "(dpadapt score on labelled rows)")

def source_prior_of(estimator, K: int) -> np.ndarray | None:
    """The class prior the estimator's ``predict_proba`` is for: a SoundModel's ``details`` (the target prior it
    already predicts at, else its DP source prior), a ``source_prior_`` / ``class_prior_`` attribute, or a
    model file's recorded ``source_prior``; ``None`` when none is recorded (then :class:`DecisionRule` takes the
    prevalence the model implies on the receiver's rows, its mean probability: ``docs/decisions.md``)."""
    for owner in (estimator, getattr(estimator, "model_", None), getattr(estimator, "model", None)):
        details = getattr(owner, "details", None)
        if isinstance(details, dict):
            for key in ("target_prior", "source_prior"):
                if details.get(key) is not None and np.size(details[key]) == K:
                    return np.asarray(details[key], dtype=np.float64)
        for name in ("source_prior_", "class_prior_"):
            value = getattr(owner, name, None)
            if value is not None and np.size(value) == K:
                return np.asarray(value, dtype=np.float64)
    meta = getattr(estimator, "meta", None)
    if isinstance(meta, dict) and meta.get("source_prior") is not None and np.size(meta["source_prior"]) == K:
        return np.asarray(meta["source_prior"], dtype=np.float64)
    return None


def parse_rule(text: str) -> tuple[str, float | None]:
    """``"bayes"``, ``"balanced"``, ``"sensitivity:0.9"`` or ``"alert_rate:0.1"`` → (rule, target)."""
    name, _, value = str(text).partition(":")
    name = name.strip().replace("-", "_")
    if name not in RULES:
        raise ValueError(f"unknown decision rule {text!r}: one of bayes, balanced, sensitivity:S, alert_rate:A")
    needs = name in ("sensitivity", "alert_rate")
    if needs != bool(value):
        raise ValueError(f"decision rule {text!r}: {'give a target, e.g. ' + name + ':0.9' if needs else name + ' takes no target'}")
    target = float(value) if value else None
    if target is not None and not 0.0 < target < 1.0:
        raise ValueError(f"decision rule {text!r}: the target must be in (0, 1)")
    return name, target


@dataclasses.dataclass
class DecisionRule:
    """A decision rule over a fitted ``estimator`` (module docstring); ``fit(X_target)`` reads unlabelled rows.

    ``prevalence``: the estimator of :mod:`dpadapt.prevalence` (default :data:`dpadapt.prevalence.DEFAULT`);
    ``level``/``n_boot``: its bootstrap interval; ``source_prior``: the prior the estimator's probabilities are
    for, when the estimator does not record it (:func:`source_prior_of`).
    """

    estimator: Any
    rule: str = "bayes"
    target: float | None = None
    prevalence: str | None = None
    level: float = 0.9
    n_boot: int = 200
    source_prior: Any = None

    def fit(self, X, y=None):
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {self.rule!r}")
        if self.rule in ("sensitivity", "alert_rate") and not (self.target is not None and 0.0 < self.target < 1.0):
            raise ValueError(f"the {self.rule} rule needs a target in (0, 1), got {self.target!r}")
        P = np.asarray(self.estimator.predict_proba(X), dtype=np.float64)
        K = P.shape[1]
        self.classes_ = np.asarray(getattr(self.estimator, "classes_", np.arange(K)))
        if self.rule in ("sensitivity", "alert_rate") and K != 2:
            raise ValueError(f"the {self.rule} rule is for a binary outcome; this model has {K} classes")
        own = source_prior_of(self.estimator, K)
        if own is None:
            own = self.source_prior if self.source_prior is not None else P.mean(axis=0)
        self.source_prior_ = prev.normalised(own)
        method = prev.DEFAULT if self.prevalence is None else self.prevalence
        self.prevalence_ = prev.estimate(P, self.source_prior_, method=method, level=self.level, n_boot=self.n_boot)
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
        thr = "" if getattr(self, "threshold_", None) is None else f"; flags P(positive) ≥ {self.threshold_:.3f} at the estimated prevalence"
        return f"decision rule: {what}{thr}"
