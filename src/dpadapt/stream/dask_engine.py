"""The sums of the sound releases on a Dask cluster: per-partition sums on the workers, noise once in the caller.

For a source that does not fit one machine. Each partition (a block of rows of a ``dask.array``, a
partition of a ``dask.dataframe``, or a file of a partitioned Parquet directory) is mapped and summed on a
worker by the same accumulator as the single-machine path (:class:`~dpadapt.stream.sums.ClassSums`,
:class:`~dpadapt.stream.sums.ClassMomentSums`: every row through the public per-row map and the
mechanisms' clip); the partial sums are added pairwise on the workers and only the totals — K × k sums,
K counts (and the k × k pooled second moment) — reach the calling process, where
:mod:`dpadapt.privacy.mechanisms` draws the single Gaussian. No noise is drawn on a worker; no row leaves
its worker. The totals do not depend on how the rows were partitioned (Δ is that of one row).

Patient-level bounding (:func:`first_rows_per_id`) is a group-by on the ID before any row is mapped:
a shuffle on the ID column puts every row of a patient in one partition, where the first K rows of each
patient (in the data's order) are kept.

Dask runs on whatever scheduler is current: a ``distributed.Client(address)`` made before the call
(an existing cluster), or pass ``client=``; without either, Dask's local threaded scheduler.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from dpadapt.stream.sums import ClassSums, RowMap

Acc = TypeVar("Acc")
#: The column that carries each row's position in the data while a frame is shuffled on its ID.
_ORDER = "__dpadapt_row_order__"


def is_dask_collection(X) -> bool:
    """A ``dask.array`` or ``dask.dataframe`` (anything with a Dask graph)."""
    return hasattr(X, "__dask_graph__")


def is_parquet_dataset(X) -> bool:
    """A path (str / PathLike) to a directory of Parquet files, or a glob of them."""
    if not isinstance(X, (str, os.PathLike)):
        return False
    path = os.fspath(X)
    return os.path.isdir(path) or any(ch in path for ch in "*?[")


def parquet_files(path) -> list[str]:
    """The Parquet files of a dataset path (a directory, searched recursively, or a glob), sorted, as absolute paths
    (a worker runs in another directory); none is an error."""
    import glob
    from pathlib import Path

    path = os.fspath(path)
    files = sorted(str(p) for p in Path(path).rglob("*.parquet")) if os.path.isdir(path) else sorted(glob.glob(path))
    if not files:
        what = "is a folder, not a data file, and holds no .parquet file" if os.path.isdir(path) else "matches no file"
        raise FileNotFoundError(f"{path}: {what}; give a data file, or a folder or glob of a Parquet dataset's files")
    return [os.path.abspath(f) for f in files]


def on_cluster(X) -> bool:
    """Rows read on a Dask cluster: a Dask collection or the path of a partitioned Parquet dataset."""
    return is_dask_collection(X) or is_parquet_dataset(X)


def read_parquet(path, label_column: str = "y"):
    """A partitioned Parquet dataset (a directory or a glob) as a ``dask.dataframe``, one partition per file piece."""
    import dask.dataframe as dd

    frame = dd.read_parquet(os.fspath(path))
    if label_column not in frame.columns:
        raise ValueError(f"{os.fspath(path)}: no label column {label_column!r} (columns: {list(frame.columns)[:8]}…)")
    return frame


def _block_sums(X, y, empty: Callable[[], Acc]) -> Acc:
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise ValueError(f"features must be numbers, got dtype {X.dtype}")
    X = np.asarray(X, dtype=np.float64)
    if not np.isfinite(np.sum(X)) and not np.all(np.isfinite(X)):  # the sum is cheap; the exact check if it overflows
        raise ValueError("features contain NaN or infinite values")
    return empty().add(X, np.asarray(y))


def _frame_sums(frame, label_column: str, drop: tuple, empty: Callable[[], Acc]) -> Acc:
    features = [c for c in frame.columns if c != label_column and c not in drop]
    return _block_sums(frame[features].to_numpy(dtype=np.float64), frame[label_column].to_numpy(), empty)


def _merge(a, b):
    return a.merge(b)


def _tree_sum(parts: list):
    import dask

    if not parts:
        raise ValueError("the collection has no partitions")
    merge = dask.delayed(_merge, pure=True)
    while len(parts) > 1:
        parts = [merge(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def compute(value, client=None):
    """``value`` (a Dask collection or delayed) computed on ``client``'s cluster, or on the current scheduler."""
    if client is not None:
        return client.compute(value).result()
    return value.compute()


def compute_all(values: tuple, client=None) -> tuple:
    """Several Dask values computed in one go (shared work done once), on ``client``'s cluster or the current scheduler."""
    import dask

    if client is not None:
        return tuple(client.gather(client.compute(list(values))))
    return tuple(dask.compute(*values))


def sums_of_array(X, y, empty: Callable[[], Acc], *, client=None) -> Acc:
    """The exact sums of a ``dask.array`` of rows ``X`` (blocks of whole rows) and labels ``y``, one partial sum per
    block on the workers; ``empty()`` makes an empty accumulator (picklable: it travels to the workers)."""
    import dask
    import dask.array as da

    X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"features must be a 2-D array, got {X.ndim} dimensions")
    X = X.rechunk({1: -1})  # whole rows in every block: the per-row map needs them
    y = da.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"{y.shape[0]} labels for {X.shape[0]} rows")
    y = y.rechunk((X.chunks[0],))
    block = dask.delayed(_block_sums, pure=True)
    parts = [block(xb, yb, empty) for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed().ravel())]
    return compute(_tree_sum(parts), client)


def sums_of_frame(frame, label_column: str, empty: Callable[[], Acc], *, client=None, id_column: str | None = None,
                  rows_per_id: int | None = None) -> Acc:
    """The exact sums of a ``dask.dataframe``, one partial sum per partition on the workers.

    Every column except ``label_column`` (and ``id_column``) is a feature, in the frame's column order. With
    ``rows_per_id`` the first that many rows of each ID are kept first (:func:`first_rows_per_id`).
    """
    import dask

    if label_column not in frame.columns:
        raise ValueError(f"no label column {label_column!r} in the frame")
    if rows_per_id is not None:
        frame = first_rows_per_id(frame, id_column, rows_per_id)
    drop = (id_column,) if id_column else ()
    part = dask.delayed(_frame_sums, pure=True)
    parts = [part(p, label_column, drop, empty) for p in frame.to_delayed()]
    return compute(_tree_sum(parts), client)


def _with_order(part, partition_info=None, offsets=()):
    number = partition_info["number"] if partition_info else 0
    return part.assign(**{_ORDER: np.arange(len(part), dtype=np.int64) + int(offsets[number])})


def _first_k(part, id_column: str, k: int):
    part = part.sort_values([id_column, _ORDER], kind="stable")
    return part[part.groupby(id_column, sort=False).cumcount() < k].drop(columns=[_ORDER])


def first_rows_per_id(frame, id_column: str | None, k: int):
    """Each ID's first ``k`` rows (in the frame's order), as a frame: a shuffle on the ID, then a group-by in
    every partition. A per-patient rule applied to each patient's own rows."""
    if id_column is None or id_column not in frame.columns:
        raise ValueError(f"patient-level bounding needs the ID column; {id_column!r} is not in the frame")
    if int(k) < 1:
        raise ValueError(f"rows per patient must be ≥ 1, got {k}")
    lengths = frame.map_partitions(len).compute()
    offsets = tuple(np.r_[0, np.cumsum(np.asarray(lengths))[:-1]].tolist())
    ordered = frame.map_partitions(_with_order, offsets=offsets, meta={**frame.dtypes.to_dict(), _ORDER: np.int64})
    return ordered.shuffle(on=id_column).map_partitions(_first_k, id_column, int(k))


def class_sums_array(X, y, classes: tuple, row_map: RowMap, *, client=None) -> ClassSums:
    """Exact class sums of a ``dask.array`` of rows ``X`` and labels ``y``, summed on the cluster."""
    return sums_of_array(X, y, functools.partial(ClassSums, tuple(classes), row_map), client=client)


def class_sums_frame(frame, label_column: str, classes: tuple, row_map: RowMap, *, client=None) -> ClassSums:
    """Exact class sums of a ``dask.dataframe`` (e.g. ``dask.dataframe.read_parquet``), one partial sum per partition."""
    return sums_of_frame(frame, label_column, functools.partial(ClassSums, tuple(classes), row_map), client=client)
