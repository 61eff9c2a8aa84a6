"""The receiver's rows on a Dask cluster: the map detection, its principal basis and a sample, on the workers.

For a receiver whose own rows do not fit one machine (a ``dask.array``, a ``dask.dataframe`` or a
partitioned Parquet dataset). Everything here reads only the receiver's rows, which are not protected in
this setting: no noise, no guarantee, only the work moved to the workers. What reaches the calling process:

* :func:`is_counts` — one boolean (are all values non-negative whole numbers?), reduced on the workers;
* :func:`principal_basis` — the mean (d) and the top directions (d × top) of the mapped rows, by Dask's
  randomized SVD (:func:`dask.array.linalg.svd_compressed`, Halko, Martinsson & Tropp 2011, with
  :data:`POWER_ITERATIONS` power steps) of the centred rows;
* :func:`spectrum_and_sample` — in one more pass, the variances along those directions (exact: the basis size
  rule reads the rows' own spectrum along the directions used) and at most ``size`` rows in the top few of them
  at public-seeded positions (every row when there are no more).

The per-row map travels to the workers as a picklable callable; every block is checked (numbers, finite)
before it is mapped, as :func:`dpadapt.validation.check_features` checks an in-memory table.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpadapt.stream.dask_engine import compute, compute_all, is_parquet_dataset, parquet_files

#: Power steps of the randomized SVD (each two passes over the rows): the request reads the rows about nine times
#: (the map detection, the mean, 2·(2 + 1) for the SVD, the spectrum); the in-memory basis makes 4 passes
#: (:data:`dpadapt.stream.basis.BASIS_PASSES`) of a block Krylov method, which Dask does not provide.
POWER_ITERATIONS = 2


def feature_rows(X, label_column: str | None = "y"):
    """The receiver's features as a ``dask.array`` of whole rows: an array as given, a frame's (or a Parquet
    dataset's) columns but ``label_column`` (labels are not used; the column may be absent)."""
    import dask.array as da

    if is_parquet_dataset(X):
        X = _parquet_rows(parquet_files(X), label_column)
    elif hasattr(X, "columns"):
        features = [c for c in X.columns if c != label_column]
        X = X[features].to_dask_array(lengths=True)
    X = da.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"features must be a 2-D array, got {X.ndim} dimensions")
    if X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"the receiver needs at least two rows of at least one feature, got {X.shape}")
    return X.rechunk({1: -1})  # whole rows in every block: the per-row map needs them


def _read_features(path: str, features: list) -> np.ndarray:
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=features)
    return np.column_stack([table.column(c).to_numpy() for c in features]) if features else np.empty((table.num_rows, 0))


def _parquet_rows(files: list[str], label_column: str | None):
    """A Parquet dataset's feature columns as a ``dask.array``, one block per file, each read on a worker (the shapes
    from the files' metadata: nothing is read here)."""
    import dask
    import dask.array as da
    import pyarrow.parquet as pq

    features = [c for c in pq.read_schema(files[0]).names if c != label_column]
    read = dask.delayed(_read_features, pure=True)
    blocks = [da.from_delayed(read(f, features), shape=(pq.ParquetFile(f).metadata.num_rows, len(features)),
                              dtype=np.float64) for f in files]
    return da.concatenate(blocks, axis=0)


def _checked(block) -> np.ndarray:
    block = np.asarray(block)
    if block.dtype.kind not in "biuf":
        raise ValueError(f"features must be numbers, got dtype {block.dtype}")
    block = np.asarray(block, dtype=np.float64)
    if not np.all(np.isfinite(block)):
        raise ValueError("the receiver's features contain NaN or infinite values")
    return block


def _block_counts(block) -> np.ndarray:
    block = _checked(block)
    return np.array([[bool(np.all(block >= 0) and np.all(block == np.floor(block)))]])


def is_counts(X, *, client=None) -> bool:
    """Whether every value of the ``dask.array`` ``X`` is a non-negative whole number (one pass, one boolean back)."""
    flags = X.map_blocks(_block_counts, dtype=bool, chunks=((1,) * X.numblocks[0], (1,)))
    return bool(compute(flags.all(), client))


def _mapped_block(block, row_map: Callable) -> np.ndarray:
    return np.asarray(row_map(_checked(block)), dtype=np.float64)


def mapped(X, row_map: Callable, width: int | None = None):
    """The rows of ``X`` through the public per-row ``row_map`` (block by block on the workers; lazy)."""
    width = int(X.shape[1]) if width is None else int(width)
    return X.map_blocks(_mapped_block, row_map, dtype=np.float64, chunks=(X.chunks[0], (width,)))


def principal_basis(M, top: int, *, seed: int, client=None) -> tuple[np.ndarray, np.ndarray]:
    """Mean (d,) and top principal directions (d × top, orthonormal columns) of the rows of the ``dask.array``
    ``M``, in one computation (public ``seed`` for the SVD's test matrix)."""
    import dask.array as da

    mean = M.mean(axis=0)
    _, _, vt = da.linalg.svd_compressed(M - mean, int(top), n_power_iter=POWER_ITERATIONS, seed=int(seed))
    mean, vt = compute_all((mean, vt), client)
    return mean, np.ascontiguousarray(vt.T)


def spectrum_and_sample(M, mean: np.ndarray, components: np.ndarray, row_map: Callable, width: int, *, size: int,
                        seed: int, client=None) -> tuple[np.ndarray, np.ndarray]:
    """In one pass over the rows of ``M``: the variances of its centred rows along ``components`` (exact), and
    its rows through ``row_map`` (``width`` columns) — every row when there are at most ``size``, else ``size``
    rows at positions drawn from the public ``seed`` (uniformly, without replacement), in their order."""
    P = (M - mean) @ components
    Z = mapped(M, row_map, width)
    n = int(M.shape[0])
    if n > size:
        Z = Z[np.sort(np.random.default_rng(seed).choice(n, size=int(size), replace=False))]
    variances, Z = compute_all(((P * P).sum(axis=0), Z), client)
    return variances / n, Z


__all__ = ["feature_rows", "is_counts", "mapped", "principal_basis", "spectrum_and_sample"]
