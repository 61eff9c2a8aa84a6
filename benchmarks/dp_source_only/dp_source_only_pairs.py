"""Pairs, public maps and scores shared by the issue-28 DP source-only scripts.

* :func:`sources` — every development or report source of issue 28, each with its target(s):
  Office-Caltech GoogLeNet and SURF, Amazon bow5000 and (report) DeCAF6 through
  :func:`dpadapt.bench.common.cached_pair`; UCI Heart through the public schema
  (:data:`dpadapt.bench.suites.sound_rows.HEART_PAIRS`); PhysioNet 2012 ICU units, one source per unit
  scored on the three other units (12 ordered pairs from 4 fits).
* PhysioNet's rows go through the declared public clinical schema (``examples/physionet2012.schema.toml``:
  clinical ranges to [-1, 1], normal values for what was not measured), as in the sound matrix; the
  estimators then ℓ2-normalise each row. (The first table used a stop-gap map — NaN → 0 plus missingness
  indicators, raw units — until the schema landed; its PhysioNet rows were replaced.)
* :func:`scores` — accuracy, balanced accuracy and (two classes) ROC-AUC in percent. The selection score
  of a pair is its accuracy, ROC-AUC on PhysioNet (a constant predictor reaches 81–95 % accuracy there).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dpadapt.bench.common import cached_pair
from dpadapt.bench.suites.sound_rows import DEV_PAIRS, HEART_PAIRS, REPORT_PAIRS, PairSpec
from dpadapt.datasets import find_data_root

PHYSIONET_UNITS = ("ccu", "csru", "micu", "sicu")
FAMILIES = ("googlenet1024", "surf", "bow5000", "heart", "physionet")


@dataclasses.dataclass
class Source:
    """One labelled source (one fit per seed and ε) and the target(s) its fit is scored on."""

    family: str
    name: str
    Xs: object
    ys: np.ndarray
    n_classes: int
    feature_type: str
    delta: float  # δ of the pair's protocol at n_s (1/(10 n_s); 1/(1.2 n_s) on DeCAF6)
    targets: list[tuple[str, object, np.ndarray]]  # (task name, Xt_test, yt_test)

    @property
    def metric(self) -> str:
        return "auc" if self.family == "physionet" else "accuracy"


def _physionet(unit: str) -> tuple[np.ndarray, np.ndarray]:
    """One ICU unit's rows through the public clinical schema (``examples/physionet2012.schema.toml``), as the sound
    matrix reads them (:func:`dpadapt.bench.suites.sound_rows._physionet_unit`)."""
    from dpadapt.bench.suites.sound_rows import _physionet_unit

    table = _physionet_unit(unit)
    return table.X, np.asarray(table.y, dtype=np.int64)


def _from_spec(spec: PairSpec) -> Source:
    p = spec.load()
    family = spec.dataset
    return Source(family, spec.task, p.Xs, np.asarray(p.ys), p.n_classes, spec.feature_type, spec.delta(len(p.ys)),
                  [(spec.task, p.Xt_test, np.asarray(p.yt_test))])


def sources(split: str) -> Iterator[Source]:
    """The development (``"dev"``) or report (``"report"``) sources, loaded lazily one at a time."""
    if split == "report":
        yield from (_from_spec(s) for s in REPORT_PAIRS)
        return
    if split != "dev":
        raise ValueError(f"split must be 'dev' or 'report', got {split!r}")
    yield from (_from_spec(s) for s in DEV_PAIRS)
    yield from (_from_spec(s) for s in HEART_PAIRS if s.available())
    for unit in PHYSIONET_UNITS:
        Xs, ys = _physionet(unit)
        targets = [(f"physionet:{unit}->{t}", *_physionet(t)) for t in PHYSIONET_UNITS if t != unit]
        yield Source("physionet", f"physionet:{unit}", Xs, ys, 2, "dense", 1.0 / (10.0 * len(ys)), targets)


def _positive_score(model, X) -> np.ndarray:
    if hasattr(model, "decision_function"):
        s = np.asarray(model.decision_function(X))
        return s if s.ndim == 1 else s[:, 1] - s[:, 0]
    return np.asarray(model.predict_proba(X))[:, 1]


def scores(model, X, y) -> dict[str, float]:
    """Accuracy, balanced accuracy and, for two classes, ROC-AUC (all in percent) of a fitted model."""
    from sklearn.metrics import balanced_accuracy_score, roc_auc_score

    pred = np.asarray(model.predict(X))
    out = {"accuracy": 100.0 * float(np.mean(pred == y)), "balanced_accuracy": 100.0 * float(balanced_accuracy_score(y, pred))}
    if len(np.unique(y)) == 2:
        s = _positive_score(model, X)
        out["auc"] = 100.0 * float(roc_auc_score(y, s)) if np.all(np.isfinite(s)) else math.nan
    return out
