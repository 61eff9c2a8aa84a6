"""Cleveland (labelled, protected) → Hungary (unlabelled) through the two-party CLI with a declared schema.

The rule, fixed before this script was first run (issue 21) and not changed after:

* data: the raw UCI exports in ``../shared/data/uci_heart_disease/raw/`` as published (no header, ``?``
  cells), read through ``examples/heart.schema.toml`` (public clinical ranges / codes, written from
  clinical knowledge, not from either site's rows);
* method: ``dpadapt request --design prototypes`` (Hungary, one request per ε) → ``dpadapt release dpot``
  (Cleveland, δ = 1e-5) → ``dpadapt adapt dpot`` (Hungary), every option at its default; nothing tuned —
  Hungary's labels are used only to score (until issue 37 the method was the class-statistics protocol,
  ``dpadapt basis`` → ``release dpot --basis``, k = 20, refinement ``ot``);
* ε ∈ {0.5, 1, 2, 4, 8}; each ε repeated ``REPEATS`` times (fresh noise each time); mean ± std;
* baselines at the same ε and δ, same map: DP source-only ``DPLogisticRegression`` and
  ``DPNearestClassMean`` (defaults, ``classes=("healthy", "disease")``), and the non-private ones:
  source-only scikit-learn ``LogisticRegression()`` (defaults) and the same pipeline without noise
  (``DPOTAdapter(epsilon=None)``).

Run: ``python benchmarks/heart_two_party/heart_two_party.py [--repeats 5] [--out benchmarks/heart_two_party/README.md]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "examples" / "heart.schema.toml"
EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
DELTA = 1e-5


def _cli(argv: list[str]) -> str:
    from dpadapt.cli.main import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(argv)
    if status != 0:
        raise RuntimeError(f"dpadapt {' '.join(argv)} exited {status}")
    return buf.getvalue()


def run(raw: Path, repeats: int) -> dict:
    from sklearn.linear_model import LogisticRegression

    from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean
    from dpadapt.tables import load_schema, read_table
    from dpadapt.transport import DPOTAdapter

    schema = load_schema(SCHEMA)
    src = read_table(raw / "processed.cleveland.data", schema)
    tgt = read_table(raw / "processed.hungarian.data", schema)
    names = np.asarray(schema.classes)
    out: dict = {"n_source": len(src.y), "n_target": len(tgt.y), "rows": []}
    lr = LogisticRegression().fit(src.X, src.y)
    out["source_only_nonprivate"] = float(np.mean(lr.predict(tgt.X) == tgt.y))
    np_da = DPOTAdapter(epsilon=None, classes=tuple(names), random_state=0).fit_domains(src.X, names[src.y], tgt.X)
    out["dpot_nonprivate"] = float(np.mean(np_da.predict(tgt.X) == names[tgt.y]))
    S = ["--schema", str(SCHEMA)]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        ledger = ["--ledger", str(t / "ledger.sqlite")]
        _cli(["budget", "set", "--party", "source", "--data", str(raw / "processed.cleveland.data"), *S,
              "--epsilon", "1000", "--delta", "1e-4", *ledger])
        for eps in EPSILONS:
            acc, dplr, dpncm, secs = [], [], [], []
            request = t / f"r{eps}.release"
            _cli(["request", "--data", str(raw / "processed.hungarian.data"), *S, "--n-source", str(len(src.y)),
                  "--epsilon", str(eps), "--delta", str(DELTA), "--design", "prototypes", "--out", str(request)])
            for r in range(repeats):
                start = time.perf_counter()
                rel, model = t / f"s{eps}_{r}.release", t / f"m{eps}_{r}.dpadapt"
                _cli(["release", "dpot", "--request", str(request), "--data", str(raw / "processed.cleveland.data"),
                      *S, "--epsilon", str(eps), "--delta", str(DELTA), "--out", str(rel), *ledger])
                text = _cli(["adapt", "dpot", "--release", str(rel), "--own-release", str(request),
                             "--data", str(raw / "processed.hungarian.data"), *S, "--out", str(model)])
                secs.append(time.perf_counter() - start)
                acc.append(float(re.search(r"accuracy_on_target_labels = (\d\.\d+)", text).group(1)))
                kw = dict(epsilon=eps, delta=DELTA, classes=tuple(names))
                dplr.append(float(np.mean(DPLogisticRegression(**kw).fit(src.X, names[src.y]).predict(tgt.X) == names[tgt.y])))
                dpncm.append(float(np.mean(DPNearestClassMean(**kw).fit(src.X, names[src.y]).predict(tgt.X) == names[tgt.y])))
            out["rows"].append({"epsilon": eps, "adapted": acc, "dp_logreg": dplr,
                                "dp_ncm": dpncm, "seconds": secs})
    return out


def table(res: dict, repeats: int) -> str:
    def ms(v):
        return f"{np.mean(v):.3f} ± {np.std(v):.3f}"

    lines = [
        f"Cleveland ({res['n_source']} rows, protected) → Hungary ({res['n_target']} rows), accuracy on Hungary's "
        f"labels, mean ± std over {repeats} runs (fresh noise), δ = {DELTA:g}.",
        "",
        "| ε | DPOT, two-party CLI | DP source-only logreg | DP source-only NCM |",
        "|---|---|---|---|",
    ]
    for row in res["rows"]:
        lines.append(f"| {row['epsilon']:g} | {ms(row['adapted'])} | {ms(row['dp_logreg'])} | {ms(row['dp_ncm'])} |")
    lines += [
        f"| ∞ (non-private) | {res['dpot_nonprivate']:.3f} (same pipeline, no noise) | "
        f"source-only LogisticRegression: {res['source_only_nonprivate']:.3f} | |",
    ]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--raw", default=str(ROOT.parent / "shared" / "data" / "uci_heart_disease" / "raw"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--out", default=None, help="write the Markdown table here")
    args = p.parse_args()
    res = run(Path(args.raw), args.repeats)
    text = table(res, args.repeats)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
