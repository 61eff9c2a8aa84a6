"""``dpadapt basis``: the unprotected receiver's basis (mean + top-k PCA of its own rows).

In DPOT's setting the target is not protected: it sends the mean and top-k principal directions
of its own (mapped) rows in the clear so that the source can release its class statistics in that
k-dimensional space (`dpadapt release dpot --basis FILE`). The Release records this disclosure
(ε = ∞, not a DP guarantee, with the reason); nothing is charged to a privacy budget, and a dataset
that has a budget in your ledger is refused unless you pass --declare-public. Do not use it when
your own data must be protected.
"""

from __future__ import annotations

import argparse

from dpadapt.cli.agreement import owner_params
from dpadapt.cli.main import add_command
from dpadapt.cli.party_cmd import N_FEATURES_PARAM, add_receiver_disclosure, open_receiver_disclosure
from dpadapt.configs.classstats import Config


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, _ = add_command(sub, "basis", __doc__.split("\n\n")[1])
    p.add_argument("--data", required=True, help="your (target) data file; labels, if any, are not used")
    p.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file (default y)")
    p.add_argument("--k", type=int, default=Config.__dataclass_fields__["k"].default, help="basis dimension (default 20)")
    p.add_argument("--feature-type", choices=("dense", "counts"), default="dense", help="public feature type ('counts': log1p before normalising)")
    p.add_argument("--method", default="dpot", choices=("dpot", "classstats"), help="the method the basis is for (default dpot)")
    add_receiver_disclosure(p, "basis Release file to give the other party")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dpadapt import classstats

    table, out = open_receiver_disclosure(args)
    config = Config(epsilon=None, k=args.k, feature_type=args.feature_type)  # a disclosure: no noise
    release = classstats.basis(table.source, config, family=args.method)  # a few passes over the file, chunk by chunk
    release.params[N_FEATURES_PARAM] = table.n_features
    release.params.update(owner_params(table, args))
    release.save(out)
    print(f"wrote {out}: {release.method}/{release.kind} ({release.params['k']} directions of {table.n_features} features)")
    print(f"  disclosure, not a DP release: {release.params['disclosure']}")
    return 0
