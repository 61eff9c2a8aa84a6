"""``dpadapt release prima`` (target) and ``dpadapt adapt prima`` (source, then target).

Workflow::

    # target: noisy PSD-repaired subspace second moments, (ε, δ)-DP
    dpadapt release prima --data target.npz --epsilon 2 --delta 1e-5 --out target.release
    # source: align, train the subspace heads with DP-SGD, send them back ((ε, δ)-DP for the source)
    dpadapt adapt prima --release target.release --data source.npz --out source.joblib \\
        --return-release models.release --epsilon 2 --delta 1e-5
    # target: the majority-vote classifier from the returned heads (accuracy printed if labels are present)
    dpadapt adapt prima --release models.release --data target.npz --out target_model.joblib
"""

from __future__ import annotations

import argparse

import numpy as np

from dpadapt.alignment import covariance as cov
from dpadapt.alignment.prima import (
    ALIGNMENTS,
    PARTITIONS,
    PrimaVoteClassifier,
    adapt_prima_source,
    plan_source,
    plan_target_guarantee,
    release_prima_target,
)
from dpadapt.cli.methods import AdaptOutcome, MethodCommands, PlannedRelease, register
from dpadapt.io import Table
from dpadapt.release import Release


def add_release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--subspace-size", type=int, default=512, help="public size p of the random feature subspaces")
    p.add_argument("--partition", choices=PARTITIONS, default="random",
                   help="random (sound), forward (published forward selection: NOT private), full (one block)")
    p.add_argument("--psd-repair", choices=cov.PSD_REPAIRS, default="eig_clip")
    p.add_argument("--log-counts", action="store_true", help="log(1 + x) before clipping (count features)")
    p.add_argument("--privacy-mode", choices=("sound", "paper"), default="sound")


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    n = table.X.shape[0]
    guarantee = plan_target_guarantee(n, args.epsilon, args.delta, partition=args.partition, privacy_mode=args.privacy_mode)

    def execute() -> Release:
        return release_prima_target(
            table.X, args.epsilon, args.delta, subspace_size=args.subspace_size, partition=args.partition,
            psd_repair=args.psd_repair, log_counts=args.log_counts, privacy_mode=args.privacy_mode,
            rng=np.random.default_rng(args.seed),
        )

    return PlannedRelease(guarantee, execute)


def add_adapt_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--alignment", choices=ALIGNMENTS, default="coral", help="coral (PRIMA) or sa (PRISA)")
    p.add_argument("--sa-dim", type=int, default=64)
    p.add_argument("--head", choices=("logreg", "mlp"), default="logreg")
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=25)
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--max-grad-norm", type=float, default=1.0, help="DP-SGD clipping bound (fixed a priori)")
    p.add_argument("--cov-budget-fraction", type=float, default=0.2, help="share of the source ε for its covariance")
    p.add_argument("--separate-runs", action="store_true", help="one DP-SGD run per subspace (composed) instead of one joint run")
    p.add_argument("--privacy-mode", choices=("sound", "paper"), default="sound")


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    if len(releases) != 1:
        raise ValueError("prima adapt takes exactly one --release (the target's covariances, or the source's models)")
    release = releases[0]
    if release.kind == "source_models":
        model = PrimaVoteClassifier(release)
        metrics = {}
        if table.y is not None:
            metrics["accuracy"] = model.score(table.X, table.y)
        return AdaptOutcome(model=model, guarantees={"source": release.guarantee}, metrics=metrics)
    if release.kind != "target_covariances":
        raise ValueError(f"unexpected prima release kind {release.kind!r}")
    if table.y is None:
        raise ValueError(f"{table.path}: the source party needs labelled data")
    if args.epsilon is None or args.delta is None:
        raise ValueError("give --epsilon and --delta: the source's budget for the returned models")
    n_heads = int(release.params["n_blocks"])
    plan = plan_source(
        table.X.shape[0], n_heads, args.epsilon, args.delta, epochs=args.epochs, batch_size=args.batch_size,
        cov_budget_fraction=args.cov_budget_fraction, joint=not args.separate_runs, privacy_mode=args.privacy_mode,
    )

    def execute() -> Release:
        return adapt_prima_source(
            release, table.X, table.y, source_epsilon=args.epsilon, delta=args.delta, alignment=args.alignment,
            sa_dim=args.sa_dim, head=args.head, epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
            max_grad_norm=args.max_grad_norm, cov_budget_fraction=args.cov_budget_fraction,
            joint=not args.separate_runs, privacy_mode=args.privacy_mode, rng=np.random.default_rng(args.seed),
        )

    summary = {"method": "prima", "role": "source", "target_release_id": release.release_id,
               "note": "the trained heads are in the return release sent to the target"}
    return AdaptOutcome(model=summary, guarantees={"target": release.guarantee, "source": plan.guarantee},
                        return_release=PlannedRelease(plan.guarantee, execute))


register(
    MethodCommands(
        "prima",
        "PRIMA/PRISA (Jin et al. 2021): target releases noisy subspace covariances, source returns DP-SGD subspace heads",
        add_release_arguments,
        plan_release,
        add_adapt_arguments,
        adapt,
    )
)
