"""``dpadapt report MODEL... --html OUT``: one self-contained HTML page a data officer can read.

The page says who was protected (and who was not, in this setting), the ε / δ each protected party
spent against its budget (from ``--ledger`` when that party's ledger is at hand), the accuracy the
model files recorded beside the baselines recorded with them, and — when several model files of one
method at different ε are given (a sweep) — the plot of accuracy against ε (an inline PNG).
Everything on the page is read from the files; nothing is recomputed from data.
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from typing import Any

#: Metrics shown as accuracies, in this order, with the words on the page.
ACCURACY_METRICS = {
    "accuracy_on_target_labels": "adapted model",
    "prototypes_accuracy": "the released DP class prototypes alone (no refinement on the target)",
}


def _eps(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.4g}"


def _ledger_rows(bundle: dict[str, Any], ledger_path: str | None) -> list[tuple[str, str, str, str]]:
    """(party, spent by this model's releases, spent in total, budget) per protected party."""
    rows = []
    ledger = None
    if ledger_path:
        from dpadapt.privacy.ledger import Ledger

        if not Path(ledger_path).exists():
            raise FileNotFoundError(f"{ledger_path}: no such ledger")
        ledger = Ledger(ledger_path)
    for party, g in bundle["guarantees"].items():
        if math.isinf(g.epsilon):
            continue
        spent_here = f"ε = {_eps(g.epsilon)}, δ = {g.delta:.3g}"
        total, budget = "—", "not in the ledger given" if ledger else "held in that party's ledger (give --ledger)"
        if ledger is not None:
            entries = [e for e in ledger.history(party, None) if e.release_id in bundle["releases"]]
            if entries:
                dataset = entries[0].dataset_id
                total = ledger.spent(party, dataset).words()
                b = ledger.budget(party, dataset)
                budget = f"ε = {b.epsilon:.4g}, δ = {b.delta:.3g}" if b else "no budget set"
        rows.append((party, spent_here, total, budget))
    return rows


def _sweep_plot(points: list[tuple[float, float]], baselines: dict[str, list[tuple[float, float]]]) -> str:
    """Accuracy against the source's ε as an inline PNG (``<img>`` tag)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(5.5, 3.6), dpi=100)
    xs, ys = zip(*sorted(points))
    ax.plot(xs, ys, "o-", label="adapted model")
    for name, pts in baselines.items():
        if pts:
            bx, by = zip(*sorted(pts))
            ax.plot(bx, by, "s--", label=name)
    ax.set_xscale("log")
    ax.set_xticks(sorted(set(xs)))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("ε of the protected party")
    ax.set_ylabel("accuracy on the target's labels")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="accuracy against epsilon" src="data:image/png;base64,{data}">'


def render(paths: list[str], bundles: list[dict[str, Any]], ledger_path: str | None = None) -> str:
    """The HTML page for one model file (or a sweep of model files of one method)."""
    e = html.escape
    main, first = bundles[0], paths[0]
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>dpadapt report: {e(Path(first).name)}</title>",
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #bbb;padding:.3em .6em;text-align:left}"
        ".bad{color:#a00}.ok{color:#060}</style></head><body>",
        f"<h1>Run report: {e(Path(first).name)}</h1>",
        f"<p>Method <b>{e(str(main['method']))}</b>, written by dpadapt {e(str(main['version']))} at "
        f"{e(str(main['created']))}. Authenticity: {e(main['loaded'].authenticity())}.</p>",
        "<h2>Who was protected</h2><table><tr><th>party</th><th>status</th><th>ε</th><th>δ</th>"
        "<th>unit / neighbours</th><th>theorem</th></tr>",
    ]
    for party, g in main["guarantees"].items():
        cls = "ok" if g.valid else "bad"
        parts.append(
            f'<tr><td>{e(party)}</td><td class="{cls}">{e(g.summary())}</td><td>{_eps(g.epsilon)}</td>'
            f"<td>{g.delta:.3g}</td><td>{e(g.unit)} / {e(g.relation)}</td><td>{e(g.theorem or '—')}</td></tr>"
        )
    parts.append("</table>")
    rows = _ledger_rows(main, ledger_path)
    parts.append("<h2>Privacy spent against each budget</h2>")
    if rows:
        parts.append("<table><tr><th>party</th><th>spent by this model's releases</th><th>spent in total on that "
                     "dataset</th><th>budget</th></tr>")
        parts += [f"<tr><td>{e(p)}</td><td>{e(a)}</td><td>{e(b)}</td><td>{e(c)}</td></tr>" for p, a, b, c in rows]
        parts.append("</table>")
    else:
        parts.append("<p>No party spent a finite privacy budget in this model.</p>")
    parts.append("<h2>Accuracy</h2>")
    metrics = main["metrics"]
    shown = [(label, metrics[key]) for key, label in ACCURACY_METRICS.items() if isinstance(metrics.get(key), (int, float))]
    if shown:
        parts.append("<table><tr><th>model</th><th>accuracy on the target's labels</th></tr>")
        parts += [f"<tr><td>{e(label)}</td><td>{value:.4f}</td></tr>" for label, value in shown]
        parts.append("</table>")
    else:
        parts.append("<p>No accuracy recorded (the receiver's data had no labels when it adapted).</p>")
    others = {k: v for k, v in metrics.items() if k not in ACCURACY_METRICS}
    if others:
        parts.append("<p>Other recorded metrics: " + ", ".join(f"{e(k)} = {e(_fmt(v))}" for k, v in others.items()) + "</p>")
    sweep = _sweep(bundles)
    if sweep is not None:
        points, baselines = sweep
        parts.append("<h2>Accuracy against ε</h2>")
        parts.append(_sweep_plot(points, baselines))
        parts.append("<table><tr><th>file</th><th>ε</th><th>accuracy</th></tr>")
        for path, b in zip(paths, bundles):
            eps, acc = _point(b)
            parts.append(f"<tr><td>{e(Path(path).name)}</td><td>{_eps(eps)}</td><td>{acc:.4f}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _point(bundle: dict[str, Any]) -> tuple[float, float]:
    """(ε of the protected party, recorded accuracy) of one model file."""
    finite = [g.epsilon for g in bundle["guarantees"].values() if not math.isinf(g.epsilon)]
    return (max(finite) if finite else math.inf), float(bundle["metrics"].get("accuracy_on_target_labels", math.nan))


def _sweep(bundles: list[dict[str, Any]]):
    """Points of accuracy against ε when several model files of one method with accuracies are given."""
    if len(bundles) < 2:
        return None
    methods = {b["method"] for b in bundles}
    if len(methods) != 1:
        raise ValueError(f"a sweep needs model files of one method, got {sorted(methods)}")
    points = [_point(b) for b in bundles]
    if any(math.isinf(x) or math.isnan(y) for x, y in points):
        raise ValueError("a sweep needs model files with a finite ε and a recorded accuracy (adapt on labelled data)")
    baselines = {label: [(x, float(b["metrics"][key])) for (x, _), b in zip(points, bundles) if key in b["metrics"]]
                 for key, label in ACCURACY_METRICS.items() if key != "accuracy_on_target_labels"}
    return points, baselines
