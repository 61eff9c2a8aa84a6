"""Issue 28, item 4: the DP source-only baselines side by side, 5 seeds, ε ∈ {1, 2, 4, 8} and None.

Rows (all read the labelled source only; the target is only scored):

* ``dp-ncm`` — :class:`~dpadapt.classstats.DPNearestClassMean`;
* ``dp-lr-old`` — :class:`~dpadapt.classstats.DPLogisticRegression` with the pre-issue-28 optimiser
  (100 plain noisy GD steps, step 2, clip 0.5);
* ``dp-lr`` — the same class with its issue-28 defaults (heavy ball, flow time capped by the public
  noise level; chosen by ``benchmarks/dp_source_only/dp_source_only_selection.py``);
* ``dp-lsq`` — :class:`~dpadapt.classstats.DPLeastSquares` (AdaSSP ridge with the public λ̃_min = 0);
* ``dp-lsq-adassp`` — the same with AdaSSP's private λ_min on a third of the budget (``eigen_share=1/3``),
  run only where n ≥ d (elsewhere λ_min = 0 is public and the row is ``dp-lsq`` itself);
* ``lr-mapped`` — non-private: scikit-learn's ``LogisticRegression`` on the same unit-norm mapped rows
  (log1p for counts) with an intercept, C ∈ {0.01, …, 1000} by 3-fold stratified CV on the source;
* ``source-only`` — non-private: the library's :class:`~dpadapt.baselines.SourceOnly` (scaling and C by
  CV on the source), the matrix's ``source-only`` row.

Metrics: accuracy; PhysioNet also ROC-AUC and balanced accuracy (its prevalence is 5–19 %). Private
rows use ``reproducible_noise=True`` (numpy's sampler: the same Gaussian, guarantees marked invalid) so
that a 12.5 M-value bow5000 release takes seconds, not the vetted sampler's ~15 minutes.

    python benchmarks/dp_source_only/dp_source_only_table.py dev      # → benchmarks/results/dp-source-only-dev.{json,md}
    python benchmarks/dp_source_only/dp_source_only_table.py report   # once, after the selection rule's commit
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from dp_source_only_pairs import FAMILIES, scores, sources
from dpadapt.classstats import DPLeastSquares, DPLogisticRegression, DPNearestClassMean
from dpadapt.classstats.adapt import row_map

EPSILONS = (1.0, 2.0, 4.0, 8.0, None)
SEEDS = (0, 1, 2, 3, 4)
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0)
RESULTS = Path(__file__).parent / "results"

PRIVATE = {
    "dp-ncm": (DPNearestClassMean, {}),
    "dp-lr-old": (DPLogisticRegression, {"steps": 100, "momentum": 0.0, "time_scale": None}),
    "dp-lr": (DPLogisticRegression, {}),
    "dp-lsq": (DPLeastSquares, {}),
    "dp-lsq-adassp": (DPLeastSquares, {"eigen_share": 1.0 / 3.0}),
}
PUBLIC = ("lr-mapped", "source-only")


class MappedLR:
    """scikit-learn's logistic regression on the estimators' public row map, C by CV on the source."""

    def __init__(self, log1p: bool):
        self.log1p = log1p

    def fit(self, X, y):
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GridSearchCV, StratifiedKFold

        folds = StratifiedKFold(3, shuffle=True, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.search_ = GridSearchCV(LogisticRegression(max_iter=5000), {"C": list(C_GRID)}, cv=folds).fit(row_map(X, self.log1p), y)
        return self

    def predict(self, X):
        return self.search_.predict(row_map(X, self.log1p))

    def decision_function(self, X):
        return self.search_.decision_function(row_map(X, self.log1p))


def _fit_public(name: str, src):
    if name == "lr-mapped":
        return MappedLR(src.feature_type == "counts").fit(src.Xs, src.ys)
    from dpadapt.baselines import SourceOnly

    return SourceOnly(random_state=0).fit_domains(src.Xs, src.ys)


def run_source(src, rows: list[str]) -> list[dict]:
    out = []
    n, d = src.Xs.shape
    for name in rows:
        if name in PUBLIC:
            t0 = time.perf_counter()
            model = _fit_public(name, src)
            out += [{"task": task, "source": src.name, "family": src.family, "row": name, "epsilon": None, "seed": 0,
                     "seconds": time.perf_counter() - t0, **scores(model, Xt, yt)} for task, Xt, yt in src.targets]
            continue
        cls, params = PRIVATE[name]
        if name == "dp-lsq-adassp" and n < d:
            continue  # λ_min = 0 is public: the row is dp-lsq itself
        for eps in EPSILONS:
            for seed in SEEDS if eps is not None else SEEDS[:1]:  # the noise-free pipeline is deterministic
                t0 = time.perf_counter()
                model = cls(epsilon=eps, delta=None if eps is None else src.delta, classes=tuple(range(src.n_classes)),
                            feature_type=src.feature_type, random_state=seed, reproducible_noise=True, **params).fit(src.Xs, src.ys)
                secs = time.perf_counter() - t0
                out += [{"task": task, "source": src.name, "family": src.family, "row": name, "epsilon": eps, "seed": seed,
                         "seconds": secs, **scores(model, Xt, yt)} for task, Xt, yt in src.targets]
    return out


def _cell(vals: list[float]) -> str:
    if not vals:
        return "—"
    se = np.std(vals, ddof=1) / np.sqrt(len(vals)) if len(vals) > 1 else 0.0
    return f"{np.mean(vals):.1f}" + (f" ± {se:.1f}" if len(vals) > 1 else "")


def markdown(records: list[dict], split: str) -> str:
    """One table per metric: task × ε, a column per row (mean ± standard error over seeds)."""
    rows = [r for r in (*PRIVATE, *PUBLIC) if any(x["row"] == r for x in records)]
    lines = [f"# DP source-only baselines, {split} pairs (issue 28, item 4)", "",
             f"{len(SEEDS)} seeds (noise-free and non-private rows: one deterministic fit); mean ± standard error, in %.",
             "Private rows: `reproducible_noise=True` (numpy's Gaussian sampler; guarantees marked invalid).", ""]
    tasks = list(dict.fromkeys(r["task"] for r in records))
    for metric in ("accuracy", "auc", "balanced_accuracy"):
        tasks_m = [t for t in tasks if any(r["task"] == t and metric in r for r in records)]
        if metric != "accuracy":
            tasks_m = [t for t in tasks_m if t.startswith("physionet")]
        if not tasks_m:
            continue
        lines += [f"## {metric}", "", "| pair | ε | " + " | ".join(rows) + " |", "|---|---|" + "---|" * len(rows)]
        for task in tasks_m:
            for eps in EPSILONS:
                cells = []
                for row in rows:
                    if row in PUBLIC and eps is not None:
                        cells.append("")
                        continue
                    vals = [r[metric] for r in records if r["task"] == task and r["row"] == row and r["epsilon"] == eps]
                    cells.append(_cell(vals))
                lines.append(f"| {task} | {'∞' if eps is None else f'{eps:g}'} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["## family means (accuracy; PhysioNet ROC-AUC)", "", "| family | ε | " + " | ".join(rows) + " |",
              "|---|---|" + "---|" * len(rows)]
    for fam in (*FAMILIES, "decaf6"):
        metric = "auc" if fam == "physionet" else "accuracy"
        for eps in EPSILONS:
            cells = []
            for row in rows:
                per_task = {}
                for r in records:
                    if r["family"] == fam and r["row"] == row and r["epsilon"] == eps:
                        per_task.setdefault(r["task"], []).append(r[metric])
                cells.append(f"{np.mean([np.mean(v) for v in per_task.values()]):.1f}" if per_task else "")
            if any(cells):
                lines.append(f"| {fam} | {'∞' if eps is None else f'{eps:g}'} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    split = argv[0] if argv else "dev"
    rows = argv[1:] or [*PRIVATE, *PUBLIC]
    out_json, out_md = RESULTS / f"dp-source-only-{split}.json", RESULTS / f"dp-source-only-{split}.md"
    records = json.loads(out_json.read_text())["records"] if out_json.exists() else []
    done = {(r["source"], r["row"]) for r in records}
    for src in sources(split):
        todo = [r for r in rows if (src.name, r) not in done]
        t0 = time.perf_counter()
        records += run_source(src, todo)
        print(f"{src.name}: {', '.join(todo) or 'done'} {time.perf_counter() - t0:.0f}s", flush=True)
        out_json.write_text(json.dumps({"doc": __doc__, "records": records}, indent=0, default=lambda x: None if x is None else float(x)))
        out_md.write_text(markdown(records, split))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
