"""Reading a party's data file: ``.npz`` (dense or CSR), ``.csv`` or ``.parquet`` with a label column."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

SUPPORTED = (".npz", ".csv", ".parquet")


@dataclasses.dataclass
class Table:
    """A party's rows: features ``X`` (dense or CSR), labels ``y`` (``None`` if unlabelled)."""

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray | None
    path: Path


def load_table(path: str | os.PathLike, label_column: str = "y") -> Table:
    """Load features and (optional) labels.

    * ``.npz``: ``X`` (dense) or ``data/indices/indptr/shape`` (CSR), and optionally ``y``.
      Benchmark files with a ``split`` array are read whole.
    * ``.csv`` / ``.parquet``: every column except ``label_column`` is a feature; the label
      column is optional (unlabelled target data). Labels of ``-1`` mean "unlabelled".
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such data file")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as npz:
            files = set(npz.files)
            if {"data", "indices", "indptr", "shape"} <= files:
                X = sp.csr_matrix((npz["data"], npz["indices"], npz["indptr"]), shape=tuple(npz["shape"]))
            elif "X" in files:
                X = npz["X"]
            else:
                raise ValueError(f"{path}: an .npz data file needs an array 'X' (or CSR arrays data/indices/indptr/shape)")
            y = npz[label_column] if label_column in files else (npz["y"] if "y" in files else None)
    elif suffix in (".csv", ".parquet"):
        X, y = _load_frame(path, label_column)
    else:
        raise ValueError(f"{path}: unsupported data file type {suffix!r}; use one of {', '.join(SUPPORTED)}")
    if y is not None:
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"{path}: {y.shape[0]} labels for {X.shape[0]} rows")
        if np.all(y == -1):
            y = None
    return Table(X=X, y=y, path=path)


def _load_frame(path: Path, label_column: str):
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ValueError("reading .parquet needs pyarrow: pip install 'dpadapt[parquet]'") from exc
        table = pq.read_table(path)
        names = table.column_names
        columns = {n: table.column(n).to_numpy() for n in names}
    else:
        with open(path) as fh:
            header = fh.readline().strip().split(",")
        data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
        names = [h.strip() for h in header]
        if data.shape[1] != len(names):
            raise ValueError(f"{path}: header has {len(names)} columns but rows have {data.shape[1]}")
        columns = {n: data[:, i] for i, n in enumerate(names)}
    y = columns.pop(label_column, None)
    if not columns:
        raise ValueError(f"{path}: no feature columns")
    X = np.column_stack([np.asarray(v, dtype=np.float64) for v in columns.values()])
    return X, (None if y is None else np.asarray(y).astype(np.int64))


def save_table(path: str | os.PathLike, X, y=None) -> Path:
    """Write ``X`` (dense or sparse) and optional ``y`` to an ``.npz`` data file."""
    path = Path(path)
    arrays = {}
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        arrays.update(data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape))
    else:
        arrays["X"] = np.asarray(X)
    if y is not None:
        arrays["y"] = np.asarray(y)
    np.savez_compressed(path, **arrays)
    return path
