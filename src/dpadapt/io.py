"""A party's data file in memory: ``.npz`` (dense or CSR), ``.npy``, ``.csv`` or ``.parquet`` with a label column.

The readers are :mod:`dpadapt.stream.readers` (chunk by chunk); :func:`load_table` assembles their
chunks. SciPy is imported only where a sparse matrix is written (the CLI imports this module for its help).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np


@dataclasses.dataclass
class Table:
    """A party's rows: features ``X`` (dense or CSR), labels ``y`` (``None`` if unlabelled)."""

    X: "np.ndarray | scipy.sparse.csr_matrix"
    y: np.ndarray | None
    path: Path
    #: the feature columns' names (a header, an ``.npz``'s ``feature_names``); ``None``: headerless
    columns: tuple[str, ...] | None = None


def load_table(path: str | os.PathLike, label_column: str = "y", *, labels=None) -> Table:
    """Load features and (optional) labels, read through :func:`dpadapt.stream.open_source`.

    * ``.npz``: ``X`` (dense) or ``data/indices/indptr/shape`` (CSR), and optionally ``y``;
    * ``.npy``: the features (labels from ``labels``, a ``.npy`` of one label a row);
    * ``.csv`` / ``.parquet``: every column except ``label_column`` is a feature; the label
      column is optional (unlabelled target data). Labels of ``-1`` mean "unlabelled".

    Features must be finite numbers in a 2-D table with at least one row and column; labels must
    be finite numbers — whole numbers are class labels (map string labels to the public label set
    ``0..K-1`` first), other values regression targets. Files are never unpickled. Every problem is
    a one-line ``ValueError`` (``FileNotFoundError`` when missing). The whole table is in memory:
    a method that can work chunk by chunk reads the :class:`~dpadapt.stream.ChunkedSource` instead.
    """
    from dpadapt.stream.readers import materialize, open_source

    source = open_source(path, label_column, labels=labels)
    X, y = materialize(source)
    if y is not None and y.dtype.kind in "iu" and np.all(y == -1):
        y = None
    return Table(X=X, y=y, path=Path(path), columns=source.columns)


def save_table(path: str | os.PathLike, X, y=None, feature_names=None) -> Path:
    """Write ``X`` (dense or sparse) and optional ``y`` to an ``.npz`` data file.

    ``feature_names`` (one name a column; a DataFrame's columns by default) are stored as the member
    ``feature_names``, so the file is read by name like a CSV with a header.
    """
    import scipy.sparse as sp

    path = Path(path)
    arrays = {}
    if feature_names is None and hasattr(X, "columns") and hasattr(X, "to_numpy"):
        feature_names, X = list(X.columns), X.to_numpy()
    if feature_names is not None:
        arrays["feature_names"] = np.array([str(c) for c in feature_names], dtype=str)
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        arrays.update(data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape))
    else:
        arrays["X"] = np.asarray(X)
    if y is not None:
        arrays["y"] = np.asarray(y)
    np.savez_compressed(path, **arrays)
    return path
