"""``dpadapt release dpot`` (source) and ``dpadapt adapt dpot`` (target).

The source plans its release from public quantities (n_s, k, classes, ε, δ, the public projection
seed) — the Guarantee is known before any noise is drawn — then draws the noise. The target
loads the Release, regenerates M, solves OT and trains its classifier. With the same ``--seed`` on
both sides the result equals :class:`dpadapt.transport.DPOTAdapter` with ``random_state=seed``.
"""

from __future__ import annotations

import argparse

import numpy as np

from dpadapt.cli.methods import AdaptOutcome, MethodCommands, PlannedRelease, register
from dpadapt.io import Table
from dpadapt.release import Release
from dpadapt.transport.coupling import OT_METHODS
from dpadapt.transport.da import adapt_dpot
from dpadapt.transport.dpot import execute_dpot_source, plan_dpot_source
from dpadapt.validation import check_features, check_labels, check_random_state


def _add(parser: argparse.ArgumentParser, *flags, **kwargs) -> None:
    """Add an option unless the generic driver already defined it (e.g. --epsilon, --seed)."""
    if any(f in parser._option_string_actions for f in flags):
        return
    parser.add_argument(*flags, **kwargs)


def _none_or_int(value: str) -> int | None:
    return None if value.lower() in ("none", "all", "0") else int(value)


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    _add(
        parser,
        "--epsilon",
        type=float,
        required=True,
        help="total source budget ε (sound: features + labels)",
    )
    _add(
        parser,
        "--delta",
        type=float,
        default=None,
        help="δ (default 1/(1.2 n_s), the paper's choice)",
    )
    _add(
        parser,
        "--seed",
        type=int,
        default=None,
        help="random seed (projection and noise); same as the estimator's random_state",
    )
    _add(parser, "--privacy-mode", choices=("sound", "paper"), default="sound")
    _add(
        parser,
        "--batch-size",
        type=_none_or_int,
        default=None,
        help="minibatch size B (default: one whole-batch release)",
    )
    _add(
        parser,
        "--noise-multiplier",
        type=float,
        default=1.1,
        help="minibatch noise multiplier z = σ/Δ (paper: σ/w)",
    )
    _add(
        parser,
        "--steps",
        type=int,
        default=None,
        help="minibatch steps T (calibrates z instead of maximising T)",
    )
    _add(
        parser,
        "--label-epsilon",
        type=float,
        default=None,
        help="ε′ for the labels (sound default 0.25·ε, part of ε)",
    )
    _add(
        parser,
        "--labels",
        choices=("rr", "public"),
        default="rr",
        help="randomized response, or declare labels public",
    )
    _add(
        parser,
        "--proj-dim",
        type=int,
        default=None,
        help="projection dimension ℓ (default ⌈k/10⌉)",
    )
    _add(
        parser,
        "--projection",
        choices=("jl", "identity"),
        default="jl",
        help="the paper's JL matrix, or none (M = I: less noise at record level)",
    )
    _add(parser, "--row-norm", choices=("normalize", "clip", "none"), default=None)
    _add(parser, "--clip-norm", type=float, default=1.0, help="public row norm C")
    _add(
        parser,
        "--n-classes",
        type=int,
        default=None,
        help="size of the public label set (default: max label + 1)",
    )


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """Compute the Guarantee from public quantities, return a plan whose ``execute`` draws the noise."""
    if table.y is None:
        raise ValueError(f"{table.path}: the source data needs labels (column 'y')")
    X = check_features(table.X, "source data")
    y = check_labels(table.y, X.shape[0], "source labels")
    rng = check_random_state(args.seed)
    n = X.shape[0]
    plan = plan_dpot_source(
        n,
        X.shape[1],
        int(y.max()) + 1 if args.n_classes is None else args.n_classes,
        args.epsilon,
        1.0 / (1.2 * n) if args.delta is None else args.delta,
        projection_seed=int(rng.integers(2**63 - 1)),
        proj_dim=args.proj_dim,
        batch_size=args.batch_size,
        noise_multiplier=args.noise_multiplier,
        steps=args.steps,
        label_epsilon=args.label_epsilon,
        labels=args.labels,
        row_norm=args.row_norm,
        clip_norm=args.clip_norm,
        privacy_mode=args.privacy_mode,
        projection=args.projection,
    )
    return PlannedRelease(plan.guarantee, lambda: execute_dpot_source(plan, X, y, rng))


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    _add(
        parser,
        "--seed",
        type=int,
        default=None,
        help="target-side seed (minibatches, classifier)",
    )
    _add(parser, "--ot-method", choices=OT_METHODS, default="sinkhorn_gl")
    _add(parser, "--reg-e", type=float, default=0.01, help="entropic weight λ_e")
    _add(parser, "--reg-g", type=float, default=0.1, help="group-lasso weight λ_g")
    _add(parser, "--head", choices=("mlp", "logreg"), default="mlp")
    _add(parser, "--target-batch-size", type=int, default=None)
    _add(
        parser,
        "--use-target-labels",
        action="store_true",
        help="semi-supervised: use the target file's labels (-1 = unknown) in the coupling and training; "
        "otherwise they only serve to report accuracy",
    )


def adapt(
    args: argparse.Namespace, table: Table, releases: list[Release]
) -> AdaptOutcome:
    """Adapt to the target table with one DPOT source release (post-processing only)."""
    dpot = [r for r in releases if r.method == "dpot"]
    if len(dpot) != 1:
        raise ValueError(f"adapt dpot needs exactly one dpot release, got {len(dpot)}")
    release = dpot[0]
    result = adapt_dpot(
        release,
        table.X,
        table.y if args.use_target_labels else None,
        ot_method=args.ot_method,
        reg_e=args.reg_e,
        reg_g=args.reg_g,
        head=args.head,
        target_batch_size=args.target_batch_size,
        random_state=args.seed,
    )
    metrics = {
        "w_tilde": result.w_tilde,
        "n_training_images": float(result.images.shape[0]),
    }
    if table.y is not None and np.any(table.y >= 0):
        known = table.y >= 0
        metrics["accuracy_on_target_labels"] = float(
            result.model.score(check_features(table.X)[known], table.y[known])
        )
    return AdaptOutcome(
        model=result.model, guarantees={"source": release.guarantee}, metrics=metrics
    )


COMMANDS = register(
    MethodCommands(
        name="dpot",
        help="DPOT/DPDA (LeTien et al. 2019): noisy JL-projected source rows, OT on the target side",
        add_release_arguments=add_release_arguments,
        plan_release=plan_release,
        add_adapt_arguments=add_adapt_arguments,
        adapt=adapt,
    )
)
