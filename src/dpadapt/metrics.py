"""The metrics a clinician expects of a classifier, with bootstrap intervals: one computation for the CLI
(``dpadapt score``), the HTML report and the benchmarks.

:func:`evaluate` takes the true class indices, the predicted probabilities (columns in class order) and
a decision threshold, and gives

* binary: balanced accuracy, ROC-AUC, sensitivity and specificity at the threshold on P(positive), the
  Brier score, the calibration slope and intercept (logistic recalibration of the outcome on the
  logit of P(positive), Cox 1958) and the expected calibration error (10 equal-width bins), accuracy;
* multi-class: balanced accuracy, macro one-vs-rest ROC-AUC, the multi-class Brier score, the
  top-label expected calibration error, accuracy;

each with a percentile bootstrap interval (rows resampled with replacement; a fixed public seed, so
the interval is reproducible). Under label shift accuracy is misleading — a constant prediction of the
majority class can beat every model — so balanced accuracy and ROC-AUC lead, and
:attr:`Evaluation.constant_beats_model` says when the constant predictor's accuracy is at least the
model's. These are local numbers of the party holding the labels: nothing here is released.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
from scipy.special import expit, logit

#: Metric → words, in the order a report shows them (binary).
BINARY_METRICS = {
    "balanced_accuracy": "balanced accuracy",
    "roc_auc": "ROC-AUC",
    "sensitivity": "sensitivity",
    "specificity": "specificity",
    "brier": "Brier score",
    "calibration_slope": "calibration slope",
    "calibration_intercept": "calibration intercept",
    "ece": "expected calibration error",
    "accuracy": "accuracy",
}
#: Metric → words, in the order a report shows them (more than two classes).
MULTICLASS_METRICS = {
    "balanced_accuracy": "balanced accuracy",
    "roc_auc": "ROC-AUC (macro one-vs-rest)",
    "brier": "Brier score",
    "ece": "expected calibration error (top label)",
    "accuracy": "accuracy",
}
N_BINS = 10


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """Point estimates and bootstrap intervals of one model on one labelled table.

    ``values`` / ``intervals``: metric name → value / (low, high) (NaN where undefined, e.g. ROC-AUC with
    one class present); ``counts``: rows per class; ``threshold``: on P(``classes[positive]``) (binary);
    ``constant_accuracy``: the accuracy of always predicting the most frequent class of these rows.
    """

    classes: tuple
    counts: tuple[int, ...]
    values: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    threshold: float | None
    positive: int | None
    level: float
    n_boot: int
    confusion: np.ndarray

    @property
    def n(self) -> int:
        return int(sum(self.counts))

    @property
    def binary(self) -> bool:
        return len(self.classes) == 2

    @property
    def names(self) -> dict[str, str]:
        return BINARY_METRICS if self.binary else MULTICLASS_METRICS

    @property
    def constant_accuracy(self) -> float:
        return max(self.counts) / max(self.n, 1)

    @property
    def majority_class(self):
        return self.classes[int(np.argmax(self.counts))]

    @property
    def constant_beats_model(self) -> bool:
        """Whether always predicting the most frequent class is at least as accurate as the model."""
        return self.constant_accuracy >= self.values["accuracy"]

    def to_dict(self) -> dict:
        return {
            "classes": [str(c) for c in self.classes], "counts": list(self.counts), "n": self.n,
            "threshold": self.threshold, "positive": None if self.positive is None else str(self.classes[self.positive]),
            "level": self.level, "n_boot": self.n_boot, "values": dict(self.values),
            "intervals": {k: list(v) for k, v in self.intervals.items()},
            "constant_accuracy": self.constant_accuracy, "majority_class": str(self.majority_class),
            "confusion": self.confusion.tolist(),
        }

    def lines(self) -> list[str]:
        """The evaluation in words: one line per metric with its interval, balanced accuracy first."""
        pct = f"{100 * self.level:g} %"
        out = [f"{self.n} labelled rows: " + ", ".join(f"{c} {k} ({100 * k / max(self.n, 1):.1f} %)"
                                                      for c, k in zip(self.classes, self.counts))]
        width = max(len(w) for w in self.names.values())
        for key, words in self.names.items():
            value = self.values[key]
            if math.isnan(value):
                out.append(f"{words:<{width}}  undefined ({_why_undefined(key)})")
                continue
            lo, hi = self.intervals[key]
            extra = ""
            if key == "roc_auc" and self.binary:
                extra = f"  ({self.classes[self.positive]} as positive)"
            elif key in ("sensitivity", "specificity"):
                extra = f"  at threshold {self.threshold:g} on P({self.classes[self.positive]})"
            elif key == "accuracy" and self.constant_beats_model:
                extra = (f"  — a constant '{self.majority_class}' predictor scores {self.constant_accuracy:.4f}: "
                         "accuracy says little here")
            elif key == "accuracy":
                extra = f"  (a constant '{self.majority_class}' predictor: {self.constant_accuracy:.4f})"
            out.append(f"{words:<{width}}  {value:.4f} [{lo:.4f}, {hi:.4f}]{extra}")
        out.append(f"(intervals: {pct} percentile bootstrap over {self.n_boot} resamples of the rows)")
        return out

    def confusion_lines(self) -> list[str]:
        width = max(max(len(str(c)) for c in self.classes), len(str(int(self.confusion.max())))) + 2
        rows = ["confusion matrix (rows: true, columns: predicted)",
                " " * width + "".join(f"{str(c):>{width}}" for c in self.classes)]
        for c, row in zip(self.classes, self.confusion):
            rows.append(f"{str(c):<{width}}" + "".join(f"{v:>{width}}" for v in row))
        return rows


def _why_undefined(key: str) -> str:
    if key in ("roc_auc", "sensitivity", "specificity", "balanced_accuracy"):
        return "a class does not occur in these rows"
    return "not computable on these rows"


def evaluate(
    y: Sequence[int],
    proba: np.ndarray,
    classes: Sequence,
    *,
    threshold: float = 0.5,
    positive: int = 1,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Evaluation:
    """Metrics of ``proba`` (rows × classes, columns in ``classes`` order) against class indices ``y``.

    Binary: the prediction is ``P(classes[positive]) >= threshold``; multi-class: the most probable
    class. Intervals: percentile bootstrap with ``n_boot`` resamples at ``level`` (seed ``seed``).
    """
    y = np.asarray(y, dtype=np.int64)
    proba = np.asarray(proba, dtype=np.float64)
    K = len(classes)
    if proba.ndim != 2 or proba.shape != (y.shape[0], K):
        raise ValueError(f"probabilities of shape {proba.shape} for {y.shape[0]} rows and {K} classes")
    if y.size == 0:
        raise ValueError("no labelled rows to evaluate")
    if np.any((y < 0) | (y >= K)):
        bad = y[(y < 0) | (y >= K)][0]
        raise ValueError(f"label {int(bad)} is outside the classes 0..{K - 1} ({', '.join(map(str, classes))}); "
                         "map the labels to the class indices first")
    if not np.all(np.isfinite(proba)):
        raise ValueError("the model gave non-finite probabilities")
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"the threshold must be in (0, 1), got {threshold:g}")
    if n_boot < 0:
        raise ValueError(f"the number of bootstrap resamples must be ≥ 0, got {n_boot}")
    binary = K == 2
    pos = positive if binary else None
    pred = _predictions(proba, threshold, pos)
    rows = _Rows(y, proba, pred, K, pos)
    values = rows.metrics(np.ones(y.size))
    intervals = _bootstrap(rows, n_boot, level, seed)
    confusion = np.zeros((K, K), dtype=np.int64)
    np.add.at(confusion, (y, pred), 1)
    return Evaluation(tuple(classes), tuple(int(c) for c in np.bincount(y, minlength=K)), values, intervals,
                      threshold if binary else None, pos, level, n_boot, confusion)


def _predictions(proba: np.ndarray, threshold: float, positive: int | None) -> np.ndarray:
    if positive is None:
        return np.argmax(proba, axis=1)
    return np.where(proba[:, positive] >= threshold, positive, 1 - positive)


class _Rows:
    """What the metrics need of the rows, computed once; every metric takes row weights (bootstrap counts)."""

    def __init__(self, y: np.ndarray, proba: np.ndarray, pred: np.ndarray, K: int, positive: int | None):
        self.y, self.proba, self.pred, self.K, self.positive = y, proba, pred, K, positive
        self.hit = (pred == y).astype(np.float64)
        self.onehot = np.eye(K)[y]
        if positive is not None:
            self.p = proba[:, positive]
            self.t = (y == positive).astype(np.float64)
            self.z = logit(np.clip(self.p, 1e-6, 1 - 1e-6))
            self.groups = np.unique(self.p, return_inverse=True)[1]
            self.bins = _bin_index(self.p)
            self.start = _calibration(self.t, self.z, np.ones_like(self.t))  # resamples start from the full fit
        else:
            top = np.argmax(proba, axis=1)
            self.conf = proba[np.arange(len(y)), top]
            self.top_hit = (top == y).astype(np.float64)
            self.bins = _bin_index(self.conf)
            self.class_groups = [np.unique(proba[:, k], return_inverse=True)[1] for k in range(K)]

    def metrics(self, w: np.ndarray) -> dict[str, float]:
        y, K = self.y, self.K
        total = w.sum()
        per_class = np.bincount(y, weights=w, minlength=K)
        correct = np.bincount(y, weights=w * self.hit, minlength=K)
        recalls = np.divide(correct, per_class, out=np.full(K, math.nan), where=per_class > 0)
        out = {"balanced_accuracy": float(np.mean(recalls)), "accuracy": float(np.dot(w, self.hit) / total)}
        if self.positive is not None:
            out["roc_auc"] = _weighted_auc(self.t, self.groups, w)
            out["sensitivity"] = float(recalls[self.positive])
            out["specificity"] = float(recalls[1 - self.positive])
            out["brier"] = float(np.dot(w, (self.p - self.t) ** 2) / total)
            out["calibration_slope"], out["calibration_intercept"] = _calibration(self.t, self.z, w, self.start)
            out["ece"] = _ece(self.t, self.p, self.bins, w)
        else:
            aucs = [_weighted_auc((y == k).astype(np.float64), self.class_groups[k], w) for k in range(K)]
            out["roc_auc"] = float(np.mean(aucs))
            out["brier"] = float(np.dot(w, np.sum((self.proba - self.onehot) ** 2, axis=1)) / total)
            out["ece"] = _ece(self.top_hit, self.conf, self.bins, w)
        return out


def _bin_index(p: np.ndarray, bins: int = N_BINS) -> np.ndarray:
    edges = np.linspace(0.0, 1.0, bins + 1)
    return np.clip(np.searchsorted(edges, p, side="right") - 1, 0, bins - 1)


def _weighted_auc(t: np.ndarray, groups: np.ndarray, w: np.ndarray) -> float:
    """Mann-Whitney AUC with row weights; ``groups``: each row's rank among the distinct scores (ties count half)."""
    w1 = np.bincount(groups, weights=w * t)
    w0 = np.bincount(groups, weights=w * (1 - t))
    n1, n0 = w1.sum(), w0.sum()
    if n1 == 0 or n0 == 0:
        return math.nan
    below = np.cumsum(w0) - w0
    return float(np.dot(w1, below + 0.5 * w0) / (n1 * n0))


def _calibration(t: np.ndarray, z: np.ndarray, w: np.ndarray, start: tuple[float, float] | None = None,
                 iterations: int = 50) -> tuple[float, float]:
    """Weighted logistic fit of t on (1, z) by Newton's method; returns (slope, intercept)."""
    active = w > 0
    if t[active].min() == t[active].max():
        return math.nan, math.nan
    A = np.column_stack([np.ones_like(z), z])
    beta = np.zeros(2) if start is None or not all(map(math.isfinite, start)) else np.array([start[1], start[0]])
    for _ in range(iterations):
        m = expit(A @ beta)
        H = A.T @ (A * (w * m * (1 - m))[:, None]) + 1e-9 * np.eye(2)
        step = np.linalg.solve(H, A.T @ (w * (t - m)))
        beta = beta + step
        if not np.all(np.isfinite(beta)) or np.max(np.abs(beta)) > 1e6:
            return math.nan, math.nan
        if np.max(np.abs(step)) < 1e-8:
            break
    return float(beta[1]), float(beta[0])


def _ece(t: np.ndarray, p: np.ndarray, bins: np.ndarray, w: np.ndarray) -> float:
    size = np.bincount(bins, weights=w, minlength=N_BINS)
    gap = np.abs(np.bincount(bins, weights=w * t, minlength=N_BINS) - np.bincount(bins, weights=w * p, minlength=N_BINS))
    return float(gap.sum() / size.sum())


def roc_auc(t: np.ndarray, p: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney, ties counted half); NaN when one class is absent."""
    t = np.asarray(t, dtype=np.float64)
    return _weighted_auc(t, np.unique(p, return_inverse=True)[1], np.ones_like(t))


def calibration_line(t: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """Slope and intercept of the logistic recalibration ``logit P(t=1) = a + b · logit(p)`` (Newton steps).

    1 and 0 for a calibrated model; a slope below 1 means over-confident probabilities. NaN when the fit
    does not exist (one outcome only, or outcomes perfectly separated by p).
    """
    t = np.asarray(t, dtype=np.float64)
    return _calibration(t, logit(np.clip(p, 1e-6, 1 - 1e-6)), np.ones_like(t))


def expected_calibration_error(t: np.ndarray, p: np.ndarray) -> float:
    """Σ over 10 equal-width bins of P of (share of rows in the bin) × |mean outcome − mean P|."""
    t = np.asarray(t, dtype=np.float64)
    return _ece(t, p, _bin_index(p), np.ones_like(t))


def _bootstrap(rows: _Rows, n_boot: int, level: float, seed: int) -> dict[str, tuple[float, float]]:
    """Percentile intervals; a resample is a multinomial count per row (rows are never re-sorted)."""
    rng = np.random.default_rng(seed)
    n = rows.y.size
    draws: dict[str, list[float]] = {}
    for _ in range(n_boot):
        w = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        for key, value in rows.metrics(w).items():
            draws.setdefault(key, []).append(value)
    tail = (1.0 - level) / 2.0
    out = {}
    for key in rows.metrics(np.ones(n)):
        values = np.asarray([v for v in draws.get(key, []) if not math.isnan(v)])
        out[key] = ((float(np.quantile(values, tail)), float(np.quantile(values, 1 - tail))) if values.size
                    else (math.nan, math.nan))
    return out


__all__ = ["BINARY_METRICS", "MULTICLASS_METRICS", "Evaluation", "calibration_line", "evaluate",
           "expected_calibration_error", "roc_auc"]
