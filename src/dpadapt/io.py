"""Reading a party's data file: ``.npz`` (dense or CSR), ``.csv`` or ``.parquet`` with a label column.

SciPy is imported only where a sparse matrix is read or written (the CLI imports this module for its help).
"""

from __future__ import annotations

import dataclasses
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

SUPPORTED = (".npz", ".csv", ".parquet")


@dataclasses.dataclass
class Table:
    """A party's rows: features ``X`` (dense or CSR), labels ``y`` (``None`` if unlabelled)."""

    X: "np.ndarray | scipy.sparse.csr_matrix"
    y: np.ndarray | None
    path: Path


def load_table(path: str | os.PathLike, label_column: str = "y") -> Table:
    """Load features and (optional) labels.

    * ``.npz``: ``X`` (dense) or ``data/indices/indptr/shape`` (CSR), and optionally ``y``.
      Benchmark files with a ``split`` array are read whole.
    * ``.csv`` / ``.parquet``: every column except ``label_column`` is a feature; the label
      column is optional (unlabelled target data). Labels of ``-1`` mean "unlabelled".

    Features must be finite numbers in a 2-D table with at least one row and column; labels must
    be finite numbers — whole numbers are class labels (map string labels to the public label set
    ``0..K-1`` first), other values regression targets. Files are never
    unpickled. Every problem is a one-line ``ValueError`` (``FileNotFoundError`` when missing).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such data file")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        X, y = _load_npz(path, label_column)
    elif suffix in (".csv", ".parquet"):
        X, y = _load_frame(path, label_column)
    else:
        raise ValueError(f"{path}: unsupported data file type {suffix!r}; use one of {', '.join(SUPPORTED)}")
    X = _check_X(path, X)
    if y is not None:
        y = _check_labels(path, y, label_column)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"{path}: {y.shape[0]} labels for {X.shape[0]} rows")
        if np.all(y == -1):
            y = None
    return Table(X=X, y=y, path=path)


def _load_npz(path: Path, label_column: str):
    import scipy.sparse as sp

    if path.stat().st_size == 0:
        raise ValueError(f"{path}: the data file is empty")
    with open(path, "rb") as fh:
        if not zipfile.is_zipfile(fh):
            raise ValueError(f"{path}: not an .npz archive (nothing was loaded)")
    try:
        with np.load(path, allow_pickle=False) as npz:
            files = set(npz.files)
            if not files:
                raise ValueError(f"{path}: the .npz data file is empty (no arrays)")
            if {"data", "indices", "indptr", "shape"} <= files:
                shape = tuple(int(v) for v in npz["shape"])
                X = sp.csr_matrix((npz["data"], npz["indices"], npz["indptr"]), shape=shape)
            elif "X" in files:
                X = npz["X"]
            else:
                raise ValueError(f"{path}: an .npz data file needs an array 'X' (or CSR arrays data/indices/indptr/shape)")
            y = npz[label_column] if label_column in files else (npz["y"] if "y" in files else None)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"{path}: unreadable or truncated .npz data file ({' '.join(str(exc).split())})") from None
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise ValueError(f"{path}: unreadable .npz data file ({' '.join(str(exc).split())})") from None
    return X, y


def _check_X(path: Path, X):
    import scipy.sparse as sp

    if sp.issparse(X):
        values = X.data
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{path}: features must be numbers, got dtype {X.dtype}")
        if X.ndim != 2:
            raise ValueError(f"{path}: features must be a 2-D table (rows × features), got shape {X.shape}")
        values = X
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{path}: the data file is empty ({X.shape[0]} rows × {X.shape[1]} features)")
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise ValueError(f"{path}: features contain NaN or infinite values")
    return X


def _check_labels(path: Path, y, label_column: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{path}: labels must be one column, got shape {y.shape}")
    if y.dtype.kind in "iub":
        return y.astype(np.int64)
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{path}: labels in {label_column!r} contain NaN or infinite values")
        # whole numbers are class labels; other values are regression targets, kept as they are
        return y.astype(np.int64) if np.all(y == np.round(y)) else y.astype(np.float64)
    example = next(iter(y.tolist()), "")
    raise ValueError(
        f"{path}: labels in {label_column!r} are not integers (e.g. {example!r}); "
        "map them to the public label set 0..K-1 first (-1 = unlabelled)"
    )


def _load_frame(path: Path, label_column: str):
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise ValueError("reading .parquet needs pyarrow (a dependency of dpadapt): pip install pyarrow") from exc
        table = pq.read_table(path)
        names = table.column_names
        columns = {n: table.column(n).to_numpy() for n in names}
    else:
        try:
            with open(path, encoding="utf-8") as fh:
                header = fh.readline().strip().split(",")
            data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2, dtype=str)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ValueError(f"{path}: not a readable CSV file ({' '.join(str(exc).split())[:120]})") from None
        names = [h.strip() for h in header]
        if data.size == 0:
            raise ValueError(f"{path}: the data file is empty")
        if data.shape[1] != len(names):
            raise ValueError(f"{path}: header has {len(names)} columns but rows have {data.shape[1]}")
        columns = {n: data[:, i] for i, n in enumerate(names)}
    y = columns.pop(label_column, None)
    if not columns:
        raise ValueError(f"{path}: no feature columns")
    features = []
    for name, values in columns.items():
        try:
            features.append(np.asarray(values, dtype=np.float64))
        except ValueError:
            raise ValueError(f"{path}: column {name!r} is not numeric") from None
    X = np.column_stack(features)
    if y is not None and np.asarray(y).dtype.kind in "US":
        try:
            y = np.asarray(y, dtype=np.float64)
        except ValueError:
            pass  # left as strings: _check_labels says how to map them
    return X, y


def save_table(path: str | os.PathLike, X, y=None) -> Path:
    """Write ``X`` (dense or sparse) and optional ``y`` to an ``.npz`` data file."""
    import scipy.sparse as sp

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
