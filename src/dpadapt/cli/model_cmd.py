"""``dpadapt predict`` / ``dpadapt score``: use a model file written by ``dpadapt adapt``.

The model file is read without unpickling (:mod:`dpadapt.modelio`); ``--trust PUBKEY`` requires it
to be signed by one of those keys. The data must be read through the schema the model was adapted
with (its fingerprint and class names are in the model file; :mod:`dpadapt.cli.agreement`).

``score`` leads with balanced accuracy and ROC-AUC, then sensitivity / specificity at ``--threshold``,
the Brier score and calibration, and accuracy beside the constant predictor's, each with a bootstrap
interval (:mod:`dpadapt.metrics`); a regressor gets R². ``predict --proba`` adds one probability column
per class.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from dpadapt.cli.agreement import CLASS_NAMES_PARAM, check_agreement
from dpadapt.cli.party_cmd import _check_out, add_trust_argument, file_sha256, trusted_keys
from dpadapt.cli.table_options import SchemaTable, add_table_arguments, check_label_range, load_data, missing_labels


def add_parser(sub: argparse._SubParsersAction) -> None:
    pp = sub.add_parser("predict", help="predict labels of a data file with a model file")
    pp.add_argument("--out", help="write the predictions here (.csv; default: print them). With --schema: a header, "
                    "the ID column (or the row number) and the predicted class name")
    pp.add_argument("--force", action="store_true", help="overwrite --out")
    pp.add_argument("--proba", action="store_true", help="add one column per class: the predicted probability (p_CLASS)")
    sp = sub.add_parser("score", help="balanced accuracy, ROC-AUC, sensitivity/specificity, calibration (R² for a regressor) of a model file on labelled data")
    sp.add_argument("--threshold", type=float, default=0.5,
                    help="binary: predict the second class when its probability is at least this (default 0.5)")
    sp.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                    help="bootstrap resamples of the rows for the 95 %% intervals (default 1000; 0: none)")
    sp.add_argument("--json", action="store_true", help="print the metrics as JSON")
    from dpadapt.cli.party_cmd import DECISION_HELP, add_prevalence_argument

    for p in (pp, sp):
        p.add_argument("--decision", default=None, metavar="RULE",
                       help=DECISION_HELP + "; default: the rule the model file records, re-fitted on these rows")
        add_prevalence_argument(p, "default: the estimator the model file records")
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
    table = load_data(args)
    check_agreement(model.meta, table, args, args.model, "model", model.meta.get("version"))
    return model, table


def _note(args, model) -> None:
    if not model.trusted:
        print(f"note: {args.model}: {model.authenticity()}", file=sys.stderr)


def _class_names(model, table) -> list | None:
    names = getattr(table, "classes", None) or model.meta.get(CLASS_NAMES_PARAM)
    return None if names is None else list(names)


def run_predict(args) -> int:
    out = _check_out(args.out, args.force) if args.out else None
    model, table = _load(args)
    rule = decision_rule(model, table.X, args)
    predictor = model if rule is None else rule
    parts = [(np.asarray(predictor.predict(X)), _proba(predictor, X) if args.proba else None) for X, _ in table.source]  # by chunk
    labels = np.concatenate([p[0] for p in parts])
    proba = np.concatenate([p[1] for p in parts]) if args.proba and all(p[1] is not None for p in parts) else None
    if rule is not None:
        print(rule.prevalence_.line(_class_names(model, table)) + " — on these rows", file=sys.stderr)
        print(rule.describe(), file=sys.stderr)
    if args.proba and proba is None:
        raise ValueError(f"{args.model}: this {model.meta.get('method', '')} model gives no probabilities; drop --proba")
    if isinstance(table, SchemaTable):
        warn_duplicate_ids(table)
        text = _prediction_csv(table, labels, args.schema, proba)
    elif proba is not None:
        names = _class_names(model, table) or list(range(proba.shape[1]))
        rows = [",".join(["predicted"] + [f"p_{c}" for c in names])]
        rows += [",".join([str(v)] + [f"{q:.6g}" for q in row]) for v, row in zip(labels.tolist(), proba)]
        text = "\n".join(rows)
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


def decision_rule(model, X, args):
    """The decision rule (``--decision``, else the one the model file records, else ``bayes``) at the prevalence
    estimator (``--prevalence``, else the one the model file records, else the default) fitted on the rows ``X`` without their labels (:class:`dpadapt.decision.DecisionRule`); ``None`` for a model without probabilities."""
    from dpadapt.decision import DecisionRule, parse_rule

    recorded = model.meta.get("decision") or {}
    if args.decision:
        rule, target = parse_rule(args.decision)
    else:
        rule, target = recorded.get("rule", "bayes"), recorded.get("target")
    if _proba(model, X[:1]) is None:
        if args.decision:
            raise ValueError(f"--decision {args.decision}: this model gives no class probabilities")
        return None
    method = getattr(args, "prevalence", None) or (recorded.get("prevalence") or {}).get("method")
    return DecisionRule(model, rule, target, source_prior=model.meta.get("source_prior"), prevalence=method).fit(X)


def release_prevalence(model, names) -> str | None:
    """The line of the prevalence the second release estimated at ``adapt`` (:mod:`dpadapt.sound.scores`), whose interval
    resamples the released counts with their public σ; ``None`` for a model not calibrated by a second release."""
    from dpadapt.prevalence import Prevalence

    details = getattr(getattr(model, "model", model), "details", None)
    if not isinstance(details, dict) or "score_histograms_sigma" not in details or "prevalence" not in details:
        return None
    p = details["prevalence"]
    est = Prevalence(*(np.asarray(p[k], dtype=np.float64) for k in ("prior", "low", "high")), float(p["level"]),
                     str(p["method"]), np.asarray(p["source_prior"], dtype=np.float64))
    includes = p.get("includes", "resamples of the released counts with their public σ and of the receiver's rows")
    return (est.line(names) + " — from the second release at adapt, on the rows it was adapted on (interval: "
            f"{includes}; public σ = {float(details['score_histograms_sigma']):.3g})")


def in_sample(model, args) -> bool:
    """Whether the scored file holds the rows the model was adapted on (its recorded content hash)."""
    return bool(model.meta.get("adapted_on") and model.meta.get("adapted_on") == file_sha256(args.data))


def warn_duplicate_ids(table: SchemaTable) -> None:
    """A one-line warning when an ID occurs on more than one row (each row is still predicted on its own)."""
    import warnings

    if table.ids is None:
        return
    values, counts = np.unique(np.asarray(table.ids, dtype=str), return_counts=True)
    repeated = values[counts > 1]
    if repeated.size:
        warnings.warn(f"{table.path}: {repeated.size} ID(s) of column {table.id_column!r} occur on more than one row "
                      f"(e.g. {str(repeated[0])!r} on {int(counts[counts > 1][0])} rows); each row is predicted on its own",
                      stacklevel=2)


def _proba(model, X) -> np.ndarray | None:
    try:
        return np.asarray(model.predict_proba(X), dtype=np.float64)
    except (AttributeError, NotImplementedError, TypeError, ValueError):
        return None


def _prediction_csv(table: SchemaTable, labels: np.ndarray, schema_path: str, proba: np.ndarray | None) -> str:
    """CSV with a header: the ID column (or ``row``, 1-based), the predicted class name, and P(class) columns."""
    import csv
    import io

    from dpadapt.tables import load_schema

    schema = load_schema(schema_path)
    names = np.asarray(table.classes, dtype=object)[np.asarray(labels, dtype=np.int64)]
    ids = table.ids  # read from the file, chunk by chunk
    ids = ids if ids is not None else np.arange(1, len(labels) + 1)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    header = [schema.id_column or "row", f"predicted_{schema.label.column}" if schema.label else "predicted"]
    if proba is None:
        writer.writerow(header)
        writer.writerows(zip(ids.tolist(), names.tolist()))
    else:
        writer.writerow(header + [f"p_{c}" for c in table.classes])
        writer.writerows([i, n, *(f"{q:.6g}" for q in row)] for i, n, row in zip(ids.tolist(), names.tolist(), proba))
    return buf.getvalue().rstrip("\n")


def run_score(args) -> int:
    import json

    model, table = _load(args)
    if table.y is None:
        raise missing_labels(table, args, "scoring")
    known = np.asarray(table.y) != -1
    X, y = table.X[known], np.asarray(table.y)[known]
    if y.dtype.kind == "f":  # a regression target
        value = model.score(X, y)
        print(json.dumps({"r2": value, "n": int(known.sum())}) if args.json else
              f"R² {value:.4f} on {int(known.sum())} labelled rows of {table.path}")
        _note(args, model)
        return 0
    names = _class_names(model, table)
    proba = _proba(model, X)
    if proba is None or names is None or proba.shape[1] != len(names):
        value = model.score(X, y)  # a model without probabilities: accuracy only
        print(f"accuracy {value:.4f} on {int(known.sum())} labelled rows of {table.path} "
              "(this model gives no class probabilities: no ROC-AUC, calibration or intervals)")
        _note(args, model)
        return 0
    check_label_range(table, y, names, args)
    evaluations = score_variants(model, proba, y, names, args)
    rule = decision_rule(model, X, args)
    label = f"at the estimated prevalence, {rule.describe()}"
    evaluations = {label: decision_evaluation(rule, X, y, names, args), **evaluations}
    sample = ("in-sample: these are the rows the model was adapted on (optimistic)" if in_sample(model, args)
              else "out-of-sample or unknown: the file is not the one the model was adapted on")
    if args.json:
        second = getattr(getattr(model, "model", model), "details", {}).get("prevalence") \
            if release_prevalence(model, names) else None
        print(json.dumps({"prevalence": rule.prevalence_.to_dict(), "release_prevalence": second, "decision": {"rule": rule.rule, "target": rule.target,
                          "threshold": rule.threshold_}, "in_sample": in_sample(model, args),
                          **{k: e.to_dict() for k, e in evaluations.items()}}, indent=2))
    else:
        print(f"scored {args.model} on {table.path} ({sample})")
        print(rule.prevalence_.line(names) + " — estimated on these rows without their labels (interval: a bootstrap of "
              f"these rows); observed: {100 * float(np.mean(y == len(names) - 1)):.1f} %")
        second = release_prevalence(model, names)
        if second:
            print(second)
        for label, e in evaluations.items():
            if len(evaluations) > 1:
                print(f"-- {label}")
            for line in e.lines() + e.confusion_lines():
                print(line)
    _note(args, model)
    return 0


def decision_evaluation(rule, X, y, names: list, args):
    """The evaluation at the estimated prevalence: calibration of those probabilities, sensitivity and
    specificity at the rule's threshold (binary)."""
    from dpadapt.metrics import evaluate

    threshold = rule.threshold_ if rule.threshold_ is not None and 0.0 < rule.threshold_ < 1.0 else 0.5
    return evaluate(y, rule.predict_proba(X), names, threshold=threshold, n_boot=args.bootstrap)


def score_variants(model, proba: np.ndarray, y: np.ndarray, names: list, args) -> dict:
    """The model's evaluation, and — where a label-shift correction is available — the corrected one beside it.

    With :func:`label_shift_variants` both sides of the label-shift correction are scored, so the
    correction is never silent.
    """
    from dpadapt.metrics import evaluate

    kw = dict(threshold=args.threshold, n_boot=args.bootstrap)
    out = {"as adapted": evaluate(y, proba, names, **kw)}
    for label, adjusted in label_shift_variants(model, proba).items():
        out[label] = evaluate(y, adjusted, names, **kw)
    return out


def label_shift_variants(model, proba: np.ndarray) -> dict[str, np.ndarray]:
    """The label-shift corrected side (:mod:`dpadapt.labelshift`), so that both are shown.

    A model that records the source's class prior (``source_prior``, from the released noisy counts) is shown
    corrected too: the target prior by EM on these rows' probabilities (no labels used). Otherwise ``{}``.
    The correction is off by default (it lost on the development pairs, ``benchmarks/sound/design_rule.md``).
    """
    from dpadapt.labelshift import adjust_log_proba, em_target_prior

    logp = np.log(np.clip(proba, np.finfo(float).tiny, None))
    prior = model.meta.get("source_prior")
    if prior is None:
        return {}
    estimate = em_target_prior(logp, np.asarray(prior, dtype=np.float64))
    return {"label-shift corrected": np.exp(adjust_log_proba(logp, estimate))}
