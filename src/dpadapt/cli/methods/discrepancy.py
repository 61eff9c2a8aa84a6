"""``dpadapt release discrepancy`` (private target) / ``dpadapt adapt discrepancy`` (public source).

Direction: the *target* is the protected party and the one that releases. The public source
hands its feature file (labels too for ``--algorithm single_stage``) to the target, which runs
the noisy optimisation locally — every iteration needs ∇F̃ of its private second moment — and
releases only q̂ over the source rows (and ŵ for single-stage). The source then fits the
q̂-weighted regression on its labelled rows (post-processing). See :mod:`dpadapt.discrepancy.party`.

    dpadapt release discrepancy --data target.npz --source-data source.npz --r 1.5 \\
        --epsilon 4 --delta 1e-5 --out weights.release
    dpadapt adapt discrepancy --release weights.release --data source.npz --out model.dpadapt
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dpadapt.cli.config_options import add_config_options
from dpadapt.cli.methods import AdaptOutcome, PlannedRelease, register_module
from dpadapt.configs.discrepancy import DiscrepancyConfig

if TYPE_CHECKING:
    from dpadapt.io import Table


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--source-data", required=True,
                        help="the PUBLIC source file (features; labels needed for --algorithm single_stage)")
    add_config_options(parser, DiscrepancyConfig,
                       ("algorithm", "r", "K", "lam", "mu", "Lambda", "md_variant", "selection", "privacy_mode"),
                       defaults={"K": 1000}, required=("r",))


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    from dpadapt.discrepancy.party import plan_weights_release
    from dpadapt.io import load_table

    source = load_table(args.source_data)
    planned = plan_weights_release(
        table.X, source.X, args.epsilon, args.delta, algorithm=args.algorithm, y_source=source.y, r=args.r,
        K=args.K, lam=args.lam, mu=args.mu, Lambda=args.Lambda, md_variant=args.md_variant,
        selection=args.selection, privacy_mode=args.privacy_mode, random_state=args.seed,
    )
    return PlannedRelease(planned.guarantee, planned.execute)


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    # Lambda=None: the norm bound stated in the release
    add_config_options(parser, DiscrepancyConfig, ("Lambda", "ridge"), defaults={"Lambda": None})


def adapt(args: argparse.Namespace, table: Table, releases: list) -> AdaptOutcome:
    from dpadapt.discrepancy.party import KIND, METHOD, adapt_from_weights

    mine = [r for r in releases if r.method == METHOD and r.kind == KIND]
    if len(mine) != 1:
        raise ValueError(f"adapt discrepancy needs exactly one {METHOD}/{KIND} release, got {len(mine)}")
    if table.y is None:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    model = adapt_from_weights(mine[0], table.X, table.y, Lambda=args.Lambda, ridge=args.ridge)
    metrics = {"source_r2": float(model.score(table.X, table.y))}
    return AdaptOutcome(model=model, guarantees=dict(model.guarantees_), metrics=metrics)


register_module(
    __name__,
    "private discrepancy minimisation (Bassily, Mohri & Suresh 2023): the target releases weights over the public source",
    example_release_args=lambda files: [
        "--data", files["target"], "--source-data", files["source"], "--r", "10", "--K", "50",
    ],
)
