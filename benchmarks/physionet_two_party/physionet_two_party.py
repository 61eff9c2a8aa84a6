"""PhysioNet 2012 ICU units as hospitals: the two-party CLI from raw CSV through the public schema, all 12 pairs.

    OMP_NUM_THREADS=1 python benchmarks/physionet_two_party/physionet_two_party.py [--seeds 5] [--epsilon 1 4] [--pairs ccu:csru ...]
        [--out benchmarks/physionet_two_party/results/physionet-two-party] [--quick]

For every ordered pair of units (source → target) the script writes, from the npz files of
``$DPADAPT_DATA/physionet2012`` (X, y, record_id), the CSV each hospital would export into its own folder:
``source/source.csv`` (labelled), ``target/target.csv`` (no label column) and ``target/target_labelled.csv``
(the target's labels, read only by ``score``). Then, exactly as two parties would, with the dpadapt CLI
(the entry point ``dpadapt.cli.main.main``, in this process, each party in its own folder):

1. source: ``keys new`` (once per source unit), ``budget set`` in ITS ledger (source/ledger.sqlite);
   the public key is copied to the target folder (the key exchange);
2. per ε — target: ``request --schema … --n-source N`` (its release request, a disclosure of its own rows);
   per seed — source: ``release sound --request … --schema … --sign …`` (charged to its ledger); target:
   ``adapt sound --release … --own-release REQUEST --trust source.pub --schema …`` (its own ledger);
   target: ``score --json`` on its labelled copy.

Beside it, on the same mapped features (the schema's map of the same CSVs), at the same (ε, δ = 1e-5):
DP nearest class mean and DP logistic regression (source only: :mod:`dpadapt.classstats.baselines`), and
non-private ``LogisticRegression(max_iter=5000)`` on the mapped source rows. Metrics: ROC-AUC and balanced
accuracy at threshold 0.5 (:mod:`dpadapt.metrics`), mean ± std over seeds with fresh noise.

``sound`` is whatever the CLI's default method is at the time of the run: rerun this script after the
default changes (nothing here depends on its internals). Nothing is selected or tuned here; the results
are reported as they come. The MANIFEST's non-private reference (median imputation + standardisation +
LR on the raw features) is quoted in the write-up beside ours.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

UNITS = ("ccu", "csru", "micu", "sicu")
SCHEMA = Path(__file__).resolve().parents[2] / "examples" / "physionet2012.schema.toml"
DELTA = 1e-5
METHODS = ("sound (CLI, two parties)", "DP-NCM (source only)", "DP-LR (source only)", "non-private LR (source only)")


def write_csv(npz: Path, path: Path, labelled: bool) -> int:
    """The unit's export: RecordID, the 111 features (empty cell = NaN), and the label when ``labelled``."""
    import pandas as pd

    with np.load(npz) as z:
        frame = pd.DataFrame(z["X"].astype(np.float64), columns=[str(n) for n in z["feature_names"]])
        frame.insert(0, "RecordID", z["record_id"])
        if labelled:
            frame["In-hospital_death"] = z["y"]
    frame.to_csv(path, index=False, float_format="%.7g")
    return len(frame)


def cli(argv: list[str], cwd: Path) -> str:
    """Run ``dpadapt ARGV`` as the party in ``cwd``; its stdout (raises on a non-zero exit)."""
    from dpadapt.cli.main import main

    here = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(here)
    if code != 0:
        raise RuntimeError(f"dpadapt {' '.join(argv)} (in {cwd}) exited {code}: {err.getvalue().strip()}")
    return out.getvalue()


def baselines(src_csv: Path, tgt_csv: Path, epsilon: float, seed: int) -> dict[str, dict[str, float]]:
    """DP-NCM and DP-LR at (ε, δ), on the schema's map of the same CSVs (source only)."""
    from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean
    from dpadapt.metrics import evaluate
    from dpadapt.tables import load_schema, read_table

    schema = load_schema(SCHEMA)
    with contextlib.redirect_stderr(io.StringIO()):
        s, t = read_table(src_csv, schema), read_table(tgt_csv, schema)
    out = {}
    for name, cls in (("DP-NCM (source only)", DPNearestClassMean), ("DP-LR (source only)", DPLogisticRegression)):
        est = cls(epsilon=epsilon, delta=DELTA, classes=schema.classes, random_state=seed).fit(s.X, s.labels)
        e = evaluate(t.y, est.predict_proba(t.X), schema.classes, n_boot=0)
        out[name] = {"roc_auc": e.values["roc_auc"], "balanced_accuracy": e.values["balanced_accuracy"]}
    return out


def nonprivate_lr(src_csv: Path, tgt_csv: Path) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression

    from dpadapt.metrics import evaluate
    from dpadapt.tables import load_schema, read_table

    schema = load_schema(SCHEMA)
    with contextlib.redirect_stderr(io.StringIO()):
        s, t = read_table(src_csv, schema), read_table(tgt_csv, schema)
    proba = LogisticRegression(max_iter=5000).fit(s.X, s.y).predict_proba(t.X)
    e = evaluate(t.y, proba, schema.classes, n_boot=0)
    return {"roc_auc": e.values["roc_auc"], "balanced_accuracy": e.values["balanced_accuracy"]}


def run_pair(root: Path, data: Path, source: str, target: str, epsilons: list[float], seeds: int) -> list[dict]:
    """Both parties' folders for one pair, and every (ε, seed) run."""
    pair = root / f"{source}-{target}"
    src, tgt, exchange = pair / "source", pair / "target", pair / "exchange"
    for folder in (src, tgt, exchange):
        folder.mkdir(parents=True)
    n_s = write_csv(data / f"{source}.npz", src / "source.csv", labelled=True)
    n_t = write_csv(data / f"{target}.npz", tgt / "target.csv", labelled=False)
    write_csv(data / f"{target}.npz", tgt / "target_labelled.csv", labelled=True)
    S = ["--schema", str(SCHEMA)]
    cli(["keys", "new", "--out", "keys"], src)
    shutil.copy(src / "keys" / "dpadapt_ed25519.pub", tgt / "source.pub")  # the key exchange (out of band)
    total = sum(epsilons) * seeds
    cli(["budget", "set", "--party", "source", "--data", "source.csv", *S, "--epsilon", f"{total:g}",
         "--delta", "1e-4", "--ledger", "ledger.sqlite"], src)
    rows = []
    lr = nonprivate_lr(src / "source.csv", tgt / "target_labelled.csv")
    rows.append({"source": source, "target": target, "method": METHODS[3], "epsilon": None, "seed": None,
                 "n_source": n_s, "n_target": n_t, **lr})
    for eps in epsilons:
        request = exchange / f"request-e{eps:g}.release"  # the target designs the release on its own rows
        cli(["request", "--data", "target.csv", *S, "--n-source", str(n_s), "--epsilon", f"{eps:g}", "--delta",
             f"{DELTA:g}", "--ledger", "ledger.sqlite", "--out", str(request)], tgt)
        for seed in range(seeds):
            name = f"e{eps:g}-s{seed}"
            release = exchange / f"{name}.release"
            cli(["release", "sound", "--request", str(request), "--data", "source.csv", *S, "--epsilon", f"{eps:g}",
                 "--delta", f"{DELTA:g}", "--seed", str(seed), "--sign", "keys/dpadapt_ed25519.key",
                 "--ledger", "ledger.sqlite", "--out", str(release)], src)
            cli(["adapt", "sound", "--release", str(release), "--own-release", str(request), "--trust", "source.pub",
                 "--data", "target.csv", *S, "--ledger", "ledger.sqlite", "--out", f"{name}.dpadapt"], tgt)
            scored = json.loads(cli(["score", "--model", f"{name}.dpadapt", "--data", "target_labelled.csv", *S,
                                     "--json", "--bootstrap", "0"], tgt))["as adapted"]["values"]
            rows.append({"source": source, "target": target, "method": METHODS[0], "epsilon": eps, "seed": seed,
                         "n_source": n_s, "n_target": n_t, "roc_auc": scored["roc_auc"],
                         "balanced_accuracy": scored["balanced_accuracy"]})
            for method, values in baselines(src / "source.csv", tgt / "target_labelled.csv", eps, seed).items():
                rows.append({"source": source, "target": target, "method": method, "epsilon": eps, "seed": seed,
                             "n_source": n_s, "n_target": n_t, **values})
    return rows


def table(rows: list[dict], metric: str, epsilons: list[float]) -> str:
    """Markdown: one line per pair, a column per (method, ε): mean ± std over seeds."""
    cols = [(m, e) for e in epsilons for m in METHODS[:3]] + [(METHODS[3], None)]
    head = "| pair | " + " | ".join(f"{m.split(' (')[0]} ε={e:g}" if e else f"{m.split(' (')[0]}" for m, e in cols) + " |"
    lines = [head, "|" + "---|" * (len(cols) + 1)]
    pairs = sorted({(r["source"], r["target"]) for r in rows}, key=lambda p: (UNITS.index(p[0]), UNITS.index(p[1])))
    means = {c: [] for c in cols}
    for s, t in pairs:
        cells = []
        for m, e in cols:
            v = [r[metric] for r in rows if (r["source"], r["target"], r["method"], r["epsilon"]) == (s, t, m, e)]
            means[(m, e)].append(float(np.mean(v)) if v else np.nan)
            cells.append(f"{np.mean(v):.3f} ± {np.std(v):.3f}" if len(v) > 1 else (f"{v[0]:.3f}" if v else "—"))
        lines.append(f"| {s}→{t} | " + " | ".join(cells) + " |")
    lines.append("| **mean of pairs** | " + " | ".join(f"**{np.nanmean(means[c]):.3f}**" for c in cols) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 4.0])
    p.add_argument("--pairs", nargs="+", default=None, help="source:target pairs (default: all 12)")
    p.add_argument("--quick", action="store_true", help="two pairs, one seed (a development run)")
    p.add_argument("--out", default=None, help="write OUT.json (rows) and OUT.md (tables)")
    p.add_argument("--keep", default=None, help="keep the parties' folders here (default: a temporary folder)")
    args = p.parse_args(argv)
    from dpadapt.datasets import find_data_root

    data = find_data_root() / "physionet2012"
    pairs = [tuple(x.split(":")) for x in args.pairs] if args.pairs else [(s, t) for s in UNITS for t in UNITS if s != t]
    seeds = args.seeds
    if args.quick:
        pairs, seeds = pairs[:2] if args.pairs else [("micu", "ccu"), ("csru", "sicu")], 1
    rows: list[dict] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="physionet-two-party-") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        for s, t in pairs:
            t0 = time.perf_counter()
            rows += run_pair(root, data, s, t, args.epsilon, seeds)
            print(f"{s}→{t}: done in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    text = [f"PhysioNet 2012 set A, {len(pairs)} pairs, {seeds} seed(s), δ = {DELTA:g}; "
            f"{time.perf_counter() - start:.0f} s", "", "ROC-AUC (mean ± std over seeds)", "",
            table(rows, "roc_auc", args.epsilon), "", "Balanced accuracy at threshold 0.5", "",
            table(rows, "balanced_accuracy", args.epsilon)]
    print("\n".join(text))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
        out.with_suffix(".md").write_text("\n".join(text) + "\n")
        print(f"\nwritten: {out.with_suffix('.json')}, {out.with_suffix('.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
