"""``dpadapt release prima`` and ``dpadapt adapt prima``: PRIMA with both parties protected.

Sound workflow (class statistics, the default)::

    # source: ONE Gaussian on its per-class sums and counts, (ε, δ)-DP; the label set is public
    dpadapt release prima --data source.npz --classes 0,1,2,3 --epsilon 2 --delta 1e-5 --out stats.release
    # target: prototypes refined on its own rows; the model stays with it (nothing of the target released)
    dpadapt adapt prima --release stats.release --data target.npz --out target_model.joblib

The published heads protocol (``--source-release dpsgd_heads``): the target releases its noisy subspace
covariances (``release``), the source returns DP-SGD heads (``adapt --return-release``), the target
votes (``adapt`` on the returned release).
"""

from __future__ import annotations

import argparse

import numpy as np

from dpadapt.alignment import covariance as cov
from dpadapt.alignment import prima
from dpadapt.classstats.adapt import REFINEMENTS
from dpadapt.cli.methods import AdaptOutcome, MethodCommands, PlannedRelease, register
from dpadapt.io import Table
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import Release, ReleaseError


def _classes(text: str | None):
    if text is None:
        return None
    values = [v.strip() for v in text.split(",") if v.strip()]
    try:
        return tuple(int(v) for v in values)
    except ValueError:
        return tuple(values)


def add_release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source-release", choices=prima.SOURCE_RELEASES[1:], default="class_statistics",
                   help="class_statistics: this party is the source (labelled data); dpsgd_heads: this is the target")
    p.add_argument("--classes", default=None, help="the public label set, comma-separated (class statistics)")
    p.add_argument("--basis-dim", type=int, default=1024, help="columns of the public random basis (0: none)")
    p.add_argument("--subspace-size", type=int, default=512, help="public size p of the random feature subspaces")
    p.add_argument("--partition", choices=prima.PARTITIONS, default="random",
                   help="random (sound), forward (published forward selection: NOT private), full (one block)")
    p.add_argument("--psd-repair", choices=cov.PSD_REPAIRS, default="eig_clip")
    p.add_argument("--log-counts", action="store_true", help="log(1 + x) first (count features)")
    p.add_argument("--privacy-mode", choices=("sound", "paper"), default="sound")


def _config(args: argparse.Namespace, **extra) -> prima.PrimaConfig:
    values = {k: getattr(args, k) for k in ("subspace_size", "partition", "psd_repair", "log_counts", "privacy_mode")
              if hasattr(args, k)}
    if getattr(args, "basis_dim", None) is not None:
        values["basis_dim"] = args.basis_dim or None
    return prima.PrimaConfig(epsilon=args.epsilon, delta=args.delta, random_state=args.seed,
                             classes=_classes(getattr(args, "classes", None)), **values, **extra)


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    config = _config(args, source_release=args.source_release)
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


def add_adapt_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--classes", default=None, help="the public label set, comma-separated")
    p.add_argument("--refinement", choices=REFINEMENTS, default="cluster_match", help="target-side refinement (class statistics)")
    p.add_argument("--alignment", choices=prima.ALIGNMENTS, default="coral", help="coral (PRIMA) or sa (PRISA)")
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
        raise ValueError("prima adapt takes exactly one --release")
    release = releases[0]
    if release.method != prima.METHOD:
        raise ReleaseError(f"expected a prima release, got {release.method}/{release.kind}")
    if release.kind in ("source_class_statistics", "source_models"):
        config = prima.PrimaConfig(refinement=args.refinement, random_state=args.seed,
                                   privacy_mode=release.params.get("privacy_mode", "sound"))
        model = prima.adapt(release, table.X, config)
        metrics = {"accuracy": model.score(table.X, table.y)} if table.y is not None else {}
        return AdaptOutcome(model=model, guarantees={"source": release.guarantee}, metrics=metrics)
    if release.kind != "target_covariances":
        raise ReleaseError(f"unexpected prima release kind {release.kind!r}")
    if table.y is None:
        raise ValueError(f"{table.path}: the source party needs labelled data")
    if args.epsilon is None or args.delta is None:
        raise ValueError("give --epsilon and --delta: the source's budget for the returned models")
    config = _config(args, source_release="dpsgd_heads", alignment=args.alignment, sa_dim=args.sa_dim, head=args.head,
                     epochs=args.epochs, batch_size=args.batch_size, lr=args.lr, max_grad_norm=args.max_grad_norm,
                     cov_budget_fraction=args.cov_budget_fraction, joint=not args.separate_runs)
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


register(
    MethodCommands(
        "prima",
        "PRIMA, both parties protected: the source releases DP class statistics, the target refines on its own rows "
        "(or the published covariances + DP-SGD heads)",
        add_release_arguments,
        plan_release,
        add_adapt_arguments,
        adapt,
        example_release_args=lambda files: ["--data", str(files["source"]), "--classes", "0,1,2"],
    )
)
