"""``--schema FILE`` and ``--quiet`` for the commands that read a party's table, and progress on stderr.

With ``--schema`` a CSV / Parquet file is read through the declared public schema
(:mod:`dpadapt.tables`): its fixed per-row map gives the features, the label column is mapped to
indices into the public label set, and the ID column is carried to predictions. The public label set
then also fills a method's ``--classes`` (as indices; ``--classes`` naming the schema's classes is
accepted). Without ``--schema`` the plain reader (:func:`dpadapt.io.load_table`) is used.

Progress bars (tqdm) go to stderr, only when stderr is a terminal and ``--quiet`` is not given, so
they are never in a pipe's way.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from dpadapt.io import Table, load_table

SCHEMA_HELP = ("declared PUBLIC table schema (TOML/JSON; draft one with `dpadapt schema draft`): label column and "
               "label set, ID column, numeric ranges, category lists, missing-value codes")


@dataclasses.dataclass
class SchemaTable(Table):
    """A table read through a schema: ``y`` holds indices into ``classes``; ``ids`` the ID column (or ``None``).

    ``fingerprint``: the schema's public fingerprint (releases and models carry it); ``counts``: what the
    map imputed and clipped per column (from these rows: printed for this party, never released).
    """

    ids: np.ndarray | None = None
    classes: tuple | None = None
    feature_names: list[str] | None = None
    fingerprint: dict | None = None
    counts: Any = None
    id_column: str | None = None


def add_table_arguments(p: argparse.ArgumentParser) -> None:
    """``--schema FILE`` and ``--quiet`` (unless the parser has them already)."""
    if "--schema" not in p._option_string_actions:
        p.add_argument("--schema", metavar="FILE", default=None, help=SCHEMA_HELP)
    if "--quiet" not in p._option_string_actions:
        p.add_argument("--quiet", "-q", action="store_true", help="no progress output on stderr")


def show_progress(args: argparse.Namespace) -> bool:
    """Progress only on an interactive stderr and without ``--quiet``."""
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def load_data(args: argparse.Namespace, path: str | None = None) -> Table:
    """The party's table: through ``--schema`` when given, else the plain reader with ``--label-column``."""
    path = path or args.data
    schema_path = getattr(args, "schema", None)
    if not schema_path:
        return load_table(path, getattr(args, "label_column", "y"))
    from dpadapt.tables import load_schema, read_table

    if getattr(args, "label_column", "y") != "y":
        raise ValueError("give --schema or --label-column, not both (the schema names the label column)")
    schema = load_schema(schema_path)
    with progress_bar(args, f"reading {Path(path).name}", unit="rows") as tick:
        mapped = read_table(path, schema, progress=tick)
    _schema_classes(args, schema.classes)
    report_counts(mapped.counts, schema, Path(path).name)
    return SchemaTable(X=mapped.X, y=mapped.y, path=Path(path), ids=mapped.ids, classes=mapped.classes,
                       feature_names=mapped.feature_names, fingerprint=schema.fingerprint(), counts=mapped.counts,
                       id_column=schema.id_column)


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
