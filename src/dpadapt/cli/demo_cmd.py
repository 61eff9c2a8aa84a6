"""``dpadapt demo``: the two-party workflow end to end, in two separate processes exchanging files.

Generates a small two-domain Gaussian-blobs classification problem with a domain shift, gives
the labelled source half to a "source" party and the unlabelled target half to a "target"
party (each with its own folder and its own privacy ledger), then runs, as separate processes,
exactly the commands a user would type in two terminals::

    source$ dpadapt budget set --party source --data source.npz --epsilon ... --delta ...
    source$ dpadapt release METHOD --data source.npz --epsilon ... --delta ... --out ../exchange/source.release
    target$ dpadapt report ../exchange/source.release
    target$ dpadapt adapt METHOD --release ../exchange/source.release --data target.npz --out model.dpadapt
    target$ dpadapt report model.dpadapt
    source$ dpadapt release METHOD ...          (a second release: refused, the budget is spent)
    source$ dpadapt budget show --history       (and the target's, which released nothing)

and prints the target accuracy of the adapted model on held-out target rows.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from dpadapt.cli.main import add_command

#: Method arguments the demo uses unless --release-args / --adapt-args are given: small,
#: fast settings for the generated 20-feature problem (not tuned on the held-out rows).
DEMO_ARGS: dict[str, tuple[str, str]] = {
    method: ("--classes 0,1,2 --request ../exchange/request.release", "--own-release ../exchange/request.release")
    for method in ("dpot", "sound")
}
#: Methods whose (unprotected) target first sends its release request (`dpadapt request`), with the design it asks for.
REQUEST_FIRST = {"dpot": "prototypes", "sound": "auto"}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, _ = add_command(sub, "demo", __doc__.split("\n\n")[0])
    p.add_argument("--method", default="dpot", help="registered method to run (default dpot)")
    p.add_argument("--workdir", help="folder for both parties' files (default: a new temporary folder)")
    p.add_argument("--epsilon", type=float, default=8.0, help="ε of the source release (default 8)")
    p.add_argument("--delta", type=float, default=1e-5, help="δ of the source release (default 1e-5)")
    p.add_argument("--budget", type=float, default=None, help="source budget ε (default 1.5 × --epsilon: a second release is refused)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--release-args", default=None, help="method arguments for `release` (one quoted string; default: the demo's)")
    p.add_argument("--adapt-args", default=None, help="method arguments for `adapt` (one quoted string; default: the demo's)")
    p.set_defaults(func=run)


def run(args) -> int:
    from dpadapt.datasets.synthetic import make_shifted_blobs
    from dpadapt.io import save_table

    from dpadapt.cli.methods import methods

    registered = methods()
    if args.method not in registered:
        names = ", ".join(registered) or "none"
        raise ValueError(f"method {args.method!r} is not registered in this installation (registered: {names})")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="dpadapt-demo-")).resolve()
    src, tgt, exchange = workdir / "source", workdir / "target", workdir / "exchange"
    for d in (src, tgt, exchange):
        d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    Xs, ys, Xt, yt = make_shifted_blobs(rng)
    half = Xt.shape[0] // 2
    save_table(src / "source.npz", Xs, ys)
    save_table(tgt / "target.npz", Xt[:half])  # the target party's unlabelled rows
    save_table(tgt / "target_test.npz", Xt[half:], yt[half:])  # held out, for the accuracy only
    budget = args.budget or 1.5 * args.epsilon
    print(f"Two-party demo in {workdir}")
    print(f"  source party: {src} ({Xs.shape[0]} labelled rows, {Xs.shape[1]} features, 3 classes)")
    print(f"  target party: {tgt} ({half} unlabelled rows; {Xt.shape[0] - half} labelled rows held out for the accuracy)")
    print("  each party has its own privacy ledger (ledger.sqlite in its folder, via $DPADAPT_LEDGER)")
    release_file = "../exchange/source.release"
    default_release, default_adapt = DEMO_ARGS.get(args.method, ("", ""))
    method_release = shlex.split(default_release if args.release_args is None else args.release_args)
    method_adapt = shlex.split(default_adapt if args.adapt_args is None else args.adapt_args)
    steps = [
        *([("target", ["request", "--data", "target.npz", "--classes", "0,1,2", "--n-source", str(Xs.shape[0]),
                       "--epsilon", f"{args.epsilon:g}", "--delta", f"{args.delta:g}",
                       "--design", REQUEST_FIRST[args.method], "--out", "../exchange/request.release"])]
          if args.method in REQUEST_FIRST and args.release_args is None else []),
        ("source", ["budget", "set", "--party", "source", "--data", "source.npz", "--label", "source.npz",
                    "--epsilon", f"{budget:g}", "--delta", f"{args.delta:g}"]),
        ("source", ["release", args.method, "--data", "source.npz", "--epsilon", f"{args.epsilon:g}",
                    "--delta", f"{args.delta:g}", "--out", release_file, "--seed", str(args.seed), *method_release]),
        ("target", ["report", release_file]),
        ("target", ["adapt", args.method, "--release", release_file, "--data", "target.npz",
                    "--out", "model.dpadapt", "--seed", str(args.seed), *method_adapt]),
        ("target", ["report", "model.dpadapt"]),
    ]
    for party, argv in steps:
        if _step(party, argv, src if party == "source" else tgt) != 0:
            print(f"\ndemo stopped: the {party} step failed", file=sys.stderr)
            return 1
    accuracy, baseline = _evaluate(tgt / "model.dpadapt", tgt / "target_test.npz", Xs, ys)
    dp_ncm, dp_lr = _dp_source_only(Xs, ys, tgt / "target_test.npz", args)
    print("\n== Result (target party, on its held-out labelled rows) ==")
    print(f"  target accuracy of the adapted model ({args.method}, source ε = {args.epsilon:g}): {accuracy:.3f}")
    print(f"  for reference, at the same (ε, δ), DP source-only nearest class mean: {dp_ncm:.3f}; "
          f"DP source-only logistic regression (noisy GD): {dp_lr:.3f}")
    print(f"  for reference, non-private source-only logistic regression: {baseline:.3f}")
    if accuracy < max(dp_ncm, dp_lr):
        print("  (below a DP source-only baseline at the same budget: adaptation did not pay here)")
    if accuracy < baseline:
        print("  (below the non-private baseline: a record-level guarantee for every source row costs more noise than\n"
              "   this small problem can absorb at this ε — the price measured in benchmarks/*/README.md, not hidden here)")
    second = ["release", args.method, "--data", "source.npz", "--epsilon", f"{args.epsilon:g}", "--delta",
              f"{args.delta:g}", "--out", "../exchange/source-2.release", *method_release]
    print("\n== A second release by the source exceeds its budget and is refused ==")
    _step("source", second, src)
    print("\n== Both parties' privacy ledgers ==")
    _step("source", ["budget", "show", "--history"], src)
    _step("target", ["budget", "show", "--history"], tgt)
    print(f"\nAll files are in {workdir}; run the same commands yourself in two terminals (one per party folder).")
    return 0


def _step(party: str, argv: list[str], cwd: Path) -> int:
    print(f"\n[{party}] $ dpadapt {shlex.join(argv)}", flush=True)
    env = dict(os.environ, DPADAPT_LEDGER=str(cwd / "ledger.sqlite"))
    done = subprocess.run([sys.executable, "-m", "dpadapt.cli.main", *argv], cwd=cwd, env=env, text=True, capture_output=True, check=False)
    out = (done.stdout + done.stderr).rstrip()
    if out:
        print("\n".join("    " + line for line in out.splitlines()), flush=True)
    return done.returncode


def _dp_source_only(Xs: np.ndarray, ys: np.ndarray, test_path: Path, args) -> tuple[float, float]:
    """DP source-only baselines at the demo's (ε, δ), no adaptation (reference numbers)."""
    from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean
    from dpadapt.io import load_table

    test = load_table(test_path)
    kw = dict(epsilon=args.epsilon, delta=args.delta, classes=tuple(range(int(ys.max()) + 1)), random_state=args.seed)
    return (DPNearestClassMean(**kw).fit(Xs, ys).score(test.X, test.y),
            DPLogisticRegression(**kw).fit(Xs, ys).score(test.X, test.y))


def _evaluate(model_path: Path, test_path: Path, Xs: np.ndarray, ys: np.ndarray) -> tuple[float, float]:
    from sklearn.linear_model import LogisticRegression

    from dpadapt.cli.party_cmd import load_model
    from dpadapt.io import load_table

    test = load_table(test_path)
    model = load_model(model_path)["model"]
    accuracy = float(np.mean(np.asarray(model.predict(test.X)) == test.y))
    baseline = float(LogisticRegression(max_iter=1000).fit(Xs, ys).score(test.X, test.y))
    return accuracy, baseline
