"""``dpadapt request``: the unprotected receiver designs the sound release on its own rows.

The receiver (the target, not protected in this setting) reads its rows and the public facts — the label
set, each source's number of rows, (ε, δ) — and writes a release request: the per-row map, its own mean
and top-k principal directions (k from its spectrum and the public noise level), which statistics the
sources should release and how it will use them. Give the file to each source (`dpadapt release sound
--request FILE`). It is a disclosure of your rows (ε = ∞, recorded in the file), charged to no budget; a
dataset that has a budget in your ledger is refused unless you pass --declare-public.
"""

from __future__ import annotations

import argparse

from dpadapt.cli.agreement import owner_params
from dpadapt.cli.cluster import add_cluster_arguments, client, on_cluster
from dpadapt.cli.config_options import _tuple
from dpadapt.cli.main import add_command
from dpadapt.cli.party_cmd import N_FEATURES_PARAM, add_receiver_disclosure, open_receiver_disclosure


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, _ = add_command(sub, "request", __doc__.split("\n\n")[1])
    p.add_argument("--data", required=True, help="your (receiver's) data file, or a Parquet dataset (a folder or a quoted "
                   "glob) read on a Dask cluster; labels, if any, are not used")
    p.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file (default y)")
    p.add_argument("--classes", default=None, help="the public label set, comma-separated (a --schema gives it)")
    p.add_argument("--n-source", type=int, action="append", required=True,
                   help="the number of rows of a source (public under replace-one; under add/remove a public estimate "
                        "of it, n itself being private there); repeat it once per source")
    p.add_argument("--n-design", type=int, default=None,
                   help="under --relation add_remove: the public size estimate every source's release is designed for "
                        "(default: --n-source, when all sources give the same)")
    p.add_argument("--epsilon", type=float, default=None, help="ε of each source's release (omit for the non-private counterpart)")
    p.add_argument("--delta", type=float, default=None, help="δ of each source's release (default 1/(10 n) per source)")
    p.add_argument("--relation", default="replace_one", choices=("replace_one", "add_remove"), help="neighbouring relation")
    p.add_argument("--feature-type", default="auto", choices=("auto", "dense", "counts"),
                   help="'auto' (default): log1p exactly when your rows are counts; or declare it")
    p.add_argument("--design", default="auto", choices=("auto", "prototypes", "discriminant", "selection"),
                   help="'auto' (default): the rule of dpadapt.sound.design chooses; or fix it ('selection': the sources "
                        "release a Laplace table of counts by label and nearest of your public k-means candidates)")
    add_receiver_disclosure(p, "request file to give the source(s)")
    add_cluster_arguments(p, "the map detection, the basis and the gap statistic of a Parquet dataset (--data DIR or "
                             "'glob*.parquet')")
    p.set_defaults(func=run)


def design_size(args: argparse.Namespace) -> int | None:
    """The public size the request is designed for under add/remove (``--n-design``, else the one ``--n-source``
    value, read as a public estimate); ``None`` under replace-one, where each ``--n-source`` is the public n."""
    if args.relation != "add_remove":
        if args.n_design is not None:
            raise ValueError("--n-design is for --relation add_remove; under replace-one --n-source is the public n")
        return None
    if args.n_design is not None:
        return args.n_design
    if len(set(args.n_source)) != 1:
        raise ValueError(f"--relation add_remove with sources of different sizes {args.n_source}: give --n-design N, the "
                         "public size estimate every source's release is designed for")
    return args.n_source[0]


def run(args: argparse.Namespace) -> int:
    from dpadapt import sound

    table, out = open_receiver_disclosure(args)
    schema_classes = getattr(table, "classes", None)  # through a schema: labels are indices, the names travel as agreement facts
    classes = tuple(range(len(schema_classes))) if schema_classes else (_tuple(args.classes) if args.classes else None)
    if classes is None:
        raise ValueError("give the public label set: --classes a,b,... (or --schema)")
    if args.epsilon is None and args.delta is not None:
        raise ValueError("--delta without --epsilon: give both for a private release, neither for the non-private one")
    config = sound.Config(epsilon=args.epsilon, delta=args.delta, classes=tuple(classes), relation=args.relation,
                          feature_type=args.feature_type, n_design=design_size(args), design=args.design)
    if not schema_classes:
        args.classes = tuple(classes)
    if on_cluster(args, table):  # a Parquet dataset: its rows are read on the cluster's workers
        with client(args) as c:
            release = sound.request(table.path, config, args.n_source, client=c, label_column=table.label_column)
    else:
        release = sound.request(table.X, config, args.n_source)
    release.params[N_FEATURES_PARAM] = int(table.n_features)
    release.params.update(owner_params(table, args))
    release.save(out)
    d = release.params["design"]
    space = f"{release.params['k']} directions of your rows" if release.params["space"] == "basis" else "the features themselves"
    print(f"wrote {out}: release request {release.release_id[:12]} for {len(args.n_source)} source(s), {d['design']} design, {release.params['statistics']} "
          f"in {space} (σ = {d['sigma']:.3g})")
    print(f"  disclosure, not a DP release: {release.params['disclosure']}")
    return 0
