"""``dpadapt release sound`` (source) and ``dpadapt adapt sound`` (target): the sound SSP design.

1. target, only when the public rule's space is ``pca`` (dense or count features; see
   ``benchmarks/selection/sound/README.md``): ``dpadapt basis --method sound --k K --data target.npz
   --out basis.release`` (a disclosure of the unprotected target, not charged to any budget);
2. source: ``dpadapt release sound [--basis basis.release] --data source.npz --classes 0,...,9
   --epsilon E --delta D --out stats.release`` — ONE Gaussian release of per-class sums, counts and
   the pooled second moment (Δ = √6 replace-one), planned before any noise, charged to the ledger;
3. target: ``dpadapt adapt sound --release stats.release [--release basis.release] --data target.npz
   --out model.dpadapt`` — ridge-regularised LDA, then the rule's guarded refinement.
"""

from __future__ import annotations

import argparse

from typing import TYPE_CHECKING

import numpy as np

from dpadapt.cli.config_options import add_config_options, add_option, config_from_args
from dpadapt.cli.methods import AdaptOutcome, PlannedRelease, register_module
from dpadapt.configs.sound import Config

if TYPE_CHECKING:
    from dpadapt.io import Table
    from dpadapt.release import Release

RELEASE_OPTIONS = ("classes", "feature_type", "relation")


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser, Config, RELEASE_OPTIONS)
    add_option(parser, "--n-classes", type=int, default=None, help="public label set 0..N-1 (instead of --classes)")
    add_option(parser, "--basis", default=None, help="the target's basis Release (`dpadapt basis --method sound`), when the rule's space is pca")


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """The Guarantee from public quantities (the table's shape); ``execute`` reads the rows chunk by chunk
    (never the whole file) and draws the noise once."""
    from dpadapt import sound
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.release import Release

    if not table.source.labelled:
        raise ValueError(f"{table.path}: the source data needs labels (column 'y')")
    classes = args.classes if args.classes is not None else (tuple(range(int(args.n_classes))) if args.n_classes else None)
    config = config_from_args(Config, args, classes=classes)  # the labels are checked against it as the rows are read
    basis = Release.load(args.basis, expect_method="sound") if args.basis else None
    facts = {"n_source": table.n_rows, "n_features": table.n_features}
    if basis is not None:
        facts["k"] = int(basis.params["k"])
    plan = sound.plan(config, facts)
    _, noise = random_streams(args.seed)
    return PlannedRelease(plan.guarantee, lambda: sound.release(plan, table.source, noise=noise, basis_release=basis))


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--seed", type=int, default=None, help="target-side seed (unused: the refinement is deterministic)")


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """LDA from the source's class moments on the target's rows, then the rule's guarded refinement."""
    from dpadapt import sound

    stats = [r for r in releases if r.kind == sound.MOMENTS_KIND]
    basis = [r for r in releases if r.kind == sound.BASIS_KIND]
    if len(stats) != 1 or len(basis) > 1:
        raise ValueError(f"adapt sound needs one source release (and at most one basis), got {[r.kind for r in releases]}")
    model = sound.adapt(stats[0], table.X, Config(), basis_release=basis[0] if basis else None)
    metrics: dict[str, float] = {"refined": float(model.refined)}
    if table.y is not None and np.any(table.y >= 0):
        known = table.y >= 0
        metrics["accuracy_on_target_labels"] = float(np.mean(model.predict(table.X[known]) == table.y[known]))
    return AdaptOutcome(model=model, guarantees={"source": stats[0].guarantee}, metrics=metrics)


def _example(files: dict) -> list[str]:
    """Generic tests (ε = 4): the generated 3-class source as a declared table, whose cell of the rule is
    the SSP design in the feature space (no basis); a dense source at ε = 4 is the classstats design."""
    return ["--data", str(files["source"]), "--n-classes", "3", "--feature-type", "table"]


COMMANDS = register_module(
    __name__,
    "sound SSP design: source DP class sums, counts and second moment (one Gaussian) → the rule's receiver classifier (LDA, ridge, nearest class direction)",
    example_release_args=_example,
)
