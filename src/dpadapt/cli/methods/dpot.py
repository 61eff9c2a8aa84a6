"""``dpadapt release dpot`` (source) and ``dpadapt adapt dpot`` (target).

Sound mode (default): the sound route's request and release (:mod:`dpadapt.cli.methods.sound`) with DPOT's
receiver step, the same three steps as :class:`~dpadapt.transport.DPOTAdapter`:

1. target: ``dpadapt request --design prototypes --data target.npz --classes 0,...,9 --n-source N --epsilon E
   --delta D --out request.release`` (a disclosure of the unprotected target, charged to no budget);
2. source: ``dpadapt release dpot --request request.release --data source.npz --classes 0,...,9
   --epsilon E --delta D --out stats.release`` — the request checked as untrusted input (a prototypes request
   for the source's own label set) before the ledger is touched, then ONE Gaussian release of per-class sums
   and counts in the request's space, planned (σ, Guarantee) before any noise, charged to the source's ledger
   (a Parquet dataset is summed on a Dask cluster with ``--scheduler`` / ``--workers``);
3. target: ``dpadapt adapt dpot --release stats.release --own-release request.release --data target.npz
   --out model.dpadapt`` — the DP prototypes refined by entropic OT on the target's rows
   (:func:`dpadapt.sound.receiver.prototypes_ot`).

``--privacy-mode paper`` keeps the published per-row release of noisy projected rows (flagged
invalid); sound mode refuses ``--design rows`` (its minibatch accounting does not hold
and the whole-batch release is near chance). The public label set
(``--classes`` or ``--n-classes``) is required in sound mode; a source label outside it is an error.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from dpadapt.cli.cluster import add_cluster_arguments, on_cluster
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


#: the source's options (sound mode: the relation; the per-row design of paper mode: the rest); the request fixes
#: the per-row map and the basis
RELEASE_OPTIONS = ("privacy_mode", "design", "classes", "relation", "batch_size", "noise_multiplier", "steps",
                   "label_epsilon", "labels", "proj_dim", "projection", "row_norm", "clip_norm")
#: the target's options (OT and head of the per-row design; sound mode's step is fixed by the request)
ADAPT_OPTIONS = ("ot_method", "reg_e", "reg_g", "head", "target_batch_size")


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser, Config, RELEASE_OPTIONS)
    add_option(parser, "--n-classes", type=int, default=None, help="public label set 0..N-1 (instead of --classes)")
    add_option(parser, "--request", default=None,
               help="sound mode: the receiver's release request (`dpadapt request --design prototypes`)")
    add_cluster_arguments(parser)


def _config(args, **extra) -> Config:
    return config_from_args(Config, args, classes=_classes(args), **extra)


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """Compute the Guarantee from public quantities; ``execute`` draws the noise."""
    config = _config(args)
    if config.resolved_design() == "classstats":
        return _plan_sound_release(args, table)
    if args.request:
        raise ValueError("--request is the sound mode's: paper mode (the per-row design) releases without a request")
    return _plan_rows_release(args, table, config)


def _plan_sound_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """The receiver's request checked as untrusted input (a prototypes request for this source's own label set), then
    the sound route's release of it (:func:`dpadapt.cli.methods.sound.plan_statistics_release`)."""
    from dpadapt.cli.methods import sound as sound_cli
    from dpadapt.release import Release
    from dpadapt.sound.request import KIND, Request
    from dpadapt.transport.da import check_request

    if not args.request:
        raise ValueError("sound mode answers the receiver's request: give --request FILE (the target makes it with "
                         "`dpadapt request --design prototypes`)")
    if not on_cluster(args, table) and not table.source.labelled:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    args.classes = _classes(args)
    own = sound_cli.own_classes(table, args)
    received = Release.load(args.request, expect_method="sound", expect_kind=KIND,
                            max_array_bytes=sound_cli.request_bytes(table.n_features))
    req = check_request(Request.from_release(received, n_features=table.n_features))
    return sound_cli.plan_statistics_release(args, table, own, req)


def _plan_rows_release(args: argparse.Namespace, table: Table, config: Config) -> PlannedRelease:
    """The per-row design (paper mode): noisy projected rows and the label histogram, read in this process."""
    from dpadapt.classstats import label_indices
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.release import Release
    from dpadapt.transport.dpot import execute_dpot_source, plan_dpot_source
    from dpadapt.validation import check_features, check_labels

    if on_cluster(args, table):
        raise ValueError(f"{table.path}: the per-row design (--design rows) reads the rows in this process; a Parquet "
                         "dataset on a cluster is released in sound mode")
    if not table.source.labelled:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    n = table.n_rows
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


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--seed", type=int, default=None, help="target-side seed (minibatches, classifier)")
    add_config_options(parser, Config, ADAPT_OPTIONS)
    add_option(parser, "--use-target-labels", action="store_true",
               help="rows design, semi-supervised: use the target file's labels (-1 = unknown); otherwise labels only score")


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """Adapt to the target table with the source's release: in sound mode with the target's own request
    (DPOT's receiver step, :func:`dpadapt.cli.methods.sound.adapt` on a checked prototypes request)."""
    from dpadapt import sound
    from dpadapt.transport import da as dpot_family
    from dpadapt.validation import check_features

    if any(r.method == "sound" for r in releases):
        kinds = [r.kind for r in releases]
        if sound.REQUEST_KIND not in kinds:
            raise ValueError("the source's release answers your request: add --own-release REQUEST (the file "
                             "`dpadapt request --design prototypes` wrote)")
        if any(r.method != "sound" for r in releases) or set(kinds) != {sound.REQUEST_KIND, sound.STATS_KIND}:
            raise ValueError("adapt dpot in sound mode needs the source's release (--release) and your request "
                             f"(--own-release); got {[f'{r.method}/{r.kind}' for r in releases]}")
        for r in releases:
            if r.kind == sound.REQUEST_KIND:
                dpot_family.check_request(r)
        from dpadapt.cli.methods import sound as sound_cli

        return sound_cli.adapt(args, table, releases)
    if len(releases) != 1 or releases[0].kind != "source_projection":
        raise ValueError(f"adapt dpot needs one source release, got {[r.kind for r in releases]}")
    release = releases[0]
    config = config_from_args(Config, args)
    result = dpot_family.adapt_dpot(
        release, table.X, table.y if args.use_target_labels else None, ot_method=config.ot_method,
        reg_e=config.reg_e, reg_g=config.reg_g, head=config.head, target_batch_size=config.target_batch_size,
        random_state=config.random_state,
    )
    model = result.model
    metrics = {"w_tilde": result.w_tilde, "n_training_images": float(result.images.shape[0])}
    if table.y is not None and np.any(table.y >= 0):
        known = table.y >= 0
        metrics["accuracy_on_target_labels"] = float(np.mean(model.predict(check_features(table.X)[known]) == table.y[known]))
    return AdaptOutcome(model=model, guarantees={"source": release.guarantee}, metrics=metrics)


def _example(files: dict) -> list[str]:
    """Generic tests: a prototypes request made here from the target file for the source file's rows (3 classes)."""
    from dpadapt import sound
    from dpadapt.io import load_table

    source, target = load_table(files["source"]), load_table(files["target"])
    out = files["target"].parent / "dpot-request.release"
    if not out.exists():
        cfg = sound.Config(epsilon=4.0, delta=1.0 / (10 * source.X.shape[0]), classes=(0, 1, 2), design="prototypes")
        sound.request(target.X, cfg, source.X.shape[0]).save(out)
    return ["--data", str(files["source"]), "--request", str(out), "--n-classes", "3"]


COMMANDS = register_module(
    __name__,
    "DPOT: the target's prototypes request → the source's DP class sums and counts → prototypes refined by OT on "
    "the target's rows (sound); per-row release (paper)",
    example_release_args=_example, release_method=("sound", "dpot"),
)
