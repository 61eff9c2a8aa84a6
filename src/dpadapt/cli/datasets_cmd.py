"""``dpadapt datasets``: list, describe and fetch the benchmark datasets."""

from __future__ import annotations

import argparse
import os

import numpy as np


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("datasets", help="list / describe the benchmark datasets")
    p.add_argument("--root", help="data folder (default: $DPADAPT_DATA or ../shared/data)")
    dsub = p.add_subparsers(dest="action", metavar="ACTION")
    lp = dsub.add_parser("list", help="every dataset found, with its domains and shapes")
    lp.set_defaults(func=run_list)
    ip = dsub.add_parser("info", help="details of one dataset")
    ip.add_argument("name")
    ip.set_defaults(func=run_info)
    fp = dsub.add_parser(
        "fetch",
        help="download the public originals (checksummed, cached) and convert them",
        description="Download the originals listed in the dataset's MANIFEST (GitHub, fixed commits), verify "
        "their SHA-256, cache them, and write the .npz files the loaders read under --root.",
    )
    fp.add_argument("name", help="dataset name or alias (e.g. decaf6, bow5000, digits)")
    fp.add_argument("--root", dest="fetch_root", help="where to write the data (default: the --root before ACTION, or $DPADAPT_DATA)")
    fp.add_argument("--domains", nargs="+", help="only these domains")
    fp.add_argument("--cache", help="download cache (default: $DPADAPT_CACHE or the user cache dir)")
    fp.add_argument("--overwrite", action="store_true", help="rebuild .npz files that already exist")
    fp.set_defaults(func=run_fetch)
    p.set_defaults(func=run_list)


def _shape_line(name: str, domain: str, root) -> str:
    from dpadapt.datasets import load_domain

    d = load_domain(name, domain, root)
    counts = np.bincount(d.y)
    kind = "sparse CSR" if hasattr(d.X, "tocsr") else str(d.X.dtype)
    return f"  {domain:<12} {d.X.shape[0]:>6} × {d.X.shape[1]:<5} {kind:<10} {len(counts)} classes {counts.tolist() if len(counts) <= 10 else ''}"


def run_list(args) -> int:
    from dpadapt.datasets import DATASETS, available_datasets, find_data_root

    root = find_data_root(args.root, required=False)
    present = available_datasets(args.root)
    print(f"data root: {root if root else '(not found: set $DPADAPT_DATA or pass --root)'}")
    for name, info in DATASETS.items():
        if name not in present:
            print(f"\n{name}: not present — {info.description}")
            continue
        print(f"\n{name}: {info.description}")
        for domain in present[name]:
            print(_shape_line(name, domain, args.root))
    return 0


def run_info(args) -> int:
    from dpadapt.datasets import available_datasets, dataset_info

    info = dataset_info(args.name)
    print(f"{info.name}: {info.description}")
    print(f"aliases: {', '.join(info.aliases)}; classes: {info.n_classes}")
    present = available_datasets(args.root).get(info.name, ())
    for domain in info.domains:
        print(_shape_line(info.name, domain, args.root) if domain in present else f"  {domain:<12} not present")
    return 0


def run_fetch(args) -> int:
    from dpadapt.datasets.catalog import ENV_VAR
    from dpadapt.datasets.fetch import fetch

    root = args.fetch_root or args.root or os.environ.get(ENV_VAR)
    if not root:
        raise ValueError(f"say where to write the data: --root DIR (or set ${ENV_VAR})")
    try:
        paths = fetch(args.name, root, domains=args.domains, cache=args.cache, overwrite=args.overwrite)
    except ImportError as exc:  # optional readers (h5py, Pillow): report, don't trace back
        raise ValueError(str(exc)) from exc
    for path in paths:
        print(path)
    return 0
