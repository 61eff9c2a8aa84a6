"""Readers that hand a party's rows over chunk by chunk: a plain iterator of ``(X_chunk, y_chunk)``.

A :class:`ChunkedSource` knows its public shape (rows, features) before any row is read — a
release's plan needs ``n`` first — and yields chunks of at most ``rows`` rows each time it is
iterated (a basis takes several passes). ``X_chunk`` is a float64 ndarray or a CSR matrix (sparse
input stays sparse); ``y_chunk`` an int64 label array (float64 for regression targets) or ``None``.
Memory: one chunk at a time, whatever ``n`` is; no reader holds the file.

* :func:`from_arrays` — in-memory arrays, ``np.memmap`` / ``np.load(..., mmap_mode="r")`` arrays,
  scipy sparse matrices (row slices of a view: nothing is copied up front);
* :func:`open_npy` — a ``.npy`` feature file, memory-mapped (labels from a second ``.npy`` or array);
* :func:`open_npz` — an ``.npz`` archive (``X``, or CSR ``data/indices/indptr/shape``; labels ``y``):
  each member is decompressed as a stream, rows by rows, never loaded whole;
* :func:`open_csv` — a numeric CSV with a header, parsed by pyarrow's streaming CSV reader (its
  rows are counted first by a scan of the bytes);
* :func:`open_parquet` — Parquet row batches read with pyarrow without buffering the file;
* :func:`open_source` — by file suffix; :func:`open_schema_table` — a CSV / Parquet table through its
  declared schema's per-row map (:mod:`dpadapt.tables`), chunk by chunk;
* :func:`materialize` — the whole table, for a method that needs it.

Every problem is a one-line ``ValueError`` (``FileNotFoundError`` for a missing file); nothing is
written and no file is ever unpickled.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dpadapt.parsing import is_number
from dpadapt.validation import issparse

if TYPE_CHECKING:  # SciPy is imported where a sparse matrix is made (a sparse input has imported it already)
    import scipy.sparse as sp

Chunk = tuple["np.ndarray | sp.csr_matrix", "np.ndarray | None"]

#: Bytes of float64 features per chunk by default (the per-row map makes about two copies of one chunk).
DEFAULT_CHUNK_BYTES = 16 * 2**20
#: Bytes of CSV text parsed at a time (pyarrow's default block size).
CSV_BLOCK_BYTES = 1 << 20
#: Bytes of a CSV header line read at most (a longer header is refused in one line).
HEADER_BYTES = 1 << 20
#: The data file types :func:`open_source` reads.
SUPPORTED = (".npz", ".npy", ".csv", ".parquet")


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
    #: the feature columns' names in order (a CSV / Parquet header, an ``.npz``'s ``feature_names``, a
    #: DataFrame's columns); ``None`` for headerless input (read by position only)
    columns: tuple[str, ...] | None = None

    def __iter__(self) -> Iterator[Chunk]:
        return self.chunks()


def _names(names) -> str:
    shown = ", ".join(repr(str(c)) for c in list(names)[:5])
    return shown + (f" … ({len(names) - 5} more)" if len(names) > 5 else "")


def select_columns(source: ChunkedSource, names, what: str = "the model") -> ChunkedSource:
    """``source`` with its feature columns taken by name, in the order of ``names`` (what ``what`` was fitted on).

    A missing or an extra column is refused in one line naming them; a source without column names
    (headerless) is refused, since it can only be read by position. The same names in another order
    are mapped by name (never read by position).
    """
    names = tuple(str(c) for c in names)
    if source.columns is None:
        raise ValueError(f"{source.name}: the file has no column names, but {what} has named columns "
                         f"({_names(names)}); give a CSV / Parquet file with a header, or an .npz with 'feature_names'")
    have = tuple(source.columns)
    if have == names:
        return source
    missing = [c for c in names if c not in have]
    extra = [c for c in have if c not in names]
    if missing or extra:
        parts = ([f"missing column(s) {_names(missing)}"] if missing else []) + (
            [f"extra column(s) {_names(extra)}"] if extra else [])
        hint = (f"; if {extra[0]!r} holds the labels, name it with --label-column" if extra and not missing
                and not source.labelled else "")
        raise ValueError(f"{source.name}: {'; '.join(parts)} ({what} has columns {_names(names)}); "
                         f"give exactly these feature columns, in any order{hint}")
    order = np.array([have.index(c) for c in names])

    def chunks() -> Iterator[Chunk]:
        for X, y in source.chunks():
            yield X[:, order], y

    return dataclasses.replace(source, chunks=chunks, columns=names)


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:160]


def _check_chunk(name: str, X, y, start: int, label_column: str = "y", columns=None):
    if issparse(X):
        import scipy.sparse as sp

        X = sp.csr_matrix(X, dtype=np.float64)
        values = X.data
    else:
        X = np.asarray(X)
        if X.dtype.kind not in "biuf":
            raise ValueError(f"{name}: features must be numbers, got dtype {X.dtype}")
        X = np.asarray(X, dtype=np.float64)
        values = X
    if not np.isfinite(np.sum(values)) and not np.all(np.isfinite(values)):  # the sum is cheap; exact check if it overflows
        _refuse_non_finite(name, X, start, columns)
    return X, None if y is None else _check_labels(name, y, start, label_column)


def _refuse_non_finite(name: str, X, start: int, columns) -> None:
    """The first NaN / infinite feature value, named by its row (from 1), its column and the value."""
    if issparse(X):
        coo = X.tocoo()
        k = int(np.flatnonzero(~np.isfinite(coo.data))[0])
        i, j, value = int(coo.row[k]), int(coo.col[k]), coo.data[k]
    else:
        flat = int(np.flatnonzero(~np.isfinite(X.ravel(order="K")))[0])
        i, j = np.unravel_index(flat, X.shape, order="F" if X.flags.f_contiguous and not X.flags.c_contiguous else "C")
        i, j = int(i), int(j)
        value = X[i, j]
    column = repr(columns[j]) if columns is not None and j < len(columns) else f"{j + 1} (counting from 1)"
    raise ValueError(f"{name}: data row {start + i + 1}, column {column}: value {value} (features must be finite: no "
                     "NaN or infinite values); drop or impute it (with a --schema, declare it a missing-value code)")


def _check_labels(name: str, y, start: int, label_column: str) -> np.ndarray:
    """Class labels as int64; non-whole numbers are regression targets (float64); text is refused."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name}: labels must be one column, got shape {y.shape}")
    if y.dtype.kind in "iub":
        return y.astype(np.int64)
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            row = start + int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(f"{name}: data row {row + 1}, label column {label_column!r}: value {y[row - start]} is not a "
                             "finite number; give a class index (-1 = unlabelled)")
        return y.astype(np.int64) if np.all(y == np.round(y)) else y.astype(np.float64)
    example = next(iter(y.tolist()), "")
    raise ValueError(f"{name}: labels in {label_column!r} are not integers (e.g. {example!r}); "
                     "map them to the public label set 0..K-1 first (-1 = unlabelled)")


def from_arrays(X, y=None, *, rows: int | None = None, name: str = "data", columns=None) -> ChunkedSource:
    """Chunks of an in-memory, memory-mapped or sparse (CSR) feature matrix and its labels; ``columns``: the
    features' names (a DataFrame's by default), ``None`` for headerless rows."""
    if columns is None and hasattr(X, "columns") and hasattr(X, "to_numpy"):  # a DataFrame: its column names travel with the rows
        columns = tuple(str(c) for c in X.columns)
    if issparse(X):
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
            yield _check_chunk(name, X[start:stop], None if y is None else y[start:stop], start, columns=columns)

    return _with_columns(ChunkedSource(n, d, chunks, y is not None, name), None if columns is None else tuple(columns))


def labelled_source(X, y=None, *, name: str = "Xs (source)", classes=None) -> ChunkedSource:
    """The labelled rows a release sums: ``X`` itself when it is a :class:`ChunkedSource` (it carries its
    labels; ``y`` must be ``None``), else arrays ``X`` (dense or CSR; values checked chunk by chunk) with
    labels ``y`` checked against the public label set ``classes`` (when given)."""
    if isinstance(X, ChunkedSource):
        if y is not None:
            raise ValueError("a chunked source carries its labels; pass ys=None")
        if not X.labelled:
            raise ValueError(f"{X.name}: the source's rows need labels")
        return X
    from dpadapt.validation import check_labels

    n = from_arrays(X, None, name=name).n_rows
    return from_arrays(X, check_labels(y, n, "ys (source labels)", classes=classes), name=name)


def _existing(path: str | os.PathLike) -> Path:
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{path}: is a folder, not a data file; give a {', '.join(SUPPORTED)} file")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such data file")
    return path


# ---- .npy ------------------------------------------------------------------------------------------
def open_npy(path: str | os.PathLike, labels=None, *, rows: int | None = None) -> ChunkedSource:
    """A ``.npy`` feature file read chunk by chunk with plain file reads; ``labels``: a ``.npy`` path or an array.

    Plain reads rather than a memory map: a map keeps every page it has touched in the process's
    resident memory (until the kernel needs it back), so a streamed pass over a large file would look
    — and, under memory pressure, act — like holding it; the reads hold one chunk. A Fortran-ordered
    array has no contiguous rows and is memory-mapped instead.
    """
    path = _existing(path)
    where = str(path)
    with open(path, "rb") as fh:
        shape, fortran, dtype = _npy_header(fh, where, kind=".npy")
        offset = fh.tell()
    if dtype.kind not in "biuf":
        raise ValueError(f"{path}: features must be numbers, got dtype {dtype}")
    if len(shape) != 2 or shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{path}: features must be a non-empty 2-D table, got shape {shape}")
    if isinstance(labels, (str, os.PathLike)):
        label_path = _existing(labels)
        try:
            labels = np.load(label_path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise ValueError(f"{label_path}: unreadable .npy label file ({_short(exc)})") from None
    n, d = (int(v) for v in shape)
    if labels is not None:
        labels = np.asarray(labels)
        _check_label_count(where, labels, n)
    if fortran:
        return from_arrays(np.load(path, mmap_mode="r", allow_pickle=False), labels, rows=rows, name=where)
    step = int(rows) if rows else chunk_rows(d)

    def chunks() -> Iterator[Chunk]:
        with open(path, "rb") as fh:
            fh.seek(offset)
            for start in range(0, n, step):
                stop = min(n, start + step)
                X = _read_values(fh, (stop - start) * d, dtype, where).reshape(stop - start, d)
                yield _check_chunk(where, X, None if labels is None else labels[start:stop], start)

    return ChunkedSource(n, d, chunks, labels is not None, where)


# ---- .npz ------------------------------------------------------------------------------------------
_CSR = ("data", "indices", "indptr", "shape")


class _Member:
    """One ``.npy`` member of an ``.npz`` archive, read as a stream: its header, then values in order."""

    def __init__(self, archive: zipfile.ZipFile, member: str, where: str):
        self.archive, self.member, self.where = archive, member, where
        with archive.open(member) as fh:
            self.shape, self.fortran, self.dtype = _npy_header(fh, where)

    def open(self):
        fh = self.archive.open(self.member)
        _npy_header(fh, self.where)
        return fh

    def read_all(self) -> np.ndarray:
        with self.open() as fh:
            return _read_values(fh, int(np.prod(self.shape)), self.dtype, self.where).reshape(self.shape, order="F" if self.fortran else "C")


def _npy_header(fh, where: str, kind: str = ".npz data"):
    from numpy.lib import format as npy

    try:
        version = npy.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(fh)
        else:  # format 3.0 (utf-8 field names): numpy has no public reader for its header
            shape, fortran, dtype = npy._read_array_header(fh, version)
    except (ValueError, OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        raise ValueError(f"{where}: unreadable or truncated {kind} file ({_short(exc)})") from None
    if dtype.hasobject:
        raise ValueError(f"{where}: holds Python objects (a pickle); refused — store numbers only")
    return shape, fortran, dtype


def _read_values(fh, count: int, dtype: np.dtype, where: str) -> np.ndarray:
    """The next ``count`` values of ``dtype`` from a file or a zip member (native byte order)."""
    out = np.empty(count, dtype=dtype)
    view = memoryview(out).cast("B")
    try:
        got = 0
        while got < len(view):
            step = fh.readinto(view[got:])
            if not step:
                break
            got += step
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        raise ValueError(f"{where}: unreadable or truncated file ({_short(exc)})") from None
    if got != len(view):
        raise ValueError(f"{where}: unreadable or truncated file (the array ends early)")
    return out if dtype.isnative else out.astype(dtype.newbyteorder("="))


def open_npz(path: str | os.PathLike, label_column: str = "y", *, rows: int | None = None) -> ChunkedSource:
    """An ``.npz`` archive: ``X`` (dense) or CSR ``data/indices/indptr/shape``, labels ``label_column`` (or ``y``).

    The feature members are decompressed as streams, one chunk of rows at a time; the labels (one
    number a row) and a CSR ``indptr`` are read whole. A Fortran-ordered ``X`` has no contiguous rows
    and is read whole. Never unpickles (an object member is refused).
    """
    path = _existing(path)
    where = str(path)
    if path.stat().st_size == 0:
        raise ValueError(f"{path}: the data file is empty")
    try:
        archive = zipfile.ZipFile(path)
        names = {n[:-4]: n for n in archive.namelist() if n.endswith(".npy")}
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        if not zipfile.is_zipfile(path):
            raise ValueError(f"{path}: not an .npz archive (nothing was loaded)") from None
        raise ValueError(f"{path}: unreadable or truncated .npz data file ({_short(exc)})") from None
    if not names:
        raise ValueError(f"{path}: the .npz data file is empty (no arrays)")
    label_name = label_column if label_column in names else ("y" if "y" in names else None)
    y = None
    if label_name is not None:
        y = _Member(archive, names[label_name], where).read_all()
    columns = _npz_feature_names(archive, names, where)
    if set(_CSR) <= set(names):
        return _with_columns(_npz_csr(archive, names, y, where, rows), columns)
    if "X" not in names:
        raise ValueError(f"{path}: an .npz data file needs an array 'X' (or CSR arrays data/indices/indptr/shape)")
    member = _Member(archive, names["X"], where)
    if member.dtype.kind not in "biuf":
        raise ValueError(f"{path}: features must be numbers, got dtype {member.dtype}")
    if len(member.shape) != 2:
        raise ValueError(f"{path}: features must be a 2-D table (rows × features), got shape {member.shape}")
    n, d = (int(v) for v in member.shape)
    if n == 0 or d == 0:
        raise ValueError(f"{path}: the data file is empty ({n} rows × {d} features)")
    _check_label_count(where, y, n)
    if member.fortran:  # no contiguous rows to stream
        return from_arrays(member.read_all(), y, rows=rows, name=where, columns=columns)
    step = int(rows) if rows else chunk_rows(d)

    def chunks() -> Iterator[Chunk]:
        with member.open() as fh:
            for start in range(0, n, step):
                stop = min(n, start + step)
                X = _read_values(fh, (stop - start) * d, member.dtype, where).reshape(stop - start, d)
                yield _check_chunk(where, X, None if y is None else y[start:stop], start, label_column, columns)

    return _with_columns(ChunkedSource(n, d, chunks, y is not None, where), columns)


#: The ``.npz`` member that names the feature columns (one string a column; written by :func:`dpadapt.io.save_table`).
FEATURE_NAMES = "feature_names"


def _npz_feature_names(archive, names: dict, where: str) -> tuple[str, ...] | None:
    if FEATURE_NAMES not in names:
        return None
    member = _Member(archive, names[FEATURE_NAMES], where)
    if member.dtype.kind not in "US" or len(member.shape) != 1:
        raise ValueError(f"{where}: '{FEATURE_NAMES}' must be one text name per feature column, got dtype "
                         f"{member.dtype} and shape {member.shape}")
    values = member.read_all()
    return tuple(v.decode() if isinstance(v, bytes) else str(v) for v in values.tolist())


def _with_columns(source: ChunkedSource, columns: tuple[str, ...] | None) -> ChunkedSource:
    """``source`` with its feature names, checked: one distinct name per column."""
    if columns is None:
        return source
    if len(columns) != source.n_features:
        raise ValueError(f"{source.name}: '{FEATURE_NAMES}' has {len(columns)} names for {source.n_features} "
                         "feature columns; give one name per column")
    if len(set(columns)) != len(columns):
        seen: set = set()
        dup = next(c for c in columns if c in seen or seen.add(c))
        raise ValueError(f"{source.name}: '{FEATURE_NAMES}' names column {dup!r} twice; give each column its own name")
    return dataclasses.replace(source, columns=columns)


def _check_label_count(where: str, y, n: int) -> None:
    if y is not None and (y.ndim != 1 or y.shape[0] != n):
        raise ValueError(f"{where}: {y.shape[0] if y.ndim else 0} labels for {n} rows")


def _npz_csr(archive, names: dict, y, where: str, rows: int | None) -> ChunkedSource:
    shape = tuple(int(v) for v in _Member(archive, names["shape"], where).read_all())
    if len(shape) != 2 or shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{where}: the data file is empty or not 2-D (CSR shape {shape})")
    n, d = shape
    indptr = _Member(archive, names["indptr"], where).read_all().astype(np.int64)
    data_m, index_m = _Member(archive, names["data"], where), _Member(archive, names["indices"], where)
    nnz = int(data_m.shape[0]) if data_m.shape else 0
    if indptr.shape != (n + 1,) or indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != nnz \
            or index_m.shape != data_m.shape:
        raise ValueError(f"{where}: inconsistent CSR arrays (indptr, data, indices)")
    if data_m.dtype.kind not in "biuf" or index_m.dtype.kind not in "iu":
        raise ValueError(f"{where}: CSR data must be numbers and indices integers")
    _check_label_count(where, y, n)
    step = int(rows) if rows else max(1, chunk_rows(d))

    def chunks() -> Iterator[Chunk]:
        import scipy.sparse as sp

        with data_m.open() as fd, index_m.open() as fi:
            for start in range(0, n, step):
                stop = min(n, start + step)
                count = int(indptr[stop] - indptr[start])
                data = _read_values(fd, count, data_m.dtype, where)
                idx = _read_values(fi, count, index_m.dtype, where)
                if count and (idx.min() < 0 or idx.max() >= d):
                    raise ValueError(f"{where}: CSR column indices outside 0..{d - 1}")
                X = sp.csr_matrix((data, idx, indptr[start:stop + 1] - indptr[start]), shape=(stop - start, d))
                yield _check_chunk(where, X, None if y is None else y[start:stop], start)

    return ChunkedSource(n, d, chunks, y is not None, where)


# ---- CSV -------------------------------------------------------------------------------------------
def count_lines(path: Path, block: int = DEFAULT_CHUNK_BYTES) -> int:
    """Lines in a text file (a last line without its newline counts), by a scan of the bytes."""
    lines, last = 0, b"\n"
    with open(path, "rb") as fh:
        while chunk := fh.read(block):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return lines + (last != b"\n")


def open_csv(path: str | os.PathLike, label_column: str = "y", *, rows: int | None = None,
             delimiter: str = ",") -> ChunkedSource:
    """A numeric CSV with a header line: every column except ``label_column`` is a feature.

    The rows are counted by a scan of the bytes (the plan needs ``n`` before any row is parsed);
    pyarrow's streaming reader then parses one block of text at a time (at most
    :data:`CSV_BLOCK_BYTES`, fewer when ``rows`` asks for smaller chunks).
    A blank line or a line with another number of cells is an error naming the line, as is a
    row count that differs from the one counted.
    """
    path = _existing(path)
    with open(path, "rb") as fh:
        first = fh.readline(HEADER_BYTES)
        if len(first) == HEADER_BYTES and not first.endswith(b"\n") and fh.read(1):
            raise ValueError(f"{path}: line 1 (the header) is longer than {HEADER_BYTES >> 20} MiB ({first.count(b',') + 1} "
                             "columns or more); store a table this wide as .npz or .parquet")
    try:
        header = first.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a readable CSV file (line 1 is not UTF-8 text)") from None
    names = [h.strip() for h in next(csv.reader([header], delimiter=delimiter))] if header.strip() else []
    if not names:
        raise ValueError(f"{path}: the data file is empty")
    n = count_lines(path) - 1
    if n <= 0:
        raise ValueError(f"{path}: the data file is empty")
    features = [c for c in names if c != label_column]
    labelled = label_column in names
    if not features:
        raise ValueError(f"{path}: no feature columns")
    if len(set(names)) != len(names):
        seen: set = set()
        dup = next(c for c in names if c in seen or seen.add(c))
        raise ValueError(f"{path}: the header names column {dup!r} {names.count(dup)} times; give each column its own name")
    d = len(features)
    rows = int(rows) if rows else None
    # a block of text holds about ``rows`` rows, at most CSV_BLOCK_BYTES (pyarrow's parse of a larger
    # block takes far more memory and time: 16 MB blocks of a 64-column file peak at ~0.6 GB, 1 MB at ~0.1 GB)
    per_row = max(1.0, path.stat().st_size / (n + 1))
    block = int(min(max(per_row * (rows or chunk_rows(d)) * 1.1, 1 << 16), CSV_BLOCK_BYTES))

    def chunks() -> Iterator[Chunk]:
        import pyarrow as pa
        import pyarrow.csv as pacsv

        from dpadapt.tables.readers import csv_batches

        problems: list[str] = []

        def on_invalid(row) -> str:
            number = row.number if row.number is not None else _line_of(path, row.text, delimiter, len(names))
            line = f"line {number}" if number is not None else "a line"
            problems.append(f"{path}: header has {row.expected_columns} columns but {line} has "
                            f"{row.actual_columns}" + (" (a blank line)" if not row.text.strip() else ""))
            return "error"

        def open_reader():
            return pacsv.open_csv(
                path,
                read_options=pacsv.ReadOptions(column_names=names, skip_rows=1, block_size=block),
                parse_options=pacsv.ParseOptions(delimiter=delimiter, ignore_empty_lines=False,
                                                 invalid_row_handler=on_invalid),
                convert_options=pacsv.ConvertOptions(
                    column_types={**{c: pa.float64() for c in features}, **({label_column: pa.string()} if labelled else {})}),
            )

        start = 0
        for batch in csv_batches(open_reader, lambda exc: ValueError(problems[0] if problems else _csv_error(path, names, exc))):
            if any(batch.column(name).null_count for name in features):
                _refuse_empty_cells(path, batch, features, start)
            X = _columns(batch, features)
            y = _csv_labels(path, batch.column(label_column), label_column, start) if labelled else None
            for a in range(0, batch.num_rows, rows or batch.num_rows or 1):
                b = min(batch.num_rows, a + (rows or batch.num_rows))
                yield _check_chunk(str(path), X[a:b], None if y is None else y[a:b], start + a, label_column, features)
            start += batch.num_rows
        if start != n:
            raise ValueError(f"{path}: {start} data rows were read but {n} lines were counted; "
                             "the file changed while it was read, or has a line break inside a cell")

    return ChunkedSource(n, d, chunks, labelled, str(path), tuple(features))


def _line_of(path: Path, text: str, delimiter: str, width: int) -> int | None:
    """The number (from 1) of the first line whose cells are not ``width`` (an error path: reads the file again)."""
    with open(path, encoding="utf-8-sig", errors="replace", newline="") as fh:
        for number, cells in enumerate(csv.reader(fh, delimiter=delimiter), start=1):
            if len(cells) != width:
                return number
    return None


def _columns(batch, names: list[str]) -> np.ndarray:
    """The float64 feature columns of an Arrow batch as an (n, d) array, Fortran-ordered: each column is
    one contiguous copy (filling a C-ordered array column by column is a strided write, ~10x slower)."""
    out = np.empty((len(names), batch.num_rows))
    for j, name in enumerate(names):
        out[j] = batch.column(name).to_numpy(zero_copy_only=False)
    return out.T


def _refuse_empty_cells(path: Path, batch, features: list[str], start: int) -> None:
    """A blank line, or an empty / missing-value feature cell, named by its line (the header is line 1)."""
    import pyarrow.compute as pc

    empty = None
    for name in features:
        missing = pc.is_null(batch.column(name))
        empty = missing if empty is None else pc.and_(empty, missing)
    blank = np.flatnonzero(np.asarray(empty.to_numpy(zero_copy_only=False), dtype=bool))
    if blank.size:
        raise ValueError(f"{path}: line {start + int(blank[0]) + 2}: blank line")
    for name in features:
        gaps = np.flatnonzero(np.asarray(pc.is_null(batch.column(name)).to_numpy(zero_copy_only=False), dtype=bool))
        if gaps.size:
            raise ValueError(f"{path}: line {start + int(gaps[0]) + 2}, column {name!r}: empty or missing value "
                             "(features must be numbers; declare missing codes in a --schema)")


def _csv_error(path: Path, names: list[str], exc: Exception) -> str:
    text = _short(exc)
    column = re.search(r"column #(\d+)", text)
    if column and "conversion error" in text:
        value = re.search(r"invalid value '([^']*)'", text)
        name = names[int(column.group(1))] if int(column.group(1)) < len(names) else column.group(1)
        return f"{path}: column {name!r} is not numeric" + (f" (e.g. {value.group(1)!r})" if value else "")
    return f"{path}: not a readable CSV file ({text})"


def _csv_labels(path: Path, column, label_column: str, start: int) -> np.ndarray:
    """A text label column as numbers (pyarrow's cast); the first non-number is named in the error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return np.asarray(pc.cast(pc.utf8_trim_whitespace(column), pa.float64()).to_numpy(zero_copy_only=False))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        bad = next((v for v in column.to_pylist() if not is_number(v)), "")
        raise ValueError(f"{path}: labels in {label_column!r} are not integers (e.g. {bad!r}); "
                         "map them to the public label set 0..K-1 first (-1 = unlabelled)") from None


# ---- Parquet ---------------------------------------------------------------------------------------
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
    """A Parquet file read in row batches with pyarrow: every numeric column except ``label_column`` is a feature.

    The file is opened with ``pre_buffer=False`` and a bounded read buffer, so only the pages of the
    batch being decoded are in memory, not the file or a whole row group.
    """
    import pyarrow.parquet as pq

    path = _existing(path)
    try:
        pf = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
        names, labelled = _parquet_columns(pf, label_column)
    except ValueError as exc:
        raise ValueError(f"{path}: {' '.join(str(exc).split())}") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several error types for a bad file
        raise ValueError(f"{path}: unreadable Parquet file ({_short(exc)})") from None
    n, d = pf.metadata.num_rows, len(names)
    if n == 0:
        raise ValueError(f"{path}: the data file is empty")
    step = int(rows) if rows else chunk_rows(d)

    def chunks() -> Iterator[Chunk]:
        start = 0
        reader = pq.ParquetFile(path, pre_buffer=False, buffer_size=1 << 20)
        for batch in reader.iter_batches(batch_size=step, columns=names + ([label_column] if labelled else []),
                                         use_threads=False):
            X = _columns(batch, names)
            y = batch.column(label_column).to_numpy(zero_copy_only=False) if labelled else None
            yield _check_chunk(str(path), X, y, start, label_column, names)
            start += batch.num_rows

    return ChunkedSource(n, d, chunks, labelled, str(path), tuple(names))


# ---- by suffix; the whole table --------------------------------------------------------------------
def open_source(path: str | os.PathLike, label_column: str = "y", *, labels=None, rows: int | None = None) -> ChunkedSource:
    """A chunked reader chosen by suffix: ``.npy`` (memory map; ``labels``: a ``.npy`` of labels),
    ``.npz`` (member streams), ``.csv`` (pyarrow's streaming reader), ``.parquet`` (row batches)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED:
        _existing(path)  # a folder or a missing file is named as such, not as a file type
        raise ValueError(f"{path}: unsupported data file type {suffix!r}; use one of {', '.join(SUPPORTED)}")
    if labels is not None and suffix != ".npy":
        raise ValueError(f"{path}: separate labels are for .npy data; {suffix} files carry a label column")
    if suffix == ".npy":
        return open_npy(path, labels, rows=rows)
    if suffix == ".npz":
        return open_npz(path, label_column, rows=rows)
    if suffix == ".csv":
        return open_csv(path, label_column, rows=rows)
    return open_parquet(path, label_column, rows=rows)


def open_schema_table(path: str | os.PathLike, schema, *, rows: int | None = None,
                      on_complete: Callable | None = None) -> ChunkedSource:
    """A CSV / Parquet table read through ``schema`` (:func:`dpadapt.tables.iter_chunks`): mapped features,
    label indices into the public label set. Rows are counted up front (Parquet metadata, or a scan of
    the CSV's bytes: every line is a row, a blank one an error), and a count the reader does not
    confirm is an error. The ID column is not part of the chunks (:func:`dpadapt.tables.iter_chunks` has it).
    ``on_complete(counts)`` is called at the end of every pass that read every row, with what the map
    imputed and clipped in that pass (:class:`dpadapt.tables.rowmap.MapCounts`: additive over chunks).
    """
    from dpadapt.tables import iter_chunks
    from dpadapt.tables.readers import CSV_SUFFIXES, DEFAULT_CHUNK_ROWS, _detect_delimiter, _first_line

    path = _existing(path)
    suffix = path.suffix.lower()
    label = schema.label.column if schema.label is not None else None
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several error types for a bad file
            raise ValueError(f"{path}: not a readable Parquet file ({_short(exc)})") from None
        n, labelled = pf.metadata.num_rows, label in pf.schema_arrow.names
    elif suffix in CSV_SUFFIXES:
        import csv

        n = count_lines(path) - (1 if schema.header else 0)
        first = _first_line(path)
        cells = next(csv.reader([first], delimiter=schema.delimiter or _detect_delimiter(first))) if first.strip() else []
        labelled = label is not None and (label in [c.strip() for c in cells] if schema.header else len(cells) == len(schema.names))
    else:
        raise ValueError(f"{path}: unsupported table type {suffix!r}; use .csv/.tsv/.txt/.data or .parquet")
    if n <= 0:
        raise ValueError(f"{path}: no data rows")
    step = int(rows) if rows else min(DEFAULT_CHUNK_ROWS, chunk_rows(schema.n_features))

    def chunks() -> Iterator[Chunk]:
        from dpadapt.tables.rowmap import MapCounts

        read, counts = 0, MapCounts()
        for X, y, _ in iter_chunks(path, schema, chunk_rows=step, counts=counts):
            read += X.shape[0]
            yield X, y
        if read != n:
            raise ValueError(f"{path}: {read} data rows were read but {n} lines were counted")
        if on_complete is not None:
            on_complete(counts)

    return ChunkedSource(n, schema.n_features, chunks, labelled, str(path))


def materialize(source: ChunkedSource) -> tuple[np.ndarray | sp.csr_matrix, np.ndarray | None]:
    """All rows of ``source`` in memory: ``(X, y)``, dense X filled in place (one copy, plus one chunk)."""
    X, parts, ys, filled = None, [], [], 0
    for chunk, y in source:
        if issparse(chunk):
            parts.append(chunk)
        else:
            if X is None:
                X = np.empty((source.n_rows, source.n_features))
            X[filled:filled + chunk.shape[0]] = chunk
        filled += chunk.shape[0]
        if y is not None:
            ys.append(y)
    if filled != source.n_rows:
        raise ValueError(f"{source.name}: {filled} rows were read, {source.n_rows} expected")
    if parts:
        import scipy.sparse as sp

        X = sp.vstack(parts, format="csr")
    return X, (np.concatenate(ys) if source.labelled else None)
