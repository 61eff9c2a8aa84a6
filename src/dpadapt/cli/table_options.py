"""``--schema FILE``, ``--label-file FILE`` and ``--quiet`` for the commands that read a party's table, and progress on stderr.

Every table is read through :mod:`dpadapt.stream` (:func:`load_data`): a :class:`StreamTable` holds the
file's :class:`~dpadapt.stream.ChunkedSource` (its shape is known before any row is read) and gives the
whole ``X`` / ``y`` only to a method that asks for them; a method that streams (``sound``, ``dpot``,
``request``) reads ``table.source`` chunk by chunk and never holds the file. With ``--schema`` a CSV /
Parquet file is read through the declared public schema (:mod:`dpadapt.tables`): its fixed per-row map
gives the features, the label column is mapped to indices into the public label set, and the ID column
is carried to predictions. The public label set then also fills a method's ``--classes`` (as indices;
``--classes`` naming the schema's classes is accepted). ``.npy`` features take their labels from
``--label-file FILE.npy``.

Progress bars (tqdm) go to stderr, only when stderr is a terminal and ``--quiet`` is not given, so
they are never in a pipe's way.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpadapt.io import Table

if TYPE_CHECKING:
    from dpadapt.stream import ChunkedSource

SCHEMA_HELP = ("declared PUBLIC table schema (TOML/JSON; draft one with `dpadapt schema draft`): label column and "
               "label set, ID column, numeric ranges, category lists, missing-value codes")


class StreamTable(Table):
    """A party's table read through a :class:`~dpadapt.stream.ChunkedSource`: ``n_rows`` × ``n_features``
    known up front; ``X`` and ``y`` (``None`` when unlabelled or all ``-1``) assembled on first use."""

    def __init__(self, source: ChunkedSource, path: str | os.PathLike):
        self.source, self.path = source, Path(path)
        self._whole: tuple | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, {self.n_rows} rows × {self.n_features} features)"

    @property
    def n_rows(self) -> int:
        return self.source.n_rows

    @property
    def n_features(self) -> int:
        return self.source.n_features

    @property
    def columns(self) -> tuple[str, ...] | None:
        """The feature columns' names (a header, an ``.npz``'s ``feature_names``); ``None``: headerless."""
        return self.source.columns

    def _load(self) -> tuple:
        if self._whole is None:
            from dpadapt.stream import materialize

            X, y = materialize(self.source)
            if y is not None and y.dtype.kind in "iu" and np.all(y == -1):
                y = None
            self._whole = (X, y)
        return self._whole

    def subset(self, keep: np.ndarray) -> StreamTable:
        """The rows where ``keep`` (one boolean a row, in file order) is true, still read chunk by chunk."""
        import copy
        import dataclasses

        keep = np.asarray(keep, dtype=bool)
        if keep.shape != (self.n_rows,):
            raise ValueError(f"{self.path}: a row selection of {keep.shape} for {self.n_rows} rows")
        whole = self.source

        def chunks():
            start = 0
            for X, y in whole.chunks():
                mask = keep[start:start + X.shape[0]]
                start += X.shape[0]
                yield X[mask], None if y is None else y[mask]

        table = copy.copy(self)
        table.source, table._whole = dataclasses.replace(whole, n_rows=int(keep.sum()), chunks=chunks), None
        if getattr(self, "_ids", None) is not None and self._ids[0] is not None:
            table._ids = (self._ids[0][keep],)
        return table

    @property
    def X(self):  # noqa: N802 - the Table field's name
        return self._load()[0]

    @property
    def y(self):
        return self._load()[1]


class SchemaTable(StreamTable):
    """A table read through a schema: ``y`` holds indices into ``classes``; ``ids`` the ID column (or ``None``).

    ``fingerprint``: the schema's public fingerprint (releases and models carry it); ``counts``: what the
    map imputed and clipped per column (from these rows: printed for this party, never released), known
    once a pass has read every row (``None`` before).
    """

    def __init__(self, source: ChunkedSource, path: str | os.PathLike, schema):
        super().__init__(source, path)
        self.schema, self.classes, self.feature_names = schema, schema.classes, schema.feature_names
        self.fingerprint, self.id_column, self.counts = schema.fingerprint(), schema.id_column, None
        self._ids: tuple | None = None

    @property
    def ids(self) -> np.ndarray | None:
        """The ID column in row order (read chunk by chunk, once), or ``None`` when the table has none."""
        if self.id_column is None:  # no ID column declared: nothing to read
            return None
        if self._ids is None:
            from dpadapt.tables import iter_chunks

            parts = [ids for _, _, ids in iter_chunks(self.path, self.schema)]
            self._ids = (None if not parts or parts[0] is None else np.concatenate(parts),)
        return self._ids[0]


def add_table_arguments(p: argparse.ArgumentParser) -> None:
    """``--schema FILE``, ``--label-file FILE`` and ``--quiet`` (unless the parser has them already)."""
    if "--schema" not in p._option_string_actions:
        p.add_argument("--schema", metavar="FILE", default=None, help=SCHEMA_HELP)
    if "--label-file" not in p._option_string_actions:
        p.add_argument("--label-file", metavar="FILE", default=None,
                       help="labels of .npy data: a .npy file of one label a row (other formats carry a label column)")
    if "--quiet" not in p._option_string_actions:
        p.add_argument("--quiet", "-q", action="store_true", help="no progress output on stderr")


def show_progress(args: argparse.Namespace) -> bool:
    """Progress only on an interactive stderr and without ``--quiet``."""
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def load_data(args: argparse.Namespace, path: str | None = None) -> StreamTable:
    """The party's table, read chunk by chunk: through ``--schema`` when given, else by file type with
    ``--label-column`` (``.npz``, ``.npy`` with ``--label-file``, ``.csv``, ``.parquet``)."""
    from dpadapt.stream import open_schema_table, open_source

    path = path or args.data
    schema_path = getattr(args, "schema", None)
    from dpadapt.stream.dask_engine import is_parquet_dataset

    if is_parquet_dataset(path):  # a partitioned dataset: summed on a Dask cluster by the methods that can
        if schema_path or getattr(args, "label_file", None):
            raise ValueError(f"{path}: a Parquet dataset (a directory or a glob) is read with --label-column, "
                             "not through --schema or --label-file")
        from dpadapt.cli.cluster import ParquetDataset

        return ParquetDataset(str(path), getattr(args, "label_column", "y"))
    if not schema_path:
        source = open_source(path, getattr(args, "label_column", "y"), labels=getattr(args, "label_file", None))
        _first_chunk(source)
        return StreamTable(_with_progress(args, source), path)
    from dpadapt.tables import load_schema

    if getattr(args, "label_column", "y") != "y":
        raise ValueError("give --schema or --label-column, not both (the schema names the label column)")
    if getattr(args, "label_file", None):
        raise ValueError("give --schema or --label-file, not both (the schema names the label column)")
    schema = load_schema(schema_path)
    tables: list[SchemaTable] = []

    def counted(counts) -> None:  # after the first pass that read every row: what the map imputed and clipped
        if tables and tables[0].counts is None:
            tables[0].counts = counts
            report_counts(counts, schema, Path(path).name)

    source = open_schema_table(path, schema, on_complete=counted)
    _first_chunk(source)
    tables.append(SchemaTable(_with_progress(args, source), path, schema))
    _schema_classes(args, schema.classes)
    return tables[0]


def missing_labels(table: Any, args: argparse.Namespace, what: str = "the source data") -> ValueError:
    """The one-line error for a table without labels: names the file, the label column it was read with
    (the schema's, ``--label-column``'s, an ``.npz`` member, ``--label-file``) and what to do."""
    schema = getattr(table, "schema", None)
    label = getattr(args, "label_column", "y")
    suffix = Path(table.path).suffix.lower()
    if schema is not None:
        where = (f"no column {schema.label.column!r} (the label column of the schema {args.schema})"
                 if schema.label is not None else f"no label column (the schema {args.schema} declares none)")
        todo = "add that column, or declare the table's label column in the schema"
    elif suffix == ".npy":
        where, todo = "no labels (.npy holds features only)", "give --label-file LABELS.npy"
    elif suffix == ".npz":
        where, todo = f"no array {label!r}", f"store the labels as {label!r} in the archive (or name it with --label-column)"
    else:
        where, todo = f"no column {label!r} (--label-column)", "name the label column with --label-column NAME"
    return ValueError(f"{table.path}: {what} needs labels and has {where}; {todo}")


def check_label_range(table: Any, y: np.ndarray, names: list, args: argparse.Namespace) -> None:
    """Refuse labels outside the model's classes ``0..K-1`` in one line naming the file, the column and the value."""
    bad = (y < 0) | (y >= len(names))
    if np.any(bad):
        schema = getattr(table, "schema", None)
        column = schema.label.column if schema is not None and schema.label is not None else getattr(args, "label_column", "y")
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{table.path}: label {int(y[row])} in column {column!r} (labelled row {row + 1}) is not one of the "
                         f"model's {len(names)} classes 0..{len(names) - 1} ({', '.join(map(str, names))}); "
                         "map the labels to the model's class indices (-1 = unlabelled)")


def report_counts(counts: Any, schema: Any, where: str) -> None:
    """What the schema's map imputed and clipped, on stderr: a note per kind, a warning per column above the share.

    Never silent, never released: the counts come from this party's rows and stay on its terminal (and its
    ``report --html``).
    """
    import warnings

    notes, warns = counts.summary(schema, where)
    for line in notes:
        print(f"note: {line}", file=sys.stderr)
    for line in warns:
        warnings.warn(line, stacklevel=2)


def _first_chunk(source: ChunkedSource) -> None:
    """Read (and drop) the first chunk: a bad header or first rows are reported before any ledger or
    budget step; a bad row further on is reported when the rows are read, still before any noise."""
    chunks = source.chunks()
    try:
        next(chunks, None)
    finally:
        chunks.close()


def _with_progress(args: argparse.Namespace, source: ChunkedSource) -> ChunkedSource:
    """``source`` whose every pass advances a progress bar on stderr (when progress is shown)."""
    if not show_progress(args):
        return source
    import dataclasses

    def chunks():
        with progress_bar(args, f"reading {Path(source.name).name}", unit="rows", total=source.n_rows) as tick:
            for X, y in source.chunks():
                tick(X.shape[0])
                yield X, y

    return dataclasses.replace(source, chunks=chunks)


def _schema_classes(args: argparse.Namespace, classes: tuple | None) -> None:
    """Fill a method's public label set from the schema (as indices, the labels ``y`` now holds)."""
    if classes is None or not hasattr(args, "classes"):
        return
    given = args.classes
    if given is not None and tuple(str(c) for c in given) not in (tuple(str(c) for c in classes),
                                                                  tuple(str(i) for i in range(len(classes)))):
        raise ValueError(f"--classes {','.join(map(str, given))} differs from the schema's label set "
                         f"{','.join(map(str, classes))}")
    if getattr(args, "n_classes", None) not in (None, len(classes)):
        raise ValueError(f"--n-classes {args.n_classes} differs from the schema's {len(classes)} classes")
    args.classes = tuple(range(len(classes)))


#: Seconds a step runs before its progress bar shows.
PROGRESS_DELAY_ENV = "DPADAPT_PROGRESS_DELAY"


@contextmanager
def progress_bar(args: argparse.Namespace, desc: str, unit: str = "rows", total: int | None = None) -> Iterator[Any]:
    """A ``tick(n)`` callback advancing a tqdm bar on stderr (a no-op when progress is off).

    The bar shows once the step has run ``$DPADAPT_PROGRESS_DELAY`` seconds (default 1), so quick steps print nothing.
    """
    if not show_progress(args):
        yield lambda n=1: None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, file=sys.stderr, leave=False,
               mininterval=0.5, delay=float(os.environ.get(PROGRESS_DELAY_ENV, "1")))
    try:
        yield bar.update
    finally:
        bar.close()


@contextmanager
def step(args: argparse.Namespace, desc: str) -> Iterator[None]:
    """Say on stderr that a step runs and, when done, how long it took (only where progress is shown)."""
    if not show_progress(args):
        yield
        return
    start = time.perf_counter()
    print(f"{desc} …", file=sys.stderr, flush=True)
    yield
    print(f"{desc}: done in {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
