"""Sources larger than memory: chunked readers, exact sums per chunk, one noise draw at the end.

* :mod:`dpadapt.stream.readers` — ``(X_chunk, y_chunk)`` iterators over arrays, memory maps, sparse
  matrices, ``.npz`` members, CSV and Parquet files, and tables read through a declared schema;
* :mod:`dpadapt.stream.sums` — accumulators of the sound releases' exact sums (class statistics,
  moments, class moments, sliced histograms), released by ONE Gaussian from :mod:`dpadapt.privacy.mechanisms`;
* :mod:`dpadapt.stream.dask_engine` — the same sums computed per partition on a Dask cluster.

The names below are imported on first use (reading a file does not import the privacy core).
"""

from __future__ import annotations

from dpadapt import lazy

_READERS = ("ChunkedSource", "chunk_rows", "from_arrays", "materialize", "open_csv", "open_npy", "open_npz",
            "open_parquet", "open_schema_table", "open_source", "select_columns")
_SUMS = ("ClassMomentSums", "ClassSums", "MomentSums", "RowMap", "SlicedCounts", "accumulate", "label_indices")

__all__ = sorted(_READERS + _SUMS)

__getattr__, __dir__ = lazy.attach(__name__, {**{name: "dpadapt.stream.readers" for name in _READERS},
                                              **{name: "dpadapt.stream.sums" for name in _SUMS}})
