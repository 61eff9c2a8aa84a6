"""``dpadapt release discrepancy`` (private target) / ``dpadapt adapt discrepancy`` (public source).

Direction: the *target* is the protected party and the one that releases. The public source
hands its feature file (labels too for ``--algorithm single_stage``) to the target, which runs
the noisy optimisation locally — every iteration needs ∇F̃ of its private second moment — and
releases only q̂ over the source rows (and ŵ for single-stage). The source then fits the
q̂-weighted regression on its labelled rows (post-processing). See :mod:`dpadapt.discrepancy.party`.

    dpadapt release discrepancy --data target.npz --source-data source.npz --r 1.5 \\
        --epsilon 4 --delta 1e-5 --out weights.release
    dpadapt adapt discrepancy --release weights.release --data source.npz --out model.joblib
"""

from __future__ import annotations

import argparse

from dpadapt.cli.methods import AdaptOutcome, MethodCommands, PlannedRelease, register
from dpadapt.discrepancy.party import (
    KIND,
    METHOD,
    PRIVATE_ALGORITHMS,
    adapt_from_weights,
    plan_weights_release,
)
from dpadapt.io import Table, load_table


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source-data", required=True,
                        help="the PUBLIC source file (features; labels needed for --algorithm single_stage)")
    parser.add_argument("--algorithm", choices=PRIVATE_ALGORITHMS, default="frank_wolfe",
                        help="noisy Frank-Wolfe (Alg. 2, default), noisy mirror descent (Alg. 3) or single-stage (Alg. 1)")
    parser.add_argument("--r", type=float, required=True,
                        help="public bound on target row norms; rows are clipped to it (choose it without looking at the target)")
    parser.add_argument("--K", type=int, default=1000, help="iterations (default 1000)")
    parser.add_argument("--lam", type=float, default=1e-3, help="ℓ2 regulariser on q (default 0.001)")
    parser.add_argument("--mu", type=float, default=None, help="softmax parameter μ (default √(K log(m+n)/(8r̂⁴)))")
    parser.add_argument("--Lambda", type=float, default=2.0, help="norm bound on w (default 2)")
    parser.add_argument("--md-variant", choices=("entropic", "pnorm"), default="entropic")
    parser.add_argument("--selection", choices=("last", "uniform", "paper_argmin"), default="last",
                        help="single-stage output (paper_argmin only with --privacy-mode paper)")
    parser.add_argument("--privacy-mode", choices=("sound", "paper"), default="sound")


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    source = load_table(args.source_data)
    planned = plan_weights_release(
        table.X, source.X, args.epsilon, args.delta, algorithm=args.algorithm, y_source=source.y, r=args.r,
        K=args.K, lam=args.lam, mu=args.mu, Lambda=args.Lambda, md_variant=args.md_variant,
        selection=args.selection, privacy_mode=args.privacy_mode, random_state=args.seed,
    )
    return PlannedRelease(planned.guarantee, planned.execute)


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--Lambda", type=float, default=None, help="norm bound on w (default: the one in the release)")
    parser.add_argument("--ridge", type=float, default=0.0, help="ridge term of the second stage (default 0)")


def adapt(args: argparse.Namespace, table: Table, releases: list) -> AdaptOutcome:
    mine = [r for r in releases if r.method == METHOD and r.kind == KIND]
    if len(mine) != 1:
        raise ValueError(f"adapt discrepancy needs exactly one {METHOD}/{KIND} release, got {len(mine)}")
    if table.y is None:
        raise ValueError(f"{table.path}: the source file needs labels")
    model = adapt_from_weights(mine[0], table.X, table.y, Lambda=args.Lambda, ridge=args.ridge)
    metrics = {"source_r2": float(model.score(table.X, table.y))}
    return AdaptOutcome(model=model, guarantees=dict(model.guarantees_), metrics=metrics)


register(MethodCommands(
    name="discrepancy",
    help="private discrepancy minimisation (Bassily, Mohri & Suresh 2023): the target releases weights over the public source",
    add_release_arguments=add_release_arguments,
    plan_release=plan_release,
    add_adapt_arguments=add_adapt_arguments,
    adapt=adapt,
    example_release_args=lambda files: [
        "--data", files["target"], "--source-data", files["source"], "--r", "10", "--K", "50",
    ],
))
