"""``dpadapt release sound`` (each source) and ``dpadapt adapt sound`` (the receiver): the sound default.

1. receiver: ``dpadapt request --data target.csv --classes a,b --n-source N --epsilon E --delta D
   --out request.release`` designs the release on its own rows (a disclosure of the unprotected receiver,
   charged to no budget);
2. each source: ``dpadapt release sound --request request.release --data source.csv --classes a,b --epsilon E
   --delta D --out stats.release`` — the source's label set from its own declaration (``--classes`` or its schema,
   never from the request), the request checked as untrusted input against it, then ONE Gaussian release of the
   statistics it names, planned before any noise and charged to the source's ledger;
3. receiver: ``dpadapt adapt sound --release stats.release [--release stats2.release …] --own-release
   request.release --data target.csv --out model.dpadapt``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from dpadapt.cli.cluster import add_cluster_arguments, client, on_cluster
from dpadapt.cli.config_options import _tuple, add_option
from dpadapt.cli.methods import AdaptOutcome, PlannedRelease, register_module
from dpadapt.configs.sound import Config

if TYPE_CHECKING:
    from dpadapt.io import Table
    from dpadapt.release import Release


def add_release_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--request", required=True, help="the receiver's release request (from `dpadapt request`)")
    add_option(parser, "--classes", type=_tuple, default=None,
               help="your public label set, comma-separated (required unless your --schema declares it); the request "
                    "must be for the same set, in the same order")
    add_option(parser, "--relation", default="replace_one", choices=("replace_one", "add_remove"),
               help="neighbouring relation of the guarantee (the request must have been made for it)")
    add_cluster_arguments(parser)


def label_indices(table: Table, classes: tuple, rows=slice(None)) -> np.ndarray:
    """Positions of the table's labels (of ``rows``) in the public label set, matched as text (``1`` and ``"1"``
    are one label). Through a schema the labels are already indices and the label set is ``0..K-1`` (the
    class names travel in the files' agreement facts, checked by the driver)."""
    values = [str(v) for v in np.asarray(table.y)[rows].tolist()]
    lookup = {str(c): i for i, c in enumerate(classes)}
    unknown = sorted({v for v in values if v not in lookup})
    if unknown:
        raise ValueError(f"{table.path}: label(s) {', '.join(unknown[:5])} are not in the public label set {list(classes)}")
    return np.fromiter((lookup[v] for v in values), dtype=np.int64, count=len(values))


def own_classes(table: Table, args: argparse.Namespace) -> tuple:
    """The protected source's public label set, from its own declaration only: its schema's label set (as indices
    ``0..K-1``; the names travel as agreement facts) or ``--classes``. Never from a received file: a label set the
    receiver chose would make "release or refusal" reveal whether a row has a label outside it."""
    schema_classes = getattr(table, "classes", None)
    if schema_classes:
        return tuple(range(len(schema_classes)))
    classes = _tuple(args.classes) if isinstance(args.classes, str) else args.classes
    if not classes:
        raise ValueError("declare your public label set: --classes a,b,... (or read the data through a --schema that "
                         "declares it); the request's label set is the receiver's choice, not yours")
    return tuple(classes)


def request_bytes(n_features: int) -> int:
    """The most a request for ``n_features`` features can hold: a mean and at most ``min(d, MAX_K)`` directions
    (float64), with room for the ``.npy`` headers. A request file declaring more is refused before it is inflated."""
    from dpadapt.sound.request import MAX_K

    return 8 * n_features * (1 + min(n_features, MAX_K)) + 4096


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    """The request validated, then the Guarantee from public quantities (the table's shape); ``execute`` reads the
    rows chunk by chunk (never the whole file) and draws the noise once."""
    from dpadapt import sound
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.release import Release
    from dpadapt.sound.request import Request

    cluster = on_cluster(args, table)
    if not cluster and not table.source.labelled:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    own = own_classes(table, args)
    req = Request.from_release(Release.load(args.request, expect_method="sound", max_array_bytes=request_bytes(table.n_features)),
                               n_features=table.n_features)
    if [str(c) for c in own] != [str(c) for c in req.classes]:
        raise ValueError(f"the request is for the label set {list(req.classes)}; yours is {list(own)} (names and order must agree)")
    config = Config(epsilon=args.epsilon, delta=args.delta, classes=req.classes, relation=args.relation)
    plan = sound.plan(config, {"request": req, "n_source": table.n_rows})
    _, noise = random_streams(args.seed)
    if not cluster:
        return PlannedRelease(plan.guarantee, lambda: sound.release(plan, req, table.source, noise=noise))

    def on_the_cluster() -> Release:
        with client(args) as c:
            return sound.release(plan, req, table.path, noise=noise, client=c, label_column=table.label_column)

    return PlannedRelease(plan.guarantee, on_the_cluster)


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--seed", type=int, default=None, help="unused: the receiver's steps are deterministic")


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """The receiver's model from its request (an --own-release) and the sources' statistics (--release)."""
    from dpadapt import sound

    model = sound.adapt(releases, table.X)
    metrics: dict[str, float] = {}
    if table.y is not None and np.any(np.asarray(table.y) >= 0):
        known = np.asarray(table.y) >= 0
        truth = label_indices(table, tuple(model.classes), known)
        metrics["accuracy_on_target_labels"] = float(np.mean(np.argmax(model.decision_function(table.X[known]), axis=1) == truth))
    guarantees = {"source": sound._per_party([r for r in releases if r.kind == sound.STATS_KIND])[0]}
    return AdaptOutcome(model=model, guarantees=guarantees, metrics=metrics)


def _example(files: dict) -> list[str]:
    """Generic tests: a request made here from the target file for the source file's rows (3 classes)."""
    from dpadapt import sound
    from dpadapt.io import load_table

    source, target = load_table(files["source"]), load_table(files["target"])
    out = files["target"].parent / "request.release"
    if not out.exists():
        cfg = Config(epsilon=4.0, delta=1.0 / (10 * source.X.shape[0]), classes=(0, 1, 2))
        sound.request(target.X, cfg, source.X.shape[0]).save(out)
    return ["--data", str(files["source"]), "--request", str(out), "--classes", "0,1,2"]


COMMANDS = register_module(
    __name__,
    "the sound default: the receiver's request → each source's ONE Gaussian of the statistics it names → "
    "OT-refined prototypes or Fisher's discriminant on the receiver's rows",
    example_release_args=_example,
)
