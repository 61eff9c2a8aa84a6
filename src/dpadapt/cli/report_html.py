"""``dpadapt report MODEL... --html OUT``: one self-contained HTML page a clinician or a data officer can read.

The page says, party by party and in plain words, what is protected and what was disclosed; the ε / δ
each protected party spent against its budget (from ``--ledger`` when that party's ledger is at hand —
the target never holds the source's, and the page says where it is); where the model's inputs came from
(the releases, with their row counts where a release states them, and — with ``--data`` — the reader's
own table: rows, what the schema's map imputed and clipped); how well it predicts (with ``--data`` and
labels: balanced accuracy, ROC-AUC, sensitivity / specificity, calibration, with bootstrap intervals, from
:mod:`dpadapt.metrics`); and, for several model files of one method, the metric against ε with a band
over the runs at each ε (an inline PNG). Everything comes from the files and the reader's own data; the
counts from the reader's rows stay on this page, in the reader's hands.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import math
from pathlib import Path
from typing import Any

#: Metrics recorded in a model file at adapt time, with the words on the page.
ACCURACY_METRICS = {
    "accuracy_on_target_labels": "adapted model",
    "prototypes_accuracy": "the released DP class prototypes alone (no refinement on the target)",
}

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:62em;margin:2em auto;padding:0 1em;
     line-height:1.45;color:#1f2933}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #d9e2ec}
table{border-collapse:collapse;margin:.5em 0;max-width:100%} td,th{border:1px solid #d9e2ec;padding:.3em .6em;
     text-align:left;vertical-align:top} th{background:#f0f4f8} td.path{overflow-wrap:anywhere}
.muted{color:#52606d;font-size:.92em}
.party{border-left:5px solid #9fb3c8;background:#f7f9fb;padding:.6em 1em;margin:.8em 0}
.party.protected{border-color:#2f855a;background:#f0fff4}
.party.disclosed,.party.local{border-color:#4a6fa5;background:#f5f8ff}
.party.invalid{border-color:#c05621;background:#fffaf0}
.party h3{margin:.1em 0 .3em 0;font-size:1.05em}
.num{text-align:right;font-variant-numeric:tabular-nums}
.warn{color:#975a16}
"""


@dataclasses.dataclass
class LocalData:
    """The reader's own table (``report --data``): facts computed here, shown on this page only.

    ``evaluations``: per model file, its :class:`dpadapt.metrics.Evaluation` on these rows (``None``
    without labels or probabilities); ``notes`` / ``warnings``: what the schema's map imputed and clipped.
    """

    path: str
    rows: int
    labelled: int
    schema: str | None
    notes: list[str]
    warnings: list[str]
    evaluations: list[Any]
    #: the first model's evaluation after each label-shift correction available (``dpadapt.cli.model_cmd.label_shift_variants``)
    corrected: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: the first model's decision rule on these rows (``dpadapt.cli.report_cmd._decision``): prevalence, rule,
    #: in-sample, evaluation at the rule and reliability bins (mean predicted, observed, rows)
    decision: dict[str, Any] | None = None


def _eps(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.4g}"


def _party_words(party: str) -> str:
    return {"source": "source (labelled) party", "target": "target party"}.get(party, f"{party} party")


def _party_story(party: str, g: Any, method: str) -> tuple[str, str, list[str]]:
    """(css class, headline, lines) in plain words: what is protected and what was disclosed."""
    who = _party_words(party)
    if math.isinf(g.epsilon) and g.details.get("disclosed"):
        return ("disclosed", f"The {who} is not protected in this setting — by design, and here is what it shared",
                [f"It disclosed {g.details['disclosed']}: " + "; ".join(g.reasons),
                 "Nothing else computed from its rows left it."])
    if math.isinf(g.epsilon) and g.details.get("kept"):
        return ("local", f"The {who}'s rows stayed with it",
                ["They were used on that party's own machine to build this model, without noise.",
                 "The model file therefore reflects them and carries no privacy guarantee for them: keep it within "
                 "that party, as you would the rows."])
    if math.isinf(g.epsilon):
        return ("invalid", f"The {who}'s data were released without noise",
                ["Not protected: " + ("; ".join(g.reasons) or "no privacy noise") + "."])
    unit = {"record": "one patient record (a row, its label included)", "patient":
            f"all rows of one patient (at most {g.details.get('rows_per_patient')} rows each)",
            "label": "the label of one record", "attribute": "one attribute of one record"}.get(g.unit, g.unit)
    lines = [f"What left this party was computed with calibrated noise: changing {unit} changes the probability of "
             f"any result by at most a factor e^ε = {math.exp(min(g.epsilon, 700)):.3g} (ε = {_eps(g.epsilon)}), "
             f"except with probability δ = {g.delta:.3g}.",
             f"How: {g.theorem or 'see the guarantee'} (accounting: {g.accounting}).",
             "Its rows themselves never left it."]
    if g.valid:
        return "protected", f"The {who} is protected (differential privacy)", lines
    return ("invalid", f"The {who}'s release does not carry a valid guarantee",
            lines[:1] + ["It is not a valid differential-privacy guarantee, because: " + "; ".join(g.reasons)])


def _ledger_rows(bundle: dict[str, Any], ledger_path: str | None) -> tuple[list[tuple[str, str, str, str]], str | None]:
    """(party, spent by this model's releases, spent in total on that dataset, budget) per protected party, and a note."""
    rows, note, ledger = [], None, None
    if ledger_path:
        from dpadapt.privacy.ledger import Ledger

        if Path(ledger_path).exists():
            ledger = Ledger(ledger_path)
        else:
            note = f"No ledger file at {ledger_path}: this party has recorded no release of its own there."
    for party, g in bundle["guarantees"].items():
        if math.isinf(g.epsilon):
            continue
        spent_here = f"ε = {_eps(g.epsilon)}, δ = {g.delta:.3g}"
        total = "—"
        budget = (f"kept in the {party} party's own ledger, which stays with it (it can show it with "
                  "`dpadapt report --html --ledger`)")
        if ledger is not None:
            entries = [e for e in ledger.history(party, None) if e.release_id in bundle["releases"]]
            if entries:
                dataset = entries[0].dataset_id
                total = ledger.spent(party, dataset).words()
                b = ledger.budget(party, dataset)
                budget = f"ε = {b.epsilon:.4g}, δ = {b.delta:.3g}" if b else "no budget set"
        rows.append((party, spent_here, total, budget))
    return rows, note


def _sweep_plot(groups: dict[float, list[float]], baselines: dict[str, dict[float, list[float]]], ylabel: str) -> str:
    """The metric against ε (log axis): the mean over runs with a min–max band, as an inline PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    import numpy as np

    fig, ax = plt.subplots(figsize=(6.4, 3.8), dpi=100)
    series = ylabel.split(" on ")[0].split(" / ")[0]  # the first metric named on the axis is the model's line
    for (name, data), style in zip([(f"adapted model, {series}", groups)] + list(baselines.items()), ("o-", "s--", "^:")):
        xs = sorted(data)
        if not xs:
            continue
        mean = [float(np.mean(data[x])) for x in xs]
        ax.plot(xs, mean, style, label=f"{name} (mean)")
        if any(len(data[x]) > 1 for x in xs):
            ax.fill_between(xs, [min(data[x]) for x in xs], [max(data[x]) for x in xs], alpha=0.2,
                            label=f"{name}: lowest to highest run")
    xs = sorted(groups)
    ax.set_xscale("log")
    ax.set_xticks(xs)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    if len(xs) > 1:
        ax.set_xlim(xs[0] / 1.3, xs[-1] * 1.3)
    ax.set_xlabel("ε of the protected party (smaller = more private)")
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(ylabel)} against epsilon" src="data:image/png;base64,{data}">'


def render(paths: list[str], bundles: list[dict[str, Any]], ledger_path: str | None = None,
           local: LocalData | None = None) -> str:
    """The HTML page for one model file (or a sweep of model files of one method)."""
    e = html.escape
    main = bundles[0]
    method = str(main["method"])
    names = [Path(p).name for p in paths]
    title = names[0] if len(names) == 1 else f"ε sweep of {len(names)} {method} models ({names[0]} … {names[-1]})"
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>dpadapt report: {e(title)}</title>", f"<style>{STYLE}</style></head><body>",
        f"<h1>Run report: {e(title)}</h1>",
        f'<p class="muted">Method <b>{e(method)}</b>, written by dpadapt {e(str(main["version"]))} at '
        f"{e(str(main['created']))}. Authenticity of the model file: {e(main['loaded'].authenticity())}."
        + (f" This page covers {len(bundles)} model files (an ε sweep)." if len(bundles) > 1 else "") + "</p>",
        "<h2>Privacy, party by party</h2>",
    ]
    for party, g in main["guarantees"].items():
        css, headline, lines = _party_story(party, g, method)
        parts.append(f'<div class="party {css}"><h3>{e(headline)}</h3>'
                     + "".join(f"<p>{e(line)}</p>" for line in lines) + "</div>")
    parts.append('<p class="muted">Technical summary: ' + "; ".join(e(g.summary()) for g in main["guarantees"].values())
                 + "</p>")
    rows, note = _ledger_rows(main, ledger_path)
    parts.append("<h2>Privacy spent against each budget</h2>")
    if rows:
        parts.append("<table><tr><th>party</th><th>spent by this model's releases</th><th>spent in total on that "
                     "dataset</th><th>budget</th></tr>")
        parts += [f"<tr><td>{e(p)}</td><td>{e(a)}</td><td>{e(b)}</td><td>{e(c)}</td></tr>" for p, a, b, c in rows]
        parts.append("</table>")
    else:
        parts.append("<p>No party spent a finite privacy budget in this model.</p>")
    if note:
        parts.append(f'<p class="muted">{e(note)}</p>')
    parts += _data_section(main, local)
    parts += _performance_section(main, local)
    parts += _decision_section(local)
    sweep = _sweep_section(paths, bundles, local)
    parts += sweep
    parts.append('<p class="muted">Everything on this page was read from the files named above and, where given, '
                 "from your own data on your own machine; the counts from your rows appear only here.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _data_section(bundle: dict[str, Any], local: LocalData | None) -> list[str]:
    e = html.escape
    out = ["<h2>Where the data came from</h2>", "<table><tr><th>input</th><th>from</th><th>rows</th><th>what it is</th></tr>"]
    for s in bundle["meta"].get("sources") or []:
        rows = "not stated in the release" if s.get("rows") is None else f"{s['rows']:,}"
        what = f"{s['method']}/{s['kind']} release {s['release_id'][:12]}, written {s['created']}"
        if s.get("epsilon") is not None:
            what += f" (ε = {_eps(s['epsilon'])}, δ = {s['delta']:.3g})"
        out.append(f"<tr><td>release</td><td>{e(_party_words(s['owner']))}</td><td class=\"num\">{e(rows)}</td>"
                   f"<td>{e(what)}</td></tr>")
    if not bundle["meta"].get("sources"):
        ids = ", ".join(r[:12] for r in bundle["releases"]) or "none"
        out.append(f"<tr><td>release(s)</td><td>the other party</td><td>—</td><td>{e(ids)}</td></tr>")
    if local is not None:
        schema = f" read through the schema {local.schema}" if local.schema else ""
        out.append(f"<tr><td>your data</td><td class=\"path\">{e(local.path)}</td><td class=\"num\">{local.rows:,}</td>"
                   f"<td class=\"path\">{e(f'{local.labelled:,} labelled rows{schema}')}</td></tr>")
    out.append("</table>")
    if local is None:
        out.append('<p class="muted">Give <code>--data FILE</code> (and <code>--schema</code>) to add your own table: '
                   "its rows, what was imputed or clipped, and the model's metrics on its labels.</p>")
    else:
        out.append("<h3>What the schema's map did to your rows</h3>")
        if not local.notes and not local.warnings:
            out.append("<p>Nothing was imputed or clipped: every cell was present and inside its declared range.</p>")
        out += [f"<p>{e(n)}</p>" for n in local.notes]
        out += [f'<p class="warn">⚠ {e(w)}</p>' for w in local.warnings]
    return out


def _performance_section(bundle: dict[str, Any], local: LocalData | None) -> list[str]:
    e = html.escape
    out = ["<h2>How well it predicts</h2>"]
    evaluation = local.evaluations[0] if local is not None and local.evaluations else None
    if evaluation is not None and len(local.evaluations) > 1:
        out.append(f'<p class="muted">For the first model file; the ε sweep below covers all {len(local.evaluations)}.</p>')
    if evaluation is not None:
        pos = evaluation.classes[evaluation.positive] if evaluation.binary else None
        out.append(f"<p>On {evaluation.n:,} labelled rows of your data: "
                   + ", ".join(f"{e(str(c))} {k:,} ({100 * k / max(evaluation.n, 1):.1f} %)"
                               for c, k in zip(evaluation.classes, evaluation.counts)) + ".</p>")
        if pos is not None and not math.isnan(evaluation.values["sensitivity"]):
            out.append(f"<p>Of the patients with <b>{e(str(pos))}</b>, the model flags "
                       f"{100 * evaluation.values['sensitivity']:.0f} % (sensitivity); of those without it, it clears "
                       f"{100 * evaluation.values['specificity']:.0f} % (specificity), at a threshold of "
                       f"{evaluation.threshold:g} on the predicted probability.</p>")
        variants = {"as adapted": evaluation, **local.corrected}
        out.append("<table><tr><th>measure</th>" + "".join(f"<th>{e(label)}</th><th>95 % interval</th>"
                                                           for label in variants) + "</tr>")
        for key, words in evaluation.names.items():
            cells = ""
            for ev in variants.values():
                value, (lo, hi) = ev.values[key], ev.intervals[key]
                shown = "undefined" if math.isnan(value) else f"{value:.3f}"
                interval = "—" if math.isnan(lo) else f"{lo:.3f} – {hi:.3f}"
                cells += f"<td class=\"num\">{shown}</td><td class=\"num\">{interval}</td>"
            out.append(f"<tr><td>{e(words)}</td>{cells}</tr>")
        out.append("</table>")
        if evaluation.constant_beats_model:
            out.append(f'<p class="warn">Always predicting “{e(str(evaluation.majority_class))}” would be right '
                       f"{100 * evaluation.constant_accuracy:.1f} % of the time, as often as this model or more: "
                       "read balanced accuracy and ROC-AUC, not accuracy.</p>")
        out.append('<p class="warn">In-sample when these are the rows the model was adapted on (the target adapts '
                   "on its own rows, without their labels): a transductive figure, not a held-out estimate. Score a "
                   "file the model never saw for that.</p>")
        out.append(f'<p class="muted">Intervals: {100 * evaluation.level:g} % percentile bootstrap over '
                   f"{evaluation.n_boot} resamples of the rows. Balanced accuracy is the mean of sensitivity and "
                   "specificity; a ROC-AUC of 0.5 is chance, 1 a perfect ranking; a calibration slope of 1 means the "
                   "probabilities are neither over- nor under-confident.</p>")
    metrics = bundle["metrics"]
    shown = [(label, metrics[key]) for key, label in ACCURACY_METRICS.items() if isinstance(metrics.get(key), (int, float))]
    if shown:
        out.append("<p>Recorded when the model was adapted: accuracy on the receiver's labels of the rows it adapted "
                   "on (in-sample, not a held-out estimate):</p>")
        out.append("<table><tr><th>model</th><th>accuracy on the target's labels</th></tr>")
        out += [f"<tr><td>{e(label)}</td><td class=\"num\">{value:.4f}</td></tr>" for label, value in shown]
        out.append("</table>")
    elif evaluation is None:
        out.append("<p>No accuracy recorded (the receiver's data had no labels when it adapted); give labelled data "
                   "with <code>--data</code> to measure it here.</p>")
    return out


def _decision_section(local: LocalData | None) -> list[str]:
    """The estimated prevalence with its interval, the decision rule, sensitivity / specificity at it, and the
    calibration of the probabilities at the estimated prevalence (slope, ECE, a reliability diagram)."""
    if local is None or local.decision is None:
        return []
    e = html.escape
    d = local.decision
    out = ['<h2 id="decision">Prevalence, calibration and the decision rule</h2>',
           f'<p id="prevalence">{e(d["prevalence"])} — estimated on your rows without their labels (interval: a '
           'bootstrap of your rows).</p>',
           *([f'<p id="release-prevalence">{e(d["release_prevalence"])}.</p>'] if d.get("release_prevalence") else []),
           f'<p id="rule">{e(d["rule"])}.</p>']
    out.append('<p class="warn" id="in-sample">These are the rows the model was adapted on: the scores are in-sample '
               "(optimistic).</p>" if d["in_sample"] else
               '<p class="muted" id="in-sample">These are not the rows the model was adapted on (or that is unknown): '
               "the scores are out-of-sample.</p>")
    ev = d.get("evaluation")
    if ev is not None:
        v = ev.values
        out.append(f'<p id="at-rule">At this rule: sensitivity {100 * v["sensitivity"]:.0f} %, specificity '
                   f'{100 * v["specificity"]:.0f} %, balanced accuracy {100 * v["balanced_accuracy"]:.1f} %. '
                   f'Calibration at the estimated prevalence: slope {v["calibration_slope"]:.2f} (1 is calibrated; below 1 '
                   f'over-confident), expected calibration error {v["ece"]:.3f}.</p>')
        if d.get("reliability"):
            out.append(_reliability_plot(d["reliability"]))
    return out


def _reliability_plot(bins: list[tuple[float, float, int]]) -> str:
    """Observed rate against mean predicted probability per bin (an inline PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.2, 4.0), dpi=100)
    ax.plot([0, 1], [0, 1], "k:", lw=1, label="calibrated")
    ax.plot([b[0] for b in bins], [b[1] for b in bins], "o-", label="this model")
    ax.set_xlabel("predicted probability (at the estimated prevalence)")
    ax.set_ylabel("observed rate")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return f'<img id="reliability" alt="reliability diagram" src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode("ascii")}">'


def _point(bundle: dict[str, Any]) -> float:
    """ε of the protected party of one model file (the largest finite one)."""
    finite = [g.epsilon for g in bundle["guarantees"].values() if not math.isinf(g.epsilon)]
    return max(finite) if finite else math.inf


def _sweep_section(paths: list[str], bundles: list[dict[str, Any]], local: LocalData | None) -> list[str]:
    """Metric against ε over several model files of one method: mean and a band over the runs at each ε."""
    if len(bundles) < 2:
        return []
    e = html.escape
    methods = {b["method"] for b in bundles}
    if len(methods) != 1:
        raise ValueError(f"a sweep needs model files of one method, got {sorted(methods)}")
    eps = [_point(b) for b in bundles]
    if any(math.isinf(x) for x in eps):
        raise ValueError("a sweep needs model files with a finite ε (a protected party)")
    evaluations = local.evaluations if local is not None else []
    if evaluations and all(ev is not None for ev in evaluations):
        key, ylabel = "balanced_accuracy", "balanced accuracy / ROC-AUC on your data"
        values = [ev.values[key] for ev in evaluations]
        extra = {"ROC-AUC": [ev.values["roc_auc"] for ev in evaluations]}
    else:
        recorded = [b["metrics"].get("accuracy_on_target_labels") for b in bundles]
        if any(v is None for v in recorded):
            raise ValueError("a sweep needs labelled data: give --data FILE with labels, or model files that recorded "
                             "an accuracy (adapt on labelled data)")
        key, ylabel, values, extra = "accuracy", "accuracy recorded at adapt (in-sample)", [float(v) for v in recorded], {}
    groups: dict[float, list[float]] = {}
    for x, v in zip(eps, values):
        groups.setdefault(x, []).append(v)
    baselines: dict[str, dict[float, list[float]]] = {}
    for name, vals in extra.items():
        for x, v in zip(eps, vals):
            baselines.setdefault(name, {}).setdefault(x, []).append(v)
    if key == "accuracy":
        proto = [b["metrics"].get("prototypes_accuracy") for b in bundles]
        if all(p is not None for p in proto):
            for x, v in zip(eps, proto):
                baselines.setdefault("DP prototypes alone", {}).setdefault(x, []).append(float(v))
    out = ["<h2>Privacy against usefulness (ε sweep)</h2>", _sweep_plot(groups, baselines, ylabel)]
    runs = sorted({len(v) for v in groups.values()})
    if max(runs) < 2:
        out.append('<p class="warn">One run per ε: each run draws fresh noise, so a single run per ε shows noise as '
                   "much as a trend. Adapt several times per ε (each a new release) for a band.</p>")
    if len(groups) < 3:
        out.append(f'<p class="muted">Only {len(groups)} value(s) of ε: add more for a curve.</p>')
    out.append("<table><tr><th>ε</th><th>runs</th><th>mean</th><th>lowest – highest</th></tr>")
    for x in sorted(groups):
        v = groups[x]
        out.append(f"<tr><td class=\"num\">{_eps(x)}</td><td class=\"num\">{len(v)}</td><td class=\"num\">"
                   f"{sum(v) / len(v):.4f}</td><td class=\"num\">{min(v):.4f} – {max(v):.4f}</td></tr>")
    out.append("</table>")
    out.append("<details><summary>the model files</summary><table><tr><th>file</th><th>ε</th><th>value</th></tr>")
    for path, x, v in zip(paths, eps, values):
        out.append(f"<tr><td>{e(Path(path).name)}</td><td class=\"num\">{_eps(x)}</td><td class=\"num\">{v:.4f}</td></tr>")
    out.append("</table></details>")
    return out
