"""``dpadapt release dpot`` (source) and ``dpadapt adapt dpot`` (target).

Sound mode (default): the class-statistics protocol in three steps —

1. target: ``dpadapt basis --data target.npz --k 20 --out basis.release`` (a disclosure of the
   unprotected target, not charged to any budget);
2. source: ``dpadapt release dpot --basis basis.release --data source.npz --classes 0,...,9
   --epsilon E --delta D --out stats.release`` — ONE Gaussian release of per-class sums and counts,
   planned (σ, Guarantee) before any noise, charged to the source's ledger;
3. target: ``dpadapt adapt dpot --release stats.release --release basis.release --data target.npz
   --out model.joblib``.

``--design rows`` (or ``--privacy-mode paper``) keeps the per-row release of noisy projected rows
(weak in sound mode: each row's noise is far larger than the row). The public label set
(``--classes`` or ``--n-classes``) is required in sound mode; a source label outside it is an error.
"""

from __future__ import annotations

import argparse

import numpy as np

from dpadapt.cli.methods import AdaptOutcome, MethodCommands, PlannedRelease, register
from dpadapt.io import Table
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import Release, ReleaseError
from dpadapt.transport import da as dpot_family
from dpadapt.transport.coupling import OT_METHODS
from dpadapt.transport.da import adapt_dpot
from dpadapt.transport.dpot import execute_dpot_source, plan_dpot_source
from dpadapt.validation import check_features, check_labels


def _add(parser: argparse.ArgumentParser, *flags, **kwargs) -> None:
    """Add an option unless the generic driver already defined it (e.g. --epsilon, --seed)."""
    if any(f in parser._option_string_actions for f in flags):
        return
    parser.add_argument(*flags, **kwargs)


def _none_or_int(value: str) -> int | None:
    return None if value.lower() in ("none", "all", "0") else int(value)


def _classes(args: argparse.Namespace) -> tuple | None:
    if args.classes:
        values = [v.strip() for v in args.classes.split(",") if v.strip()]
        return tuple(int(v) if v.lstrip("-").isdigit() else v for v in values)
    if args.n_classes is not None:
        return tuple(range(int(args.n_classes)))
    return None


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    _add(parser, "--privacy-mode", choices=("sound", "paper"), default="sound")
    _add(parser, "--design", choices=("auto", "classstats", "rows"), default="auto",
         help="'auto': class statistics in sound mode, the published per-row release in paper mode; 'rows': per-row (weak)")
    _add(parser, "--classes", default=None, help="the public label set, comma-separated (required in sound mode)")
    _add(parser, "--n-classes", type=int, default=None, help="public label set 0..N-1 (instead of --classes)")
    # class-statistics design
    _add(parser, "--basis", default=None, help="the target's basis Release (from `dpadapt basis`); omit for k = 0 (no basis)")
    _add(parser, "--feature-type", choices=("dense", "counts"), default="dense", help="public feature type ('counts': log1p)")
    _add(parser, "--relation", choices=("replace_one", "add_remove"), default="replace_one")
    # per-row design
    _add(parser, "--batch-size", type=_none_or_int, default=None, help="rows design: minibatch size B")
    _add(parser, "--noise-multiplier", type=float, default=1.1, help="rows design, minibatch: z = σ/Δ (paper: σ/w)")
    _add(parser, "--steps", type=int, default=None, help="rows design, minibatch: steps T")
    _add(parser, "--label-epsilon", type=float, default=None, help="rows design: ε′ of the labels (sound default 0.25·ε)")
    _add(parser, "--labels", choices=("rr", "public"), default="rr", help="rows design: randomized response or public labels")
    _add(parser, "--proj-dim", type=int, default=None, help="rows design: projection dimension ℓ (default ⌈k/10⌉)")
    _add(parser, "--projection", choices=("jl", "identity"), default="jl")
    _add(parser, "--row-norm", choices=("normalize", "clip", "none"), default=None)
    _add(parser, "--clip-norm", type=float, default=1.0, help="rows design: public row norm C")


def _config(args, **extra) -> dpot_family.Config:
    return dpot_family.Config(
        epsilon=args.epsilon, delta=args.delta, privacy_mode=args.privacy_mode, classes=_classes(args),
        random_state=args.seed, design=args.design, feature_type=args.feature_type, relation=args.relation, **extra,
    )


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """Compute the Guarantee from public quantities; ``execute`` draws the noise."""
    if table.y is None:
        raise ValueError(f"{table.path}: the source data needs labels (column 'y')")
    X = check_features(table.X, "source data", allow_sparse=True)
    y = check_labels(table.y, X.shape[0], "source labels")
    n = X.shape[0]
    basis = Release.load(args.basis, expect_method="dpot") if args.basis else None
    k = int(basis.params["k"]) if basis is not None else 0
    config = _config(args, k=k)
    if config.resolved_design() == "classstats":
        if basis is not None and bool(basis.params["log1p"]) != config.use_log1p():
            raise ReleaseError("the basis was computed with another --feature-type than this release")
        plan = dpot_family.plan(config, {"n_source": n, "n_features": X.shape[1], "k": k})
        _, noise = random_streams(args.seed)
        return PlannedRelease(plan.guarantee, lambda: dpot_family.release(plan, X, y, noise, basis_release=basis))
    from dpadapt.classstats import label_indices

    X = check_features(X, "source data")
    classes = config.classes or (tuple(range(int(y.max()) + 1)) if config.privacy_mode == "paper" else config.required_classes())
    public, noise = random_streams(args.seed)
    plan = plan_dpot_source(
        n, X.shape[1], len(classes), args.epsilon, args.delta,
        projection_seed=int(public.integers(2**63 - 1)), proj_dim=args.proj_dim, batch_size=args.batch_size,
        noise_multiplier=args.noise_multiplier, steps=args.steps, label_epsilon=args.label_epsilon,
        labels=args.labels, row_norm=args.row_norm, clip_norm=args.clip_norm,
        privacy_mode=args.privacy_mode, projection=args.projection,
    )

    def execute() -> Release:
        rel = execute_dpot_source(plan, X, label_indices(y, classes), noise)
        rel.params["classes"] = list(classes)
        return rel

    return PlannedRelease(plan.guarantee, execute)


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    _add(parser, "--seed", type=int, default=None, help="target-side seed (minibatches, classifier)")
    _add(parser, "--refinement", choices=("kmeans", "self_training", "ot", "none"), default="ot",
         help="class-statistics design: refinement of the DP prototypes on your rows")
    _add(parser, "--ot-method", choices=OT_METHODS, default="sinkhorn_gl", help="rows design")
    _add(parser, "--reg-e", type=float, default=0.01, help="rows design: entropic weight λ_e")
    _add(parser, "--reg-g", type=float, default=0.1, help="rows design: group-lasso weight λ_g")
    _add(parser, "--head", choices=("mlp", "logreg"), default="mlp", help="rows design: classifier head")
    _add(parser, "--target-batch-size", type=int, default=None, help="rows design")
    _add(parser, "--use-target-labels", action="store_true",
         help="rows design, semi-supervised: use the target file's labels (-1 = unknown); otherwise labels only score")


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """Adapt to the target table with the source's release (and the target's own basis)."""
    stats = [r for r in releases if r.kind in ("class_statistics", "source_projection")]
    basis = [r for r in releases if r.kind == "target_basis"]
    if len(stats) != 1 or len(basis) > 1:
        raise ValueError(f"adapt dpot needs one source release (and at most one basis), got {[r.kind for r in releases]}")
    release = stats[0]
    metrics: dict[str, float] = {}
    if release.kind == "class_statistics":
        config = dpot_family.Config(refinement=args.refinement, random_state=args.seed)
        model = dpot_family.adapt(release, table.X, config, basis_release=basis[0] if basis else None)
    else:
        result = adapt_dpot(
            release, table.X, table.y if args.use_target_labels else None, ot_method=args.ot_method,
            reg_e=args.reg_e, reg_g=args.reg_g, head=args.head, target_batch_size=args.target_batch_size,
            random_state=args.seed,
        )
        model = result.model
        metrics = {"w_tilde": result.w_tilde, "n_training_images": float(result.images.shape[0])}
    if table.y is not None and np.any(table.y >= 0):
        known = table.y >= 0
        X = table.X[known] if release.kind == "class_statistics" else check_features(table.X)[known]
        metrics["accuracy_on_target_labels"] = float(np.mean(model.predict(X) == table.y[known]))
    return AdaptOutcome(model=model, guarantees={"source": release.guarantee}, metrics=metrics)


COMMANDS = register(
    MethodCommands(
        name="dpot",
        help="DPOT: source DP class statistics in the target's basis (sound); per-row release (weak / paper)",
        add_release_arguments=add_release_arguments,
        plan_release=plan_release,
        add_adapt_arguments=add_adapt_arguments,
        adapt=adapt,
        # generic tests: the 3-class generated source, no basis (class statistics in the feature space)
        example_release_args=lambda files: ["--data", files["source"], "--n-classes", "3"],
    )
)
