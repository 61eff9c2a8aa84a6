"""``dpadapt datasets``: list, describe and fetch the benchmark datasets."""

from __future__ import annotations

import argparse

import numpy as np

from dpadapt.datasets import DATASETS, available_datasets, dataset_info, find_data_root, load_domain


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("datasets", help="list / describe the benchmark datasets")
    p.add_argument("--root", help="data folder (default: $DPADAPT_DATA or ../shared/data)")
    dsub = p.add_subparsers(dest="action", metavar="ACTION")
    lp = dsub.add_parser("list", help="every dataset found, with its domains and shapes")
    lp.set_defaults(func=run_list)
    ip = dsub.add_parser("info", help="details of one dataset")
    ip.add_argument("name")
    ip.set_defaults(func=run_info)
    p.set_defaults(func=run_list)


def _shape_line(name: str, domain: str, root) -> str:
    d = load_domain(name, domain, root)
    counts = np.bincount(d.y)
    kind = "sparse CSR" if hasattr(d.X, "tocsr") else str(d.X.dtype)
    return f"  {domain:<12} {d.X.shape[0]:>6} × {d.X.shape[1]:<5} {kind:<10} {len(counts)} classes {counts.tolist() if len(counts) <= 10 else ''}"


def run_list(args) -> int:
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
    info = dataset_info(args.name)
    print(f"{info.name}: {info.description}")
    print(f"aliases: {', '.join(info.aliases)}; classes: {info.n_classes}")
    present = available_datasets(args.root).get(info.name, ())
    for domain in info.domains:
        print(_shape_line(info.name, domain, args.root) if domain in present else f"  {domain:<12} not present")
    return 0
