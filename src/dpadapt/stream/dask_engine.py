"""The sums of the sound releases on a Dask cluster: per-partition sums on the workers, noise once here.

For a source that does not fit one machine. Each partition (a block of rows of a ``dask.array``,
or a partition of a ``dask.dataframe`` read from Parquet) is mapped and summed on a worker by the
same accumulator as the single-machine path (:class:`dpadapt.stream.sums.ClassSums`, which clips
every row); the partial sums are added pairwise on the workers and only the (K × k + K) totals
reach the coordinating process, where :func:`dpadapt.privacy.mechanisms.release_class_sums` draws
the single Gaussian. No noise is drawn on a worker; no row leaves its worker.

Dask runs on whatever scheduler is current: a ``distributed.Client(address)`` made before the call
(an existing cluster), or pass ``client=``; without either, Dask's local threaded scheduler.
"""

from __future__ import annotations

import numpy as np

from dpadapt.stream.sums import ClassSums, RowMap


def _block_sums(X, y, classes: tuple, row_map: RowMap) -> ClassSums:
    return ClassSums(classes, row_map).add(X, np.asarray(y))


def _frame_sums(frame, label_column: str, classes: tuple, row_map: RowMap) -> ClassSums:
    features = [c for c in frame.columns if c != label_column]
    X = frame[features].to_numpy(dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError("features contain NaN or infinite values")
    return _block_sums(X, frame[label_column].to_numpy(), classes, row_map)


def _merge(a: ClassSums, b: ClassSums) -> ClassSums:
    return a.merge(b)


def _tree_sum(parts: list):
    import dask

    merge = dask.delayed(_merge, pure=True)
    while len(parts) > 1:
        parts = [merge(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i] for i in range(0, len(parts), 2)]
    return parts[0]


def _compute(total, client):
    if client is not None:
        return client.compute(total).result()
    return total.compute()


def class_sums_array(X, y, classes: tuple, row_map: RowMap, *, client=None) -> ClassSums:
    """Exact class sums of a ``dask.array`` of rows ``X`` (blocks of rows) and labels ``y``, summed on the cluster."""
    import dask.array as da

    X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"features must be a 2-D array, got {X.ndim} dimensions")
    X = X.rechunk({1: -1})  # whole rows in every block: the per-row map needs them
    y = da.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"{y.shape[0]} labels for {X.shape[0]} rows")
    y = y.rechunk((X.chunks[0],))
    import dask

    block = dask.delayed(_block_sums, pure=True)
    parts = [block(xb, yb, tuple(classes), row_map) for xb, yb in zip(X.to_delayed().ravel(), y.to_delayed().ravel())]
    return _compute(_tree_sum(parts), client)


def class_sums_frame(frame, label_column: str, classes: tuple, row_map: RowMap, *, client=None) -> ClassSums:
    """Exact class sums of a ``dask.dataframe`` (e.g. ``dask.dataframe.read_parquet``), one partial sum per partition.

    Every column except ``label_column`` is a feature, in the frame's column order.
    """
    import dask

    if label_column not in frame.columns:
        raise ValueError(f"no label column {label_column!r} in the frame")
    part = dask.delayed(_frame_sums, pure=True)
    parts = [part(p, label_column, tuple(classes), row_map) for p in frame.to_delayed()]
    return _compute(_tree_sum(parts), client)
