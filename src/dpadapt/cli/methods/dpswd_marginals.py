"""``dpadapt release dpswd-marginals`` (target) and ``dpadapt adapt dpswd-marginals`` (source).

The sound DP-SWD design of :mod:`dpadapt.deep.swd_marginals` (``DPSWDAdapter(design="marginals")``)
across two processes, three messages:

1. source: ``dpadapt slices --data source.npz --network mlp --out map.release`` — source-only
   training of g → h on its own rows, then the public map (g with its standardisation, h, centre,
   k scaled directions, bins; :mod:`dpadapt.deep.swd_publicmap`). A disclosure (ε = ∞: the source
   is public in DP-SWD), charged to no budget.
2. target: ``dpadapt release dpswd-marginals --map map.release --data target.npz --epsilon E
   --delta D --out hist.release`` — the map is checked as untrusted input (architecture from the
   registry, every shape, the digest, the data's width); σ and the Guarantee (analytic Gaussian,
   ℓ2 sensitivity sqrt(2k) under replace-one, one release) are planned from (ε, δ, n, k, bins)
   before any noise; the driver charges the target's ledger; then ONE noisy k × b histogram of
   ``(g(x_t) − c) U`` is released (``dpswd``/``sliced_marginals``, bound to the map by its digest).
3. source: ``dpadapt adapt dpswd-marginals --release hist.release --own-release map.release
   --data source.npz --out model.dpadapt`` — checks the release against its map, fits the feature
   map T and fine-tunes h on its own rows (post-processing) and saves g → adapted h
   (:class:`~dpadapt.modelio.TorchClassifier`, architecture ``dpswd-net``); the target scores it with
   ``dpadapt predict`` / ``dpadapt score``. The model carries the target's guarantee of step 2.

What crosses: the map (source → target), the noisy histogram (target → source), the model
(source → target). No target row, feature or gradient leaves the target other than the histogram.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from dpadapt.cli.config_options import add_config_options, add_option, config_from_args
from dpadapt.cli.methods import AdaptOutcome, MethodCommands, PlannedRelease, register
from dpadapt.cli.party_cmd import add_trust_argument, trusted_keys
from dpadapt.configs.deep import DPSWDConfig

if TYPE_CHECKING:
    from dpadapt.io import Table
    from dpadapt.release import Release

#: the source's adaptation options, declared once in :class:`~dpadapt.configs.deep.DPSWDConfig`
ADAPT_OPTIONS = ("adapt_steps", "map_form", "marginal_weight")


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--map", required=True, help="the source's public map (from `dpadapt slices`)")
    add_trust_argument(parser)


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """Check the map, plan σ and the Guarantee from (ε, δ, n, k, bins); ``execute`` draws the noise."""
    from dpadapt.deep import swd_marginals as sm
    from dpadapt.deep.swd_publicmap import load_map
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.release import Release
    from dpadapt.validation import check_features

    X = check_features(table.X, "target data")
    public_map = load_map(Release.load(args.map, expect_method="dpswd", trusted=trusted_keys(args)), X.shape[1])
    slices = public_map.slices
    plan = sm.plan_marginals(args.epsilon, args.delta, n=X.shape[0], k=slices.k, bins=slices.bins)
    _, noise = random_streams(args.seed)
    return PlannedRelease(plan.guarantee, lambda: sm.release_marginals(plan, slices, X, noise))


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_options(parser, DPSWDConfig, ADAPT_OPTIONS)


def _split(releases: list[Release]) -> tuple[Release, Release]:
    from dpadapt.release import ReleaseError

    hist = [r for r in releases if r.kind == "sliced_marginals"]
    maps = [r for r in releases if r.kind == "public_map"]
    if len(hist) != 1 or len(maps) != 1:
        raise ReleaseError(f"adapt dpswd-marginals needs one sliced_marginals release and one public_map, "
                           f"got {[r.kind for r in releases]}")
    return hist[0], maps[0]


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """Source: adapt h to the target's released marginals (post-processing) and return g → adapted h."""
    from dpadapt.classstats import label_indices
    from dpadapt.deep import swd_marginals as sm
    from dpadapt.deep.swd_publicmap import load_map
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.validation import check_features, check_labels

    hist, map_release = _split(releases)
    X = check_features(table.X, "source data")
    if table.y is None:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    public_map = load_map(map_release, X.shape[1])
    y = check_labels(table.y, X.shape[0], "source labels", classes=public_map.classes.tolist())
    sm.check_release(hist, public_map.slices)
    config = config_from_args(DPSWDConfig, args)
    rng, _ = random_streams(config.random_state)
    adapted = sm.adapt_marginals(
        hist, public_map.slices, X, label_indices(y, tuple(public_map.classes.tolist())), public_map.h,
        sm.AdaptConfig(steps=config.adapt_steps, weight=float(config.marginal_weight), form=config.map_form), rng,
    )
    model = public_map.classifier(adapted.h)
    metrics = {"marginal_loss_first": adapted.losses[0], "marginal_loss_last": adapted.losses[-1]} if adapted.losses else {}
    metrics["accuracy_on_source"] = float(np.mean(model.predict(X) == y))
    return AdaptOutcome(model=model, guarantees={"target": hist.guarantee, "source": map_release.guarantee},
                        metrics=metrics)


def _example_release_args(files: dict) -> list[str]:
    """For the generic tests: a small map from the labelled source, then the target's release arguments."""
    from dpadapt.cli.main import main

    out = files["source"].with_name("dpswd-marginals-example.map")
    if not out.exists() and main(["slices", "--data", str(files["source"]), "--network", "mlp", "--epochs", "1",
                                  "--min-steps", "20", "--k", "20", "--bins", "8", "--seed", "0", "--declare-public", "--out", str(out)]):
        raise RuntimeError("dpadapt slices failed on the example source")
    return ["--data", files["target"], "--map", out]


COMMANDS = register(MethodCommands(
    name="dpswd-marginals",
    help="DP-SWD, sound design: the target releases its sliced marginals ONCE under the public source's map",
    add_release_arguments=add_release_arguments, plan_release=plan_release,
    add_adapt_arguments=add_adapt_arguments, adapt=adapt,
    example_release_args=_example_release_args, release_method="dpswd",
))
