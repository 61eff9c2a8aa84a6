"""Readers that hand a party's rows over chunk by chunk: a plain iterator of ``(X_chunk, y_chunk)``.

A :class:`ChunkedSource` knows its public shape (rows, features) before any row is read — a
release's plan needs ``n`` first — and yields chunks of at most ``rows`` rows each time it is
iterated. ``X_chunk`` is a float64 ndarray or a CSR matrix (sparse input stays sparse);
``y_chunk`` an int64 label array or ``None``. Memory: one chunk at a time, whatever ``n`` is.

* :func:`from_arrays` — in-memory arrays, ``np.memmap`` / ``np.load(..., mmap_mode="r")`` arrays,
  scipy sparse matrices (row slices of a view: nothing is copied up front);
* :func:`open_npy` — a ``.npy`` feature file, memory-mapped (labels from a second ``.npy`` or array);
* :func:`open_parquet` — Parquet row batches read with pyarrow (numeric feature columns + label column);
* :func:`open_source` — by file suffix (``.npy``, ``.parquet``; ``.npz`` / ``.csv`` through
  :func:`dpadapt.io.load_table`, read whole: a zip member cannot be memory-mapped).

Every problem is a one-line ``ValueError``; nothing is written by a reader.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import scipy.sparse as sp

Chunk = tuple["np.ndarray | sp.csr_matrix", "np.ndarray | None"]

#: Bytes of float64 features per chunk by default (the per-row map makes about two copies of one chunk).
DEFAULT_CHUNK_BYTES = 16 * 2**20


def chunk_rows(n_features: int, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> int:
    """Rows per chunk so that one dense float64 chunk takes about ``chunk_bytes``."""
    return max(1, int(chunk_bytes) // (8 * max(1, int(n_features))))


@dataclasses.dataclass(frozen=True)
class ChunkedSource:
    """A party's rows, read chunk by chunk: ``n_rows`` × ``n_features`` known up front, ``iter()`` gives the chunks."""

    n_rows: int
    n_features: int
    chunks: Callable[[], Iterator[Chunk]]
    labelled: bool
    name: str = "data"

    def __iter__(self) -> Iterator[Chunk]:
        return self.chunks()


def _check_chunk(name: str, X, y, start: int):
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        values = X.data
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{name}: features must be numbers, got dtype {X.dtype}")
        X = np.asarray(X, dtype=np.float64)
        values = X
    if not np.isfinite(np.sum(values)) and not np.all(np.isfinite(values)):  # the sum is cheap; exact check if it overflows
        raise ValueError(f"{name}: features contain NaN or infinite values (rows from {start})")
    if y is not None:
        y = np.asarray(y)
        if y.dtype.kind == "f" and not np.all(y == np.round(y)):
            raise ValueError(f"{name}: labels must be whole numbers (rows from {start})")
        if y.dtype.kind not in "iubf":
            raise ValueError(f"{name}: labels must be integers, got dtype {y.dtype}")
        y = y.astype(np.int64)
    return X, y


def from_arrays(X, y=None, *, rows: int | None = None, name: str = "data") -> ChunkedSource:
    """Chunks of an in-memory, memory-mapped or sparse (CSR) feature matrix and its labels."""
    if sp.issparse(X):
        X = X.tocsr()
    elif not isinstance(X, np.ndarray):
        X = np.asarray(X)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"{name}: features must be a non-empty 2-D table, got shape {X.shape}")
    n, d = X.shape
    if y is not None:
        y = np.asarray(y)
        if y.shape != (n,):
            raise ValueError(f"{name}: {y.shape[0] if y.ndim else 0} labels for {n} rows")
    step = int(rows) if rows else chunk_rows(d)

    def chunks() -> Iterator[Chunk]:
        for start in range(0, n, step):
            stop = min(n, start + step)
            yield _check_chunk(name, X[start:stop], None if y is None else y[start:stop], start)

    return ChunkedSource(n, d, chunks, y is not None, name)


def open_npy(path: str | os.PathLike, labels=None, *, rows: int | None = None) -> ChunkedSource:
    """A ``.npy`` feature file read through a memory map; ``labels``: a ``.npy`` path or an array."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such data file")
    try:
        X = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise ValueError(f"{path}: unreadable .npy file ({' '.join(str(exc).split())})") from None
    if isinstance(labels, (str, os.PathLike)):
        labels = np.load(labels, mmap_mode="r", allow_pickle=False)
    return from_arrays(X, labels, rows=rows, name=str(path))


def _parquet_columns(pf, label_column: str) -> tuple[list[str], bool]:
    import pyarrow.types as pat

    names, labelled = [], False
    for field in pf.schema_arrow:
        if field.name == label_column:
            labelled = True
        elif pat.is_integer(field.type) or pat.is_floating(field.type) or pat.is_boolean(field.type):
            names.append(field.name)
        else:
            raise ValueError(f"feature column {field.name!r} has type {field.type}; features must be numbers")
    if not names:
        raise ValueError("no feature columns")
    return names, labelled


def open_parquet(path: str | os.PathLike, label_column: str = "y", *, rows: int | None = None) -> ChunkedSource:
    """A Parquet file read in row batches with pyarrow: every numeric column except ``label_column`` is a feature."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such data file")
    try:
        pf = pq.ParquetFile(path)
        names, labelled = _parquet_columns(pf, label_column)
    except ValueError as exc:
        raise ValueError(f"{path}: {' '.join(str(exc).split())}") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several error types for a bad file
        raise ValueError(f"{path}: unreadable Parquet file ({' '.join(str(exc).split())})") from None
    n, d = pf.metadata.num_rows, len(names)
    step = int(rows) if rows else chunk_rows(d)

    def chunks() -> Iterator[Chunk]:
        start = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=step, columns=names + ([label_column] if labelled else [])):
            X = np.empty((batch.num_rows, d))
            for j, col in enumerate(names):
                X[:, j] = batch.column(col).to_numpy(zero_copy_only=False)
            y = batch.column(label_column).to_numpy(zero_copy_only=False) if labelled else None
            yield _check_chunk(str(path), X, y, start)
            start += batch.num_rows

    return ChunkedSource(n, d, chunks, labelled, str(path))


def open_source(path: str | os.PathLike, label_column: str = "y", *, labels=None, rows: int | None = None) -> ChunkedSource:
    """A chunked reader chosen by suffix: ``.npy`` (memory map), ``.parquet`` (row batches); ``.npz`` / ``.csv`` read whole."""
    suffix = Path(path).suffix.lower()
    if suffix == ".npy":
        return open_npy(path, labels, rows=rows)
    if suffix == ".parquet":
        return open_parquet(path, label_column, rows=rows)
    from dpadapt.io import load_table

    table = load_table(path, label_column)
    return from_arrays(table.X, table.y, rows=rows, name=str(path))
