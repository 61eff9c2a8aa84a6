"""An estimator fitted through a declared schema, from Python: the same agreement checks as the CLI.

:class:`SchemaModel` wraps any dpadapt (or scikit-learn-style) classifier. ``fit_domains(source, target)``
takes two :class:`~dpadapt.tables.MappedTable` (from :func:`~dpadapt.tables.read_table`), refuses them when
their schemas' maps differ (the difference named in one line: class order, a column's range, a missing
code, …), fits the estimator on the source's class NAMES (so a label set listed in another order can never
invert a prediction) and keeps the schema fingerprint; ``predict`` / ``predict_proba`` / ``evaluate`` refuse
a table read through another map. ::

    schema = load_schema("examples/heart.schema.toml")
    src, tgt = read_table(cleveland, schema), read_table(hungary, schema)
    model = SchemaModel(SoundDA(epsilon=4.0, classes=schema.classes, feature_type="table")).fit_domains(src, tgt)
    model.predict(tgt)            # class names
    model.evaluate(tgt)           # dpadapt.metrics.Evaluation: balanced accuracy, ROC-AUC, ... with intervals
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .readers import MappedTable
from .schema import fingerprint_difference


class SchemaMismatch(ValueError):
    """Two tables (or a model and a table) whose schemas map rows differently; the message names the difference."""


def check_same_schema(expected: Any, actual: Any, expected_name: str = "the model", actual_name: str = "the table") -> None:
    """Refuse ``actual`` when its schema fingerprint differs from ``expected`` (tables, schemas or fingerprint dicts)."""
    diff = fingerprint_difference(_fingerprint(expected), _fingerprint(actual), expected_name, actual_name)
    if diff is not None:
        raise SchemaMismatch(diff)


def _fingerprint(obj: Any) -> dict | None:
    if obj is None or isinstance(obj, dict):
        return obj
    if isinstance(obj, MappedTable):
        return obj.fingerprint
    if hasattr(obj, "fingerprint") and callable(obj.fingerprint):  # a Schema
        return obj.fingerprint()
    raise TypeError(f"expected a MappedTable, a Schema or a fingerprint, got {type(obj).__name__}")


class SchemaModel:
    """A classifier fitted through a schema (see the module docstring).

    Attributes after ``fit_domains``: ``estimator_`` (the fitted estimator), ``fingerprint_`` (the schema's),
    ``classes_`` (the class names, in the schema's order).
    """

    def __init__(self, estimator: Any):
        self.estimator = estimator

    def fit_domains(self, source: MappedTable, target: MappedTable) -> SchemaModel:
        if not isinstance(source, MappedTable) or not isinstance(target, MappedTable):
            raise TypeError("fit_domains takes the source and target tables from dpadapt.tables.read_table")
        if source.schema is None or source.labels is None:
            raise ValueError("the source table needs its labels, read through a schema with a [label] section")
        check_same_schema(source, target, "the source table", "the target table")
        names = tuple(source.classes)
        declared = getattr(self.estimator, "classes", None)
        estimator = _clone(self.estimator)
        if declared is None and "classes" in getattr(estimator, "get_params", lambda: {})():
            estimator.set_params(classes=names)
        elif declared is not None and [str(c) for c in declared] != [str(c) for c in names]:
            word = "class order differs" if sorted(map(str, declared)) == sorted(map(str, names)) else "label set differs"
            raise SchemaMismatch(f"{word}: the estimator has {list(declared)}, the schema has {list(names)}")
        estimator.fit_domains(source.X, np.asarray(source.labels), target.X)
        self.estimator_, self.fingerprint_, self.classes_ = estimator, source.fingerprint, np.asarray(names)
        return self

    def _rows(self, table: MappedTable) -> np.ndarray:
        if not hasattr(self, "fingerprint_"):
            raise ValueError("this SchemaModel is not fitted yet: call fit_domains(source, target) first")
        if not isinstance(table, MappedTable):
            raise TypeError("give a table from dpadapt.tables.read_table (read through the model's schema)")
        check_same_schema(self.fingerprint_, table, "the model", "the table")
        return table.X

    def predict(self, table: MappedTable) -> np.ndarray:
        """Class names of the table's rows."""
        return np.asarray(self.estimator_.predict(self._rows(table)))

    def predict_proba(self, table: MappedTable) -> np.ndarray:
        """Class probabilities, columns in the schema's class order (``classes_``)."""
        proba = np.asarray(self.estimator_.predict_proba(self._rows(table)))
        order = [list(map(str, self.estimator_.classes_)).index(str(c)) for c in self.classes_]
        return proba[:, order]

    def evaluate(self, table: MappedTable, **kwargs: Any):
        """:func:`dpadapt.metrics.evaluate` on a labelled table (balanced accuracy, ROC-AUC, ... with intervals)."""
        from dpadapt.metrics import evaluate

        if table.y is None:
            raise ValueError("evaluate needs a labelled table")
        return evaluate(table.y, self.predict_proba(table), tuple(self.classes_), **kwargs)


def _clone(estimator: Any) -> Any:
    try:
        from sklearn.base import clone

        return clone(estimator)
    except (TypeError, ValueError, RuntimeError):
        return estimator
