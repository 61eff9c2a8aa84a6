"""``--scheduler ADDRESS`` / ``--workers N`` and Parquet datasets as ``--data``: a party's rows summed on a Dask cluster.

A partitioned Parquet dataset (a directory, or a glob of files) given as ``--data`` is a
:class:`ParquetDataset`: its shape comes from the files' metadata (no row read), and a method that sums
per partition (``release sound``) hands the path to :mod:`dpadapt.stream.dask_engine`, which maps, clips and
sums every partition on a worker; only the totals come back and the noise is drawn here, once.
``--scheduler`` connects to a running cluster; ``--workers N`` starts a local one of N worker processes for
the command and stops it after; neither: Dask's threads in this process. The ledger's reservation and
refund are those of every release (the cluster runs inside the reserved step).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from dpadapt.io import Table


def add_cluster_arguments(p: argparse.ArgumentParser,
                          work: str = "sum a Parquet dataset (--data DIR or 'glob*.parquet')") -> None:
    """``--scheduler ADDRESS`` / ``--workers N`` (one or the other) for a command that does ``work`` on a cluster."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--scheduler", default=None, metavar="ADDRESS", help=f"{work} on this running Dask cluster")
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help="start a local Dask cluster of N worker processes for this command (stopped after)")


class ParquetDataset(Table):
    """A partitioned Parquet dataset read on a Dask cluster: ``n_rows`` and ``n_features`` from the metadata."""

    on_cluster = True

    def __init__(self, path: str, label_column: str = "y"):
        import pyarrow.parquet as pq

        from dpadapt.stream.dask_engine import parquet_files

        self.path, self.label_column, self.files = path, label_column, parquet_files(path)
        names = pq.read_schema(self.files[0]).names
        if label_column not in names:
            raise ValueError(f"{path}: no label column {label_column!r}")
        self.features = [c for c in names if c != label_column]
        self.n_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in self.files)
        self.n_features = len(self.features)
        self._whole: tuple | None = None

    def _load(self) -> tuple:
        if self._whole is None:
            from dpadapt.stream.dask_engine import read_parquet

            frame = read_parquet(self.path, self.label_column).compute()
            self._whole = (frame[self.features].to_numpy(dtype="float64"), frame[self.label_column].to_numpy())
        return self._whole

    @property
    def X(self):
        return self._load()[0]

    @property
    def y(self):
        return self._load()[1]


def on_cluster(args: argparse.Namespace, table: Any) -> bool:
    """Whether ``table`` is a Parquet dataset read on a cluster; ``--scheduler`` / ``--workers`` with one file is refused."""
    if getattr(table, "on_cluster", False):
        return True
    if getattr(args, "scheduler", None) or getattr(args, "workers", None):
        raise ValueError("--scheduler / --workers read a Parquet dataset (--data DIR, or a quoted glob) on a cluster; "
                         f"{table.path} is one file, read here chunk by chunk")
    return False


@contextlib.contextmanager
def client(args: argparse.Namespace) -> Iterator[Any]:
    """A ``distributed.Client`` for ``--scheduler`` / ``--workers`` (``None`` without either: Dask's threads here)."""
    address, workers = getattr(args, "scheduler", None), getattr(args, "workers", None)
    if address is None and workers is None:
        yield None
        return
    try:
        import logging

        import distributed
    except ImportError:
        raise ValueError("--scheduler / --workers need Dask's distributed scheduler: pip install 'dpadapt[dask]'") from None
    if workers is not None:
        if workers < 1:
            raise ValueError(f"--workers must be ≥ 1, got {workers}")
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                                      silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as c:
            _say(args, f"started a local Dask cluster of {workers} worker process(es) for this command")
            yield c
        return
    with distributed.Client(address) as c:
        _say(args, f"connected to the Dask cluster at {address} ({len(c.scheduler_info().get('workers', {}))} worker(s))")
        yield c


def _say(args: argparse.Namespace, line: str) -> None:
    if not getattr(args, "quiet", False):
        print(line, file=sys.stderr)
