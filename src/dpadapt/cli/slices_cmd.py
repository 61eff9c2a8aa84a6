"""``dpadapt slices``: the public source's map for DP-SWD (message 1 of ``dpswd-marginals``).

In DP-SWD the labelled source is public and only the target is protected. The source trains its
source-only network g → h on its own rows and sends the frozen extractor g (with its
standardisation), h, a centre, k scaled random directions and fixed bins in the clear, so that the
target can release its sliced marginals under that map (`dpadapt release dpswd-marginals --map
FILE`). The Release records this disclosure (ε = ∞, not a DP guarantee, with the reason); nothing
is charged to a privacy budget, and a dataset that has a budget in your ledger is refused unless you
pass --declare-public. Do not use it when your own data must be protected.
"""

from __future__ import annotations

import argparse

import numpy as np

from dpadapt.cli.config_options import add_config_options, config_from_args
from dpadapt.cli.main import add_command
from dpadapt.cli.agreement import CLASS_NAMES_PARAM, owner_params
from dpadapt.cli.party_cmd import N_FEATURES_PARAM, _check_out, add_disclosure_arguments, check_disclosure, sign_key
from dpadapt.configs.deep import DPSWDConfig

#: the source's options, declared once in :class:`~dpadapt.configs.deep.DPSWDConfig`
OPTIONS = ("network", "epochs", "min_steps", "batch_size", "lr", "k", "bins", "classes")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, _ = add_command(sub, "slices", __doc__.split("\n\n")[1])
    p.add_argument("--data", required=True, help="your (source) labelled data file")
    p.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file (default y)")
    add_config_options(p, DPSWDConfig, OPTIONS)
    p.add_argument("--seed", type=int, default=None, help="seed of the public randomness (initialisation, batches, directions)")
    p.add_argument("--out", required=True, help="map Release file to give the other party")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--sign", metavar="KEY", help="sign the map with this Ed25519 private key (dpadapt keys new)")
    add_disclosure_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dpadapt.classstats import label_indices
    from dpadapt.deep import swd_publicmap as pm
    from dpadapt.io import load_table
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.validation import check_features, check_labels

    config = config_from_args(DPSWDConfig, args)
    key = sign_key(args)
    table = load_table(args.data, args.label_column)
    check_disclosure(args, args.data, "source")
    if table.y is None:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    X = check_features(table.X, "source data")
    y = check_labels(table.y, X.shape[0], "source labels", classes=config.classes)
    out = _check_out(args.out, args.force)
    classes = np.asarray(config.classes) if config.classes is not None else np.unique(y)  # the source's labels are public
    rng, _ = random_streams(config.random_state)
    steps = pm.steps_for(X.shape[0], config.batch_size, config.epochs, config.min_steps)
    public_map = pm.source_public_map(
        X, label_indices(y, tuple(classes.tolist())), classes, network=config.network, steps=steps,
        batch_size=config.batch_size, lr=config.lr, k=config.k, bins=config.bins, rng=rng,
    )
    release = pm.map_release(public_map)
    release.params[N_FEATURES_PARAM] = int(X.shape[1])
    release.params.update(owner_params(table, args))
    release.params[CLASS_NAMES_PARAM] = classes.tolist()
    release.save(out, sign_key=key)
    print(f"wrote {out}: {release.method}/{release.kind} ({config.network} network, {steps} source-only steps, "
          f"k = {release.params['k']} directions, {release.params['bins']} bins, {X.shape[1]} features)")
    print(f"  disclosure, not a DP release: {release.params['disclosure']}")
    return 0
