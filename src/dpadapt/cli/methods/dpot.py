"""``dpadapt release dpot`` (source) and ``dpadapt adapt dpot`` (target).

Sound mode (default): the class-statistics protocol in three steps —

1. target: ``dpadapt basis --data target.npz --k 20 --out basis.release`` (a disclosure of the
   unprotected target, not charged to any budget);
2. source: ``dpadapt release dpot --basis basis.release --data source.npz --classes 0,...,9
   --epsilon E --delta D --out stats.release`` — ONE Gaussian release of per-class sums and counts,
   planned (σ, Guarantee) before any noise, charged to the source's ledger;
3. target: ``dpadapt adapt dpot --release stats.release --release basis.release --data target.npz
   --out model.dpadapt``.

``--privacy-mode paper`` keeps the published per-row release of noisy projected rows (flagged
invalid); sound mode refuses ``--design rows`` (its minibatch accounting does not hold
and the whole-batch release is near chance). The public label set
(``--classes`` or ``--n-classes``) is required in sound mode; a source label outside it is an error.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from dpadapt.cli.cluster import add_cluster_arguments, client, on_cluster
from dpadapt.cli.config_options import add_config_options, add_option, config_from_args
from dpadapt.cli.methods import AdaptOutcome, PlannedRelease, register_module
from dpadapt.configs.dpot import Config

if TYPE_CHECKING:
    from dpadapt.io import Table
    from dpadapt.release import Release


def _classes(args: argparse.Namespace) -> tuple | None:
    if args.classes is not None:
        return args.classes
    if args.n_classes is not None:
        return tuple(range(int(args.n_classes)))
    return None


#: the source's options (class-statistics design, then the per-row design); ``k`` comes from the basis
RELEASE_OPTIONS = ("privacy_mode", "design", "classes", "feature_type", "log1p", "relation", "batch_size",
                   "noise_multiplier", "steps", "label_epsilon", "labels", "proj_dim", "projection", "row_norm",
                   "clip_norm")
#: the target's options (refinement of the class-statistics design; OT and head of the per-row design)
ADAPT_OPTIONS = ("classes", "refinement", "ot_method", "reg_e", "reg_g", "head", "target_batch_size")


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser, Config, RELEASE_OPTIONS)
    add_option(parser, "--n-classes", type=int, default=None, help="public label set 0..N-1 (instead of --classes)")
    add_option(parser, "--basis", default=None,
               help="the target's basis Release (from `dpadapt basis`); omit for k = 0 (no basis)")
    add_cluster_arguments(parser)


def _config(args, **extra) -> Config:
    return config_from_args(Config, args, classes=_classes(args), **extra)


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """Compute the Guarantee from public quantities; ``execute`` draws the noise."""
    from dpadapt.classstats import _check_basis, label_indices
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.release import Release, ReleaseError
    from dpadapt.transport import da as dpot_family
    from dpadapt.transport.dpot import execute_dpot_source, plan_dpot_source
    from dpadapt.validation import check_features, check_labels

    cluster = on_cluster(args, table)
    if not cluster and not table.source.labelled:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    n, d = table.n_rows, table.n_features
    basis = Release.load(args.basis, expect_method="dpot") if args.basis else None
    if basis is not None:  # untrusted input, checked before the ledger is touched or a private row mapped
        _check_basis_file(args.basis, basis, d, table.path)
        _check_basis(basis, "dpot", d)
    k = int(basis.params["k"]) if basis is not None else 0
    config = _config(args, k=k)
    if config.resolved_design() == "classstats":  # streamed: the rows are read chunk by chunk when the plan runs
        if basis is not None and bool(basis.params["log1p"]) != config.use_log1p():
            raise ReleaseError("the basis was computed with another --feature-type than this release")
        plan = dpot_family.plan(config, {"n_source": n, "n_features": d, "k": k})
        _, noise = random_streams(args.seed)
        if not cluster:
            return PlannedRelease(plan.guarantee, lambda: dpot_family.release(plan, table.source, None, noise, basis_release=basis))

        def on_the_cluster() -> Release:  # a Parquet dataset: mapped, clipped and summed on the workers
            from dpadapt.stream.dask_engine import read_parquet

            with client(args) as c:
                return dpot_family.release(plan, read_parquet(table.path, table.label_column), None, noise,
                                           basis_release=basis, client=c, label_column=table.label_column)

        return PlannedRelease(plan.guarantee, on_the_cluster)
    if cluster:
        raise ValueError(f"{table.path}: the per-row design (--design rows) reads the rows in this process; a Parquet "
                         "dataset on a cluster is released by the class-statistics design")
    X = check_features(table.X, "source data")
    y = check_labels(table.y, n, "source labels", classes=_classes(args))
    classes = config.classes or tuple(range(int(y.max()) + 1))  # the per-row design runs in paper mode only
    public, noise = random_streams(args.seed)
    plan = plan_dpot_source(
        n, X.shape[1], len(classes), config.epsilon, config.delta,
        projection_seed=int(public.integers(2**63 - 1)), proj_dim=config.proj_dim, batch_size=config.batch_size,
        noise_multiplier=config.noise_multiplier, steps=config.steps, label_epsilon=config.label_epsilon,
        labels=config.labels, row_norm=config.row_norm, clip_norm=config.clip_norm,
        privacy_mode=config.privacy_mode, projection=config.projection,
    )

    def execute() -> Release:
        rel = execute_dpot_source(plan, X, label_indices(y, classes), noise)
        rel.params["classes"] = list(classes)
        return rel

    return PlannedRelease(plan.guarantee, execute)


def _check_basis_file(path: str, basis: Release, n_features: int, data_path) -> None:
    """The --basis file is the receiver's basis, computed in this data's feature space."""
    from dpadapt.release import ReleaseError

    if basis.kind != "target_basis" or "k" not in basis.params:
        raise ReleaseError(f"{path}: a {basis.method}/{basis.kind} release, not a basis (make one with `dpadapt basis`)")
    width = basis.params.get("n_features")
    if width is not None and int(width) != n_features:
        raise ValueError(f"{data_path} has {n_features} features but the basis {path} was computed on data with {width}; "
                         "both parties must map their rows the same way (the same --schema)")


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--seed", type=int, default=None, help="target-side seed (minibatches, classifier)")
    add_config_options(parser, Config, ADAPT_OPTIONS)
    add_option(parser, "--use-target-labels", action="store_true",
               help="rows design, semi-supervised: use the target file's labels (-1 = unknown); otherwise labels only score")


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """Adapt to the target table with the source's release (and the target's own basis)."""
    from dpadapt.transport import da as dpot_family
    from dpadapt.validation import check_features

    stats = [r for r in releases if r.kind in ("class_statistics", "source_projection")]
    basis = [r for r in releases if r.kind == "target_basis"]
    if len(stats) != 1 or len(basis) > 1:
        raise ValueError(f"adapt dpot needs one source release (and at most one basis), got {[r.kind for r in releases]}")
    release = stats[0]
    metrics: dict[str, float] = {}
    config = config_from_args(Config, args)
    if release.kind == "class_statistics":
        model = dpot_family.adapt(release, table.X, config, basis_release=basis[0] if basis else None)
    else:
        result = dpot_family.adapt_dpot(
            release, table.X, table.y if args.use_target_labels else None, ot_method=config.ot_method,
            reg_e=config.reg_e, reg_g=config.reg_g, head=config.head, target_batch_size=config.target_batch_size,
            random_state=config.random_state,
        )
        model = result.model
        metrics = {"w_tilde": result.w_tilde, "n_training_images": float(result.images.shape[0])}
    if table.y is not None and np.any(table.y >= 0):
        known = table.y >= 0
        X = table.X[known] if release.kind == "class_statistics" else check_features(table.X)[known]
        metrics["accuracy_on_target_labels"] = float(np.mean(model.predict(X) == table.y[known]))
        if release.kind == "class_statistics" and config.refinement != "none":
            # the baseline the release itself gives: its DP class prototypes, no refinement (post-processing)
            plain = dpot_family.adapt(release, table.X, config.replace(refinement="none"),
                                      basis_release=basis[0] if basis else None)
            metrics["prototypes_accuracy"] = float(np.mean(plain.predict(X) == table.y[known]))
    return AdaptOutcome(model=model, guarantees={"source": release.guarantee}, metrics=metrics)


COMMANDS = register_module(
    __name__,
    "DPOT: source DP class statistics in the target's basis (sound); per-row release (weak / paper)",
    # generic tests: the 3-class generated source, no basis (class statistics in the feature space)
    example_release_args=lambda files: ["--data", files["source"], "--n-classes", "3"],
)
