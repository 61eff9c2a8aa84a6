"""Sources larger than memory: chunked readers, exact sums per chunk, one noise draw at the end (issue 20).

* :mod:`dpadapt.stream.readers` — ``(X_chunk, y_chunk)`` iterators over arrays, memory maps, sparse
  matrices and Parquet row batches;
* :mod:`dpadapt.stream.sums` — accumulators of the sound releases' exact sums (class statistics,
  moments, class moments, sliced histograms), released by ONE Gaussian from :mod:`dpadapt.privacy.mechanisms`;
* :mod:`dpadapt.stream.dask_engine` — the same sums computed per partition on a Dask cluster.
"""

from dpadapt.stream.readers import ChunkedSource, chunk_rows, from_arrays, open_npy, open_parquet, open_source
from dpadapt.stream.sums import ClassMomentSums, ClassSums, MomentSums, RowMap, SlicedCounts, accumulate, label_indices

__all__ = ["ChunkedSource", "ClassMomentSums", "ClassSums", "MomentSums", "RowMap", "SlicedCounts", "accumulate",
           "chunk_rows", "from_arrays", "label_indices", "open_npy", "open_parquet", "open_source"]
