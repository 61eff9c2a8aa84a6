"""``dpadapt release prima`` and ``dpadapt adapt prima``: PRIMA with both parties protected.

Sound workflow (class statistics, the default)::

    # source: ONE Gaussian on its per-class sums and counts, (ε, δ)-DP; the label set is public
    dpadapt release prima --data source.npz --classes 0,1,2,3 --epsilon 2 --delta 1e-5 --out stats.release
    # target: prototypes refined on its own rows; the model stays with it (nothing of the target released)
    dpadapt adapt prima --release stats.release --data target.npz --out target_model.dpadapt

The published heads protocol (``--source-release dpsgd_heads``): the target releases its noisy subspace
covariances (``release``), the source returns DP-SGD heads (``adapt --return-release``), the target
votes (``adapt`` on the returned release).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dpadapt.cli.config_options import add_config_options, config_from_args
from dpadapt.cli.methods import AdaptOutcome, PlannedRelease, register_module
from dpadapt.configs.prima import PrimaConfig

if TYPE_CHECKING:
    from dpadapt.io import Table
    from dpadapt.release import Release

#: the releasing party's options (the source's class statistics, or the target's covariances)
RELEASE_OPTIONS = ("source_release", "classes", "basis_dim", "subspace_size", "partition", "psd_repair", "log_counts",
                   "privacy_mode")
#: the receiver's options (the target's refinement, or the source's DP-SGD heads)
ADAPT_OPTIONS = ("classes", "refinement", "alignment", "sa_dim", "head", "epochs", "batch_size", "lr", "max_grad_norm",
                 "cov_budget_fraction", "joint", "privacy_mode")


def add_release_arguments(p: argparse.ArgumentParser) -> None:
    add_config_options(p, PrimaConfig, RELEASE_OPTIONS, defaults={"source_release": "class_statistics"})


def add_adapt_arguments(p: argparse.ArgumentParser) -> None:
    add_config_options(p, PrimaConfig, ADAPT_OPTIONS)


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    from dpadapt.alignment import prima
    from dpadapt.privacy.mechanisms import random_streams

    config = config_from_args(PrimaConfig, args)
    n, d = table.X.shape
    plan = prima.plan(config, {"n_source": n, "n_target": n, "n_features": d})

    if plan.kind == "class_statistics":
        if table.y is None:
            raise ValueError(f"{table.path}: the source party needs labelled data for its class statistics")

        def execute() -> Release:
            public, noise = random_streams(args.seed)
            return prima.release_source_statistics(plan, table.X, table.y, public, noise)

        return PlannedRelease(plan.guarantee, execute)

    def execute_target() -> Release:
        public, noise = random_streams(args.seed)
        return prima.release_target(plan, table.X, public, noise)

    return PlannedRelease(plan.calibration["target_guarantee"], execute_target)


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    from dpadapt.alignment import prima
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.release import ReleaseError

    if len(releases) != 1:
        raise ValueError("prima adapt takes exactly one --release")
    release = releases[0]
    if release.method != prima.METHOD:
        raise ReleaseError(f"expected a prima release, got {release.method}/{release.kind}")
    if release.kind in ("source_class_statistics", "source_models"):
        config = config_from_args(PrimaConfig, args, privacy_mode=release.params.get("privacy_mode", "sound"))
        model = prima.adapt(release, table.X, config)
        metrics = {"accuracy": model.score(table.X, table.y)} if table.y is not None else {}
        return AdaptOutcome(model=model, guarantees={"source": release.guarantee}, metrics=metrics)
    if release.kind != "target_covariances":
        raise ReleaseError(f"unexpected prima release kind {release.kind!r}")
    if table.y is None:
        raise ValueError(f"{table.path}: the source party needs labelled data")
    if args.epsilon is None or args.delta is None:
        raise ValueError("give --epsilon and --delta: the source's budget for the returned models")
    config = config_from_args(PrimaConfig, args, source_release="dpsgd_heads")
    if config.classes is None:
        raise ValueError("give --classes: the label set is public (inferring it from the labels leaks them)")
    plan = prima.plan(config, {"n_source": table.X.shape[0], "n_target": int(release.params["n_target"]),
                               "n_features": int(release.params["n_features"])})

    def execute() -> Release:
        public, noise = random_streams(args.seed)
        return prima.release_source_heads(plan, release, table.X, table.y, public, noise)

    summary = {"method": "prima", "role": "source", "target_release_id": release.release_id,
               "note": "the trained heads are in the return release sent to the target"}
    return AdaptOutcome(model=summary, guarantees={"target": release.guarantee, "source": plan.guarantee},
                        return_release=PlannedRelease(plan.guarantee, execute))


register_module(
    __name__,
    "PRIMA, both parties protected: the source releases DP class statistics, the target refines on its own rows "
    "(or the published covariances + DP-SGD heads)",
    example_release_args=lambda files: ["--data", str(files["source"]), "--classes", "0,1,2"],
)
