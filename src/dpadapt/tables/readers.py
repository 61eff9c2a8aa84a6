"""Readers that feed a table through its schema's per-row map: CSV, Parquet, pandas / polars / pyarrow.

``iter_chunks(source, schema)`` yields ``(X, y_idx, ids)`` one chunk at a time (float64 features,
int64 indices into the public label set or ``None``, string IDs or ``None``) so a streaming release
can consume a file larger than memory; ``read_table`` concatenates the chunks. Nothing here computes
a statistic of the rows: the map is the schema's, fixed before any row is read.

Every problem is a one-line :class:`~dpadapt.tables.rowmap.TableError` naming the file (or
"DataFrame"), the line / row and the column.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from dpadapt.parsing import is_number

from .rowmap import MapCounts, RowMap, TableError
from .schema import DELIMITERS, Schema

Chunk = tuple[np.ndarray, np.ndarray | None, np.ndarray | None]
CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".data")
DEFAULT_CHUNK_BYTES = 1 << 20  # CSV text parsed at a time: larger pyarrow blocks cost far more memory
DEFAULT_CHUNK_ROWS = 65536


@dataclasses.dataclass
class MappedTable:
    """A whole table after the schema's map: features, label indices, IDs, and the public names.

    ``schema`` is the schema it was read through (``fingerprint`` its public fingerprint, which releases
    and models carry); ``labels`` the class names of ``y``; ``counts`` what the map imputed and clipped
    per column (computed from these rows: for the reader's own report, never for a release).
    """

    X: np.ndarray
    y: np.ndarray | None
    ids: np.ndarray | None
    feature_names: list[str]
    classes: tuple | None
    schema: Schema | None = None
    counts: MapCounts | None = None

    @property
    def fingerprint(self) -> dict | None:
        return None if self.schema is None else self.schema.fingerprint()

    @property
    def labels(self) -> np.ndarray | None:
        """The class names of the rows (``classes[y]``), or ``None`` for an unlabelled table."""
        if self.y is None or self.classes is None:
            return None
        return np.asarray(self.classes, dtype=object)[self.y]


def read_table(source: Any, schema: Schema, progress: Callable[[int], None] | None = None) -> MappedTable:
    """Read a whole table (path to CSV / Parquet, pandas / polars DataFrame, pyarrow Table) through ``schema``."""
    Xs, ys, ids = [], [], []
    counts = MapCounts()
    for X, y, i in iter_chunks(source, schema, progress=progress, counts=counts):
        Xs.append(X)
        ys.append(y)
        ids.append(i)
    if not Xs or sum(len(x) for x in Xs) == 0:
        raise TableError(f"{_name(source)}: no data rows")
    return MappedTable(
        X=np.concatenate(Xs),
        y=None if ys[0] is None else np.concatenate(ys),
        ids=None if ids[0] is None else np.concatenate(ids),
        feature_names=schema.feature_names,
        classes=schema.classes,
        schema=schema,
        counts=counts,
    )


def iter_chunks(
    source: Any,
    schema: Schema,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    progress: Callable[[int], None] | None = None,
    counts: MapCounts | None = None,
) -> Iterator[Chunk]:
    """Yield ``(X, y_idx, ids)`` per chunk of ``source`` mapped by ``schema``; ``progress(n)`` after each chunk.

    ``source``: a path (``.csv`` / ``.tsv`` / ``.txt`` / ``.data`` read as delimited text,
    ``.parquet`` by row groups), a pandas or polars DataFrame, or a pyarrow Table. The label and ID
    columns are optional in the data (unlabelled target rows); every declared feature column is required.
    ``counts`` (a :class:`~dpadapt.tables.rowmap.MapCounts`), when given, adds up what the map imputed
    and clipped per column, chunk by chunk.
    """
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        if not path.is_file():
            raise TableError(f"{path}: no such data file")
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            chunks = _parquet_chunks(path, schema, chunk_rows)
        elif suffix in CSV_SUFFIXES:
            chunks = _csv_chunks(path, schema)
        else:
            raise TableError(f"{path}: unsupported table type {suffix!r}; use .csv/.tsv/.txt/.data or .parquet")
    else:
        chunks = _frame_chunks(source, schema, chunk_rows)
    rowmap = RowMap(schema)
    for cells, n, locate in chunks:
        mapped = rowmap.transform(cells, n, locate, counts)
        if progress is not None:
            progress(n)
        yield mapped


# ---- column resolution (shared) --------------------------------------------------------------------
def _resolve(schema: Schema, present: list[str], where: str) -> list[str]:
    """The columns to read, after checking ``present`` (the data's columns) against the schema."""
    needed = [c.name for c in schema.columns]
    numeric = sum(is_number(p) for p in present)
    if present and numeric >= max(1, len(present) // 2) and any(n not in present for n in needed):
        raise TableError(f"{where}: the first line looks like data, not a header: set header = false and list "
                         "table.names in the schema")
    seen: set[str] = set()
    for name in present:
        if name in seen:
            raise TableError(f"{where}: duplicate column name {name!r}")
        seen.add(name)
    absent = [n for n in needed if n not in seen]
    if absent:
        hint = ""
        if len(present) == 1 and any(d in present[0] for d in DELIMITERS):
            hint = " (the header was read as one column: declare table.delimiter)"
        raise TableError(f"{where}: column {absent[0]!r} of the schema is not in the data (columns: "
                         f"{', '.join(repr(p) for p in present[:8])}{', …' if len(present) > 8 else ''}){hint}")
    known = set(schema.used_columns()) | set(schema.ignore)
    unknown = [p for p in present if p not in known]
    if unknown:
        raise TableError(f"{where}: column {unknown[0]!r} is not in the schema; declare it or list it in table.ignore")
    return [n for n in schema.used_columns() if n in seen]


# ---- CSV -------------------------------------------------------------------------------------------
def _csv_chunks(path: Path, schema: Schema):
    import pyarrow.csv as pacsv

    first = _first_line(path)
    delimiter = schema.delimiter or _detect_delimiter(first)
    first_cells = header_cells(first, delimiter, path)
    where = str(path)
    if schema.header:
        names = [c.strip() for c in first_cells]
        if not names or not any(names):
            raise TableError(f"{path}: line 1: empty header line")
        if schema.names is not None and tuple(names) != schema.names:
            raise TableError(f"{path}: line 1: the header does not match table.names in the schema")
        skip = 1
    else:
        names = list(schema.names)
        skip = 0
        if len(first_cells) != len(names):
            without = [n for n in names if schema.label is None or n != schema.label.column]
            if len(first_cells) == len(without):
                names = without  # unlabelled copy: the label column is left out
            else:
                raise TableError(f"{path}: line 1: {len(first_cells)} columns, but table.names lists {len(names)}"
                                 + ("" if schema.delimiter else f" (detected delimiter {delimiter!r}; declare table.delimiter)"))
    if not first.strip():
        raise TableError(f"{path}: the data file is empty")
    use = _resolve(schema, names, where)
    problems: list[str] = []

    def on_invalid(row) -> str:
        problems.append(f"{path}: line {row.number}: {row.actual_columns} columns, expected {row.expected_columns}")
        return "error"

    def open_reader():
        return pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=skip, use_threads=False,
                                           block_size=DEFAULT_CHUNK_BYTES, encoding="utf8"),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, ignore_empty_lines=False,
                                             newlines_in_values=False, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(column_types={n: pa.string() for n in names},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                 include_columns=use),
        )

    line = skip
    for batch in csv_batches(open_reader, lambda exc: TableError(problems[0] if problems else _csv_problem(path, line, exc))):
        n = batch.num_rows
        if n == 0:
            continue
        cells = {name: batch.column(name) for name in use}
        _check_blank_lines(cells, n, path, line)
        base = line

        def locate(i: int | None, base: int = base) -> str:
            return where if i is None else f"{where}: line {base + i + 1}"

        yield cells, n, locate
        line += n
    if line == skip:
        raise TableError(f"{path}: no data rows")


def csv_batches(open_reader: Callable[[], Any], failure: Callable[[Exception], Exception]) -> Iterator[Any]:
    """The record batches of the pyarrow streaming CSV reader ``open_reader()`` returns; an error of pyarrow's
    while opening or reading (a parse error, a ragged row, an unreadable file) is raised as ``failure(exc)``."""
    try:
        reader = open_reader()
    except (pa.ArrowInvalid, OSError) as exc:
        raise failure(exc) from None
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except (pa.ArrowInvalid, OSError) as exc:
            raise failure(exc) from None
        yield batch


#: The longest first line (a header) read, in bytes.
MAX_HEADER_BYTES = 1 << 20


def _first_line(path: Path) -> str:
    with open(path, "rb") as fh:  # bytes: decoding only the first line (a later bad byte is that line's error)
        raw = fh.readline(MAX_HEADER_BYTES + 1)
    if len(raw) > MAX_HEADER_BYTES:
        raise TableError(f"{path}: line 1 is longer than {MAX_HEADER_BYTES >> 20} MB: not a header or a data row of a "
                         "table (is this the right file, with line breaks?)")
    try:
        return raw.decode("utf-8-sig").rstrip("\r\n")
    except UnicodeDecodeError:
        raise TableError(f"{path}: line 1: not UTF-8 text") from None


def header_cells(line: str, delimiter: str, path: Path) -> list[str]:
    """The cells of the first line (one-line error naming file and line for a line the csv module refuses)."""
    if not line.strip():
        return []
    try:
        return next(csv.reader([line], delimiter=delimiter))
    except csv.Error as exc:
        raise TableError(f"{path}: line 1: not a readable CSV line ({exc})") from None


def _detect_delimiter(line: str) -> str:
    """The candidate delimiter occurring most often outside quotes in the first line (',' if none)."""
    counts = dict.fromkeys(DELIMITERS, 0)
    quoted = False
    for ch in line:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in counts:
            counts[ch] += 1
    best = max(DELIMITERS, key=lambda d: counts[d])
    return best if counts[best] else ","


def _check_blank_lines(cells: dict, n: int, path: Path, line: int) -> None:
    import pyarrow.compute as pc

    blank = None
    for arr in cells.values():
        empty = pc.equal(pc.utf8_length(arr), 0)
        blank = empty if blank is None else pc.and_(blank, empty)
    if blank is not None and len(cells) > 1 and pc.any(blank).as_py():
        i = int(np.flatnonzero(blank.to_numpy(zero_copy_only=False))[0])
        raise TableError(f"{path}: line {line + i + 1}: blank line")


def _csv_problem(path: Path, line: int, exc: Exception) -> str:
    """One line for a CSV block the reader refuses, naming the file and the line after which it failed."""
    if "straddl" in str(exc):  # a line longer than a read block
        return (f"{path}: line {line + 1} or shortly after is longer than {DEFAULT_CHUNK_BYTES >> 20} MB: an unclosed "
                "quote, or not a table with line breaks (check that line)")
    return f"{path}: after line {line}: not readable CSV ({_short(exc)})"


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:160]


# ---- Parquet ---------------------------------------------------------------------------------------
def _parquet_chunks(path: Path, schema: Schema, chunk_rows: int):
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path, pre_buffer=False)  # only the pages being decoded are in memory
    except (pa.ArrowInvalid, OSError) as exc:
        raise TableError(f"{path}: not a readable Parquet file ({_short(exc)})") from None
    use = _resolve(schema, list(pf.schema_arrow.names), str(path))
    row = 0
    try:
        for batch in pf.iter_batches(batch_size=chunk_rows, columns=use, use_threads=False):
            n = batch.num_rows
            base = row

            def locate(i: int | None, base: int = base) -> str:
                return str(path) if i is None else f"{path}: row {base + i + 1}"

            yield {name: batch.column(name) for name in use}, n, locate
            row += n
    except (pa.ArrowInvalid, OSError) as exc:
        raise TableError(f"{path}: after row {row}: not readable Parquet ({_short(exc)})") from None


# ---- DataFrames ------------------------------------------------------------------------------------
def _frame_chunks(frame: Any, schema: Schema, chunk_rows: int):
    table = _to_arrow(frame)
    use = _resolve(schema, [str(n) for n in table.column_names], "DataFrame")
    for start in range(0, max(table.num_rows, 1), chunk_rows):
        part = table.slice(start, chunk_rows)
        if part.num_rows == 0:
            break

        def locate(i: int | None, base: int = start) -> str:
            return "DataFrame" if i is None else f"DataFrame: row {base + i + 1}"

        yield {name: part.column(name) for name in use}, part.num_rows, locate


def _to_arrow(frame: Any) -> pa.Table:
    if isinstance(frame, pa.Table):
        return frame
    if hasattr(frame, "to_arrow") and not hasattr(frame, "iloc"):  # polars
        return frame.to_arrow()
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(frame, pd.DataFrame):
        names = [str(c) for c in frame.columns]
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise TableError(f"DataFrame: duplicate column name {dup!r}")
        arrays = []
        for name, col in zip(names, frame.columns):
            try:
                arrays.append(pa.array(frame[col], from_pandas=True))
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                raise TableError(f"DataFrame: column {name!r} mixes numbers and text; give it one type") from None
        return pa.Table.from_arrays(arrays, names=names)
    raise TableError(f"unsupported table source of type {type(frame).__name__}; "
                     "give a path (.csv / .parquet), a pandas or polars DataFrame, or a pyarrow Table")


def _name(source: Any) -> str:
    return str(source) if isinstance(source, (str, os.PathLike)) else "DataFrame"


__all__ = ["MappedTable", "iter_chunks", "read_table"]
