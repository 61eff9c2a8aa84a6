"""``dpadapt report FILE``: the privacy guarantee of a Release file or a model file, in words or JSON.

Who is protected, the privacy unit and neighbouring relation, (ε, δ), the accounting and theorem,
and whether the guarantee is valid (and why not). Files are verified first (checksum; signature when
present; a trusted signer with --trust). Nothing in a file is ever run (no pickle).

Release and model files are both :mod:`dpadapt.container` files (arrays + JSON; never unpickled). The digest is always
checked; a signature is checked when present, and required with ``--trust PUBKEY``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from dpadapt import container
from dpadapt.cli.agreement import CLASS_NAMES_PARAM
from dpadapt.cli.main import add_command
from dpadapt.cli.party_cmd import add_prevalence_argument, add_trust_argument, load_model, trusted_keys
from dpadapt.cli.table_options import add_table_arguments


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, _ = add_command(sub, "report", __doc__.split("\n\n")[1])
    p.add_argument("file", nargs="+", help="a .release file (dpadapt release) or a model file (dpadapt adapt); "
                   "with --html, several model files of one method at different ε draw accuracy against ε")
    p.add_argument("--json", action="store_true", help="print JSON instead of words")
    p.add_argument("--html", metavar="OUT", help="write one HTML page (what each party protected and disclosed, ε/δ "
                   "against budgets, data sources, metrics with intervals, a band against ε for a sweep) for model file(s)")
    p.add_argument("--ledger", help="with --html: your ledger, to show the budget of a party that recorded its releases "
                   "there (the other party's budget stays in its own ledger)")
    p.add_argument("--data", help="with --html: your own data file (labelled: the model's metrics with intervals; through "
                   "--schema: its rows, what was imputed and clipped); read here, shown on this page only")
    p.add_argument("--label-column", default="y", help="label column of a .csv/.parquet file without --schema (default y)")
    p.add_argument("--threshold", type=float, default=0.5, help="with --data: binary decision threshold (default 0.5)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="with --data: bootstrap resamples for the intervals (default 1000)")
    p.add_argument("--decision", default=None, metavar="RULE", help="with --data: the decision rule (bayes, balanced, "
                   "sensitivity:S, alert_rate:A; default: the one the model file records), fitted on those rows without labels")
    add_prevalence_argument(p, "with --data; default: the estimator the model file records")
    p.add_argument("--force", action="store_true", help="overwrite --html OUT")
    add_trust_argument(p)
    add_table_arguments(p)
    p.set_defaults(func=run)


def _is_release(path: Path) -> bool:
    from dpadapt.release import FORMAT as RELEASE_FORMAT

    return container.read(path).meta.get("format") == RELEASE_FORMAT


def describe(path: str | Path, trusted: list[Any] | tuple = ()) -> dict[str, Any]:
    """JSON-able description of a Release or model file."""
    from dpadapt.release import Release

    path = Path(path)
    if _is_release(path):
        r = Release.load(path, trusted=trusted)
        return {
            "type": "release",
            "file": str(path),
            "release_id": r.release_id,
            "method": r.method,
            "kind": r.kind,
            "owner": r.owner,
            "version": r.version,
            "created": r.created,
            "authenticity": r.authenticity(),
            "signer": r.signer,
            "arrays": {k: list(v.shape) for k, v in r.arrays.items()},
            "params": r.params,
            "guarantee": r.guarantee.to_dict(),
        }
    bundle = load_model(path, trusted)
    return {
        "type": "model",
        "file": str(path),
        "method": bundle["method"],
        "version": bundle["version"],
        "created": bundle["created"],
        "authenticity": bundle["loaded"].authenticity(),
        "signer": bundle["loaded"].signer,
        "releases": bundle["releases"],
        "metrics": bundle["metrics"],
        "guarantees": {k: g.to_dict() for k, g in bundle["guarantees"].items()},
    }


def words(path: str | Path, trusted: list[Any] | tuple = ()) -> str:
    """The guarantee(s) of a Release or model file, in words."""
    from dpadapt.release import Release

    path = Path(path)
    if _is_release(path):
        release = Release.load(path, trusted=trusted)
        release.guarantee = _named_classes(release.guarantee, release.params.get(CLASS_NAMES_PARAM))
        return release.report()
    bundle = load_model(path, trusted)
    names = bundle["meta"].get(CLASS_NAMES_PARAM)
    lines = [
        f"Model {path.name} — {bundle['method']}, written by dpadapt {bundle['version']} at {bundle['created']}",
        "Authenticity: " + bundle["loaded"].authenticity(),
        "Trained from release(s): " + (", ".join(bundle["releases"]) or "none"),
    ]
    for key, value in bundle["metrics"].items():
        lines.append(f"Metric {key}: {value:.4f}" if isinstance(value, float) else f"Metric {key}: {value}")
    for party, g in bundle["guarantees"].items():
        lines += ["", f"What the model reveals about the {party} data:", _named_classes(g, names).report()]
    return "\n".join(lines)


def _named_classes(g, names: list | None):
    """``g`` with its label set by the names of the table's schema (the release holds indices 0..K-1)."""
    classes = g.details.get("classes")
    if not names or classes is None or list(classes) != list(range(len(names))):
        return g
    return dataclasses.replace(g, details={**g.details, "classes": list(names)})


def run(args) -> int:
    trusted = trusted_keys(args)
    if args.html:
        return _run_html(args, trusted)
    for option in ("data", "ledger"):
        if getattr(args, option):
            raise ValueError(f"--{option} is for the HTML page: add --html OUT")
    for i, path in enumerate(args.file):
        if i:
            print()
        if args.json:
            print(json.dumps(describe(path, trusted), indent=2, sort_keys=True))
        else:
            print(words(path, trusted))
    return 0


def _run_html(args, trusted) -> int:
    from dpadapt.cli.party_cmd import _check_out
    from dpadapt.cli.report_html import render
    from dpadapt.container import write_atomic

    out = _check_out(args.html, args.force)
    for path in args.file:
        if _is_release(Path(path)):
            raise ValueError(f"{path}: --html reports model files (dpadapt adapt --out); this is a release file")
    bundles = [load_model(path, trusted) for path in args.file]
    local = _local_data(args, bundles) if args.data else None
    page = render(args.file, bundles, args.ledger, local)
    write_atomic(out, page.encode("utf-8"))
    print(f"wrote {out}")
    return 0


def _local_data(args, bundles):
    """The reader's own table for the page: rows, what the map imputed/clipped, each model's metrics on its labels."""
    import numpy as np

    from dpadapt.cli.agreement import check_agreement
    from dpadapt.cli.model_cmd import _class_names, _proba, label_shift_variants
    from dpadapt.cli.report_html import LocalData
    from dpadapt.cli.table_options import load_data
    from dpadapt.metrics import evaluate
    from dpadapt.tables import load_schema

    table = load_data(args)
    for path, b in zip(args.file, bundles):
        check_agreement(b["meta"], table, args, path, "model", b["version"])
    rows = int(table.X.shape[0])  # the first full read of a streamed table: the schema's counts come with it
    labelled = 0 if table.y is None else int(np.sum(np.asarray(table.y) != -1))
    notes, warns = [], []
    counts = getattr(table, "counts", None)
    if counts is not None:
        notes, warns = counts.summary(load_schema(args.schema), Path(args.data).name, most=None)  # the page lists every column
    evaluations, corrected = [], {}
    for i, b in enumerate(bundles):
        ev = None
        if labelled and np.asarray(table.y).dtype.kind in "iu":
            known = np.asarray(table.y) != -1
            y, proba = np.asarray(table.y)[known], _proba(b["loaded"], table.X[known])
            names = _class_names(b["loaded"], table)
            kw = dict(threshold=args.threshold, n_boot=args.bootstrap)
            if proba is not None and names is not None and proba.shape[1] == len(names):
                ev = evaluate(y, proba, names, **kw)
                if i == 0:  # the label-shift hook: shown beside the uncorrected metrics, never instead of them
                    corrected = {label: evaluate(y, adjusted, names, **kw)
                                 for label, adjusted in label_shift_variants(b["loaded"], proba).items()}
        evaluations.append(ev)
    return LocalData(path=str(args.data), rows=rows, labelled=labelled, schema=args.schema,
                     notes=notes, warnings=warns, evaluations=evaluations, corrected=corrected,
                     decision=_decision(args, bundles[0]["loaded"], table))


def _decision(args, model, table) -> dict | None:
    """The first model's decision rule fitted on the reader's rows (no labels): the prevalence with its interval, the
    rule, whether these are the rows it was adapted on, and — with labels — the evaluation at that rule and the
    reliability diagram's bins."""
    import numpy as np

    from dpadapt.cli.model_cmd import _class_names, decision_evaluation, decision_rule, in_sample, release_prevalence

    rule = decision_rule(model, table.X, args)
    if rule is None:
        return None
    names = _class_names(model, table)
    out = {"prevalence": rule.prevalence_.line(names), "release_prevalence": release_prevalence(model, names), "rule": rule.describe(), "in_sample": in_sample(model, args),
           "evaluation": None, "reliability": None}
    if table.y is not None and np.asarray(table.y).dtype.kind in "iu" and names is not None and len(names) == 2:
        known = np.asarray(table.y) != -1
        X, y = table.X[known], np.asarray(table.y)[known]
        out["evaluation"] = decision_evaluation(rule, X, y, names, args)
        p = rule.predict_proba(X)[:, 1]
        idx = np.clip((p * 10).astype(int), 0, 9)
        out["reliability"] = [(float(p[idx == b].mean()), float(y[idx == b].mean()), int((idx == b).sum()))
                              for b in range(10) if (idx == b).any()]
    return out
