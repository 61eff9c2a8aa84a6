"""DPOT's CLI (`request --design prototypes` → `release dpot` → `adapt dpot`) against `DPOTAdapter` on one dev pair.

For each (ε, seed): the estimator with ``reproducible_noise=True`` and the CLI's three commands with the same seed and
the same reproducible noise stream (the CLI's own noise is fresh OS entropy; the run patches
``dpadapt.privacy.mechanisms.random_streams`` as tests/test_dpot.py does) — the target accuracies must be equal; then
the CLI as shipped (fresh noise) for the same seeds. δ = 1/(1.2 n_s) as in the DPOT tables.
Writes benchmarks/dpot/results/dpot-cli-agrees-DATASET-SOURCE-TARGET.json.
Run: nice -n 10 env PYTHONPATH=src python benchmarks/dpot/dpot_cli_agrees.py [--dataset googlenet1024 --pair dslr,amazon]
[--eps 1,4] [--seeds 3]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from contextlib import redirect_stdout
from io import StringIO
from pathlib import Path

import numpy as np

from dpadapt.bench.common import cached_pair
from dpadapt.cli.main import main
from dpadapt.cli.party_cmd import load_model
from dpadapt.io import save_table
from dpadapt.privacy import mechanisms
from dpadapt.transport import DPOTAdapter

OUT = Path(__file__).parent / "results"
FRESH = mechanisms.random_streams


def _reproducible(seed=None, **_):
    return FRESH(seed, reproducible_noise=True)


def cli_accuracy(p, folder: Path, eps: float, delta: float, seed: int, classes: str) -> float:
    """The three commands in ``folder`` (files of the pair already there); the model's accuracy on the test rows."""
    run = ["--force", "--ledger", str(folder / "ledger.sqlite")]
    with redirect_stdout(StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # adapt's calibration warning, the same for every run
        assert main(["request", "--data", str(folder / "target.npz"), "--classes", classes, "--n-source", str(len(p.ys)),
                     "--epsilon", str(eps), "--delta", str(delta), "--design", "prototypes",
                     "--out", str(folder / "request.release"), *run]) == 0
        assert main(["release", "dpot", "--data", str(folder / "source.npz"), "--classes", classes, "--request",
                     str(folder / "request.release"), "--epsilon", str(eps), "--delta", str(delta), "--seed", str(seed),
                     "--out", str(folder / "stats.release"), "--quiet", *run]) == 0
        assert main(["adapt", "dpot", "--release", str(folder / "stats.release"), "--own-release",
                     str(folder / "request.release"), "--data", str(folder / "target.npz"),
                     "--out", str(folder / "model.dpadapt"), "--quiet", *run]) == 0
    model = load_model(folder / "model.dpadapt")["model"]
    return 100 * float(np.mean(model.predict(p.Xt_test) == p.yt_test))


def main_(dataset: str, pair: tuple[str, str], eps_list: list[float], seeds: int) -> list[dict]:
    p = cached_pair(dataset, *pair)
    delta = 1.0 / (1.2 * len(p.ys))
    classes = ",".join(str(c) for c in range(p.n_classes))
    folder = Path(tempfile.mkdtemp(prefix="dpot-cli-"))
    save_table(folder / "source.npz", p.Xs, p.ys)
    save_table(folder / "target.npz", p.Xt)
    from dpadapt.privacy.ledger import Ledger, fingerprint

    Ledger(folder / "ledger.sqlite").set_budget("source", fingerprint(folder / "source.npz"), 1e4, 0.5)
    rows = []
    for eps in eps_list:
        for seed in range(seeds):
            t0 = time.perf_counter()
            est = DPOTAdapter(epsilon=eps, delta=delta, classes=tuple(range(p.n_classes)), random_state=seed,
                              reproducible_noise=True).fit_domains(p.Xs, p.ys, p.Xt)
            estimator = 100 * est.score(p.Xt_test, p.yt_test)
            mechanisms.random_streams = _reproducible
            try:
                same_noise = cli_accuracy(p, folder, eps, delta, seed, classes)
            finally:
                mechanisms.random_streams = FRESH
            fresh = cli_accuracy(p, folder, eps, delta, seed, classes)
            rows.append({"dataset": dataset, "pair": "->".join(pair), "epsilon": eps, "seed": seed, "estimator": estimator,
                         "cli_same_noise": same_noise, "cli_fresh_noise": fresh, "seconds": time.perf_counter() - t0})
            print(json.dumps(rows[-1]), flush=True)
    for eps in eps_list:
        sel = [r for r in rows if r["epsilon"] == eps]
        print(f"{'->'.join(pair)} ε={eps:g}: estimator {np.mean([r['estimator'] for r in sel]):.1f}, CLI same noise "
              f"{np.mean([r['cli_same_noise'] for r in sel]):.1f} (max |diff| "
              f"{max(abs(r['estimator'] - r['cli_same_noise']) for r in sel):.2g}), CLI fresh noise "
              f"{np.mean([r['cli_fresh_noise'] for r in sel]):.1f} ± {np.std([r['cli_fresh_noise'] for r in sel]):.1f}")
    return rows


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="googlenet1024")
    ap.add_argument("--pair", default="dslr,amazon", help="a development pair of issue 37 (GoogLeNet D→A: tiny source)")
    ap.add_argument("--eps", default="1,4")
    ap.add_argument("--seeds", type=int, default=3)
    a = ap.parse_args()
    out = main_(a.dataset, tuple(a.pair.split(",")), [float(e) for e in a.eps.split(",")], a.seeds)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"dpot-cli-agrees-{a.dataset}-{a.pair.replace(',', '-')}.json").write_text(json.dumps(out, indent=1))
