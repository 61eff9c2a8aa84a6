"""``dpadapt predict`` / ``dpadapt score``: use a model file written by ``dpadapt adapt``.

The model file is read without unpickling (:mod:`dpadapt.modelio`); ``--trust PUBKEY`` requires it
to be signed by one of those keys.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from dpadapt.cli.party_cmd import _check_out, add_trust_argument, trusted_keys
from dpadapt.cli.table_options import SchemaTable, add_table_arguments, load_data


def add_parser(sub: argparse._SubParsersAction) -> None:
    pp = sub.add_parser("predict", help="predict labels of a data file with a model file")
    pp.add_argument("--out", help="write the predictions here (.csv; default: print them). With --schema: a header, "
                    "the ID column (or the row number) and the predicted class name")
    pp.add_argument("--force", action="store_true", help="overwrite --out")
    sp = sub.add_parser("score", help="accuracy (R² for a regressor) of a model file on labelled data")
    for p in (pp, sp):
        p.add_argument("--model", required=True, help="model file (dpadapt adapt --out)")
        p.add_argument("--data", required=True, help="data file (.npz, .csv, .parquet)")
        p.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file (default y)")
        add_trust_argument(p)
        add_table_arguments(p)
    pp.set_defaults(func=run_predict)
    sp.set_defaults(func=run_score)


def _load(args):
    from dpadapt.cli.party_cmd import load_model

    model = load_model(args.model, trusted_keys(args))["loaded"]
    return model, load_data(args)


def _note(args, model) -> None:
    if not model.trusted:
        print(f"note: {args.model}: {model.authenticity()}", file=sys.stderr)


def run_predict(args) -> int:
    out = _check_out(args.out, args.force) if args.out else None
    model, table = _load(args)
    labels = np.concatenate([np.asarray(model.predict(X)) for X, _ in table.source])  # chunk by chunk
    if isinstance(table, SchemaTable):
        text = _prediction_csv(table, labels, args.schema)
    else:
        text = "\n".join(str(v) for v in labels.tolist())
    if out is None:
        print(text)
    else:
        from dpadapt.container import write_atomic

        write_atomic(out, (text + "\n").encode())
        print(f"wrote {len(labels)} predictions to {out}")
    _note(args, model)
    return 0


def _prediction_csv(table: SchemaTable, labels: np.ndarray, schema_path: str) -> str:
    """CSV with a header: the ID column (or ``row``, 1-based) and the predicted class name."""
    import csv
    import io

    from dpadapt.tables import load_schema

    schema = load_schema(schema_path)
    names = np.asarray(table.classes, dtype=object)[np.asarray(labels, dtype=np.int64)]
    ids = table.ids  # read from the file, chunk by chunk
    ids = ids if ids is not None else np.arange(1, len(labels) + 1)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([schema.id_column or "row", f"predicted_{schema.label.column}" if schema.label else "predicted"])
    writer.writerows(zip(ids.tolist(), names.tolist()))
    return buf.getvalue().rstrip("\n")


def run_score(args) -> int:
    model, table = _load(args)
    if table.y is None:
        raise ValueError(f"{table.path}: scoring needs labels")
    known = np.asarray(table.y) != -1
    X, y = table.X[known], np.asarray(table.y)[known]
    value = model.score(X, y)
    print(f"score {value:.4f} on {int(known.sum())} labelled rows of {table.path}")
    classes = getattr(table, "classes", None)
    if classes is not None and len(classes) == 2:
        for line in binary_metrics(model, X, y, classes):
            print(line)
    _note(args, model)
    return 0


def binary_metrics(model, X: np.ndarray, y: np.ndarray, classes: tuple) -> list[str]:
    """ROC-AUC (when the model gives probabilities and both classes occur) and the confusion matrix."""
    from sklearn.metrics import confusion_matrix, roc_auc_score

    lines = []
    pred = np.asarray(model.predict(X), dtype=np.int64)
    if len(np.unique(y)) == 2:
        try:
            proba = np.asarray(model.predict_proba(X))[:, 1]
        except (AttributeError, NotImplementedError, TypeError, ValueError):
            proba = None
        if proba is not None:
            lines.append(f"ROC-AUC {roc_auc_score(y, proba):.4f} ({classes[1]} as positive)")
    cm = confusion_matrix(y, pred, labels=[0, 1])
    width = max(len(str(c)) for c in classes) + 2
    lines.append("confusion matrix (rows: true, columns: predicted)")
    lines.append(" " * width + "".join(f"{str(c):>{width}}" for c in classes))
    for c, row in zip(classes, cm):
        lines.append(f"{str(c):<{width}}" + "".join(f"{v:>{width}}" for v in row))
    return lines
