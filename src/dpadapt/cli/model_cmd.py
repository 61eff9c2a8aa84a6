"""``dpadapt predict`` / ``dpadapt score``: use a model file written by ``dpadapt adapt``.

The model file is read without unpickling (:mod:`dpadapt.modelio`); ``--trust PUBKEY`` requires it
to be signed by one of those keys.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from dpadapt.cli.party_cmd import _check_out, add_trust_argument, trusted_keys
from dpadapt.io import load_table


def add_parser(sub: argparse._SubParsersAction) -> None:
    pp = sub.add_parser("predict", help="predict labels of a data file with a model file")
    pp.add_argument("--out", help="write the predictions here (.csv, one per line; default: print them)")
    pp.add_argument("--force", action="store_true", help="overwrite --out")
    sp = sub.add_parser("score", help="accuracy (R² for a regressor) of a model file on labelled data")
    for p in (pp, sp):
        p.add_argument("--model", required=True, help="model file (dpadapt adapt --out)")
        p.add_argument("--data", required=True, help="data file (.npz, .csv, .parquet)")
        p.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file (default y)")
        add_trust_argument(p)
    pp.set_defaults(func=run_predict)
    sp.set_defaults(func=run_score)


def _load(args):
    from dpadapt.cli.party_cmd import load_model

    model = load_model(args.model, trusted_keys(args))["loaded"]
    return model, load_table(args.data, args.label_column)


def _note(args, model) -> None:
    if not model.trusted:
        print(f"note: {args.model}: {model.authenticity()}", file=sys.stderr)


def run_predict(args) -> int:
    out = _check_out(args.out, args.force) if args.out else None
    model, table = _load(args)
    labels = model.predict(table.X)
    text = "\n".join(str(v) for v in labels.tolist())
    if out is None:
        print(text)
    else:
        from dpadapt.container import write_atomic

        write_atomic(out, (text + "\n").encode())
        print(f"wrote {len(labels)} predictions to {out}")
    _note(args, model)
    return 0


def run_score(args) -> int:
    model, table = _load(args)
    if table.y is None:
        raise ValueError(f"{table.path}: scoring needs labels")
    known = np.asarray(table.y) != -1
    value = model.score(table.X[known], table.y[known])
    print(f"score {value:.4f} on {int(known.sum())} labelled rows of {table.path}")
    _note(args, model)
    return 0
