"""``dpadapt release dpda`` (source) and ``dpadapt adapt dpda`` (target): DPDA across two parties.

How the iterative protocol maps onto parties
--------------------------------------------
DPDA (Wang et al., TIFS 2020) protects the target and treats the labelled source as public.
Two deployments are valid:

1. *Per-step messages*: the source runs training and, at every step, the target sends one
   message — its Poisson-sampled, jointly clipped, noised sum of per-example target gradients
   (:func:`dpadapt.deep.dpsgd.private_block_gradients`), one accountant event per message.
   Everything the source sees is then a post-processing of DP releases.
2. *Target-side training* (what is implemented here): the source owner publishes its labelled
   data — declared public, which is DPDA's premise — and the target trains the whole DPDA model
   on its own machine. The target's guarantee covers the trained network, which the target can
   then hand back (``return_release``) or publish. No target row, gradient or statistic leaves
   the target other than that network.

Deployment 2 needs one message instead of thousands and gives the same guarantee. G-DPDA (both
parties protected) cannot use it — the source rows would leave the source — and is offered only
as the in-process estimator :class:`dpadapt.deep.dpda.GDPDA`.

The target's guarantee is computed from public sizes (n_s, n_t), σ, C, q and the a-priori step
count before training starts (:meth:`dpadapt.deep.dpda.DPDA.plan`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from dpadapt.cli.config_options import add_config_options, add_option, config_from_args
from dpadapt.cli.methods import AdaptOutcome, PlannedRelease, register_module
from dpadapt.configs.deep import DPDAConfig

if TYPE_CHECKING:
    from dpadapt.deep.dpda import DPDA
    from dpadapt.io import Table
    from dpadapt.privacy.guarantee import Guarantee
    from dpadapt.release import Release

PUBLIC_REASON = "DPDA treats the labelled source as public: its rows are sent in the clear (declared by the source owner)"


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(
        parser,
        "--declare-public",
        action="store_true",
        help="required: confirm that the labelled source data is public (DPDA sends it in the clear; "
        "use G-DPDA in-process if the source must be protected)",
    )


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """The source's release: its labelled rows, declared public (ε = ∞, not a DP release)."""
    import scipy.sparse as sp

    from dpadapt.privacy.guarantee import Guarantee
    from dpadapt.release import Release
    from dpadapt.validation import check_features, check_labels

    if not getattr(args, "declare_public", False):
        raise ValueError(
            "release dpda publishes the labelled source rows in the clear (DPDA's public-source premise); "
            "pass --declare-public to confirm the source data is public"
        )
    if table.y is None:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    X = check_features(table.X, "source data", allow_sparse=True)
    y = check_labels(table.y, X.shape[0], "source labels")
    guarantee = Guarantee.non_private("source", PUBLIC_REASON)

    def execute() -> Release:
        if sp.issparse(X):
            arrays = {"X_data": X.data, "X_indices": X.indices, "X_indptr": X.indptr, "X_shape": np.array(X.shape)}
        else:
            arrays = {"X": X}
        return Release("dpda", "public_source", "source", {**arrays, "y": y}, guarantee, {"sparse": sp.issparse(X)})

    return PlannedRelease(guarantee, execute)


def source_from_release(release: Release):
    """``(Xs, ys)`` from a ``public_source`` release."""
    import scipy.sparse as sp

    if release.kind != "public_source":
        raise ValueError(f"adapt dpda needs a public_source release, got kind {release.kind!r}")
    if release.params.get("sparse"):
        shape = tuple(int(v) for v in release["X_shape"])
        X = sp.csr_matrix((release["X_data"], release["X_indices"], release["X_indptr"]), shape=shape)
    else:
        X = release["X"]
    return X, release["y"]


#: the target's options, declared once in :class:`~dpadapt.configs.deep.DPDAConfig` (``--hidden 50,20``)
ADAPT_OPTIONS = ("privacy_mode", "noise_multiplier", "max_grad_norm", "epochs", "min_steps", "batch_size", "hidden",
                 "activation", "lr", "lr_domain", "per_example")


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--epsilon", type=float, default=8.0, help="target budget ε (paper: 8)")
    add_option(parser, "--delta", type=float, default=1e-5, help="target δ (paper: 1e-5)")
    add_option(parser, "--seed", type=int, default=None, help="seed of the public randomness (initialisation)")
    add_config_options(parser, DPDAConfig, ADAPT_OPTIONS)


def model_release(model: DPDA, guarantee: Guarantee) -> Release:
    """The trained network's parameters (covered by the target's DP-SGD guarantee)."""
    from dpadapt.release import Release

    arrays = {f"param.{k}": v.detach().numpy().copy() for k, v in model.network_.state_dict().items()}
    arrays["classes"] = np.asarray(model.classes_)
    params = {"hidden": list(model.hidden), "activation": model.activation, "n_features": model.n_features_in_}
    return Release("dpda", "model", "target", arrays, guarantee, params)


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """Train DPDA on the target's own rows (private) and the public source release."""
    from dpadapt.deep.dpda import DPDA
    from dpadapt.validation import check_features

    public = [r for r in releases if r.method == "dpda"]
    if len(public) != 1:
        raise ValueError(f"adapt dpda needs exactly one dpda public_source release, got {len(public)}")
    Xs, ys = source_from_release(public[0])
    Xt = check_features(table.X, "target data", allow_sparse=True)
    if args.epsilon is None:
        raise ValueError("adapt dpda needs the target's budget --epsilon (its non-private counterpart is DANN)")
    config = config_from_args(DPDAConfig, args)
    model = DPDA(**config.to_dict())
    planned = model.plan(Xs.shape[0], Xt.shape[0])["target"]
    guarantee = planned.guarantee(planned.max_steps)  # fixed before any target row is read
    model.fit_domains(Xs, ys, Xt)
    metrics = {"steps": float(model.n_steps_), "seconds_per_epoch": model.train_log_.seconds_per_epoch}
    if table.y is not None and np.any(table.y >= 0):
        known = table.y >= 0
        metrics["accuracy_on_target_labels"] = float(model.score(Xt[known], table.y[known]))
    return AdaptOutcome(
        model=model,
        guarantees={"target": model.guarantee_},
        return_release=PlannedRelease(guarantee, lambda: model_release(model, guarantee)),
        metrics=metrics,
    )


COMMANDS = register_module(
    __name__,
    "DPDA (Wang et al. 2020): public labelled source sent to the target, which trains DANN with DP-SGD",
    example_release_args=lambda files: ["--data", files["source"], "--declare-public"],
)
