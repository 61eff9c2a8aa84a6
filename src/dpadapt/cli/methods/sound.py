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

Optionally a second, small release that calibrates (:mod:`dpadapt.sound.scores`): ``adapt sound … --score-request
sr.release`` also writes a request for per-class histograms of the model's scores; each source answers it with
``dpadapt release sound --request sr.release …`` (the kind of the file decides; charged to its ledger, which composes
it with the first), and ``adapt sound`` with both releases and both requests gives the calibrated model.
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
    from dpadapt.release import Release
    from dpadapt.sound import scores
    from dpadapt.sound.request import Request

    if not on_cluster(args, table) and not table.source.labelled:
        from dpadapt.cli.table_options import missing_labels

        raise missing_labels(table, args)
    own = own_classes(table, args)
    received = Release.load(args.request, expect_method="sound", max_array_bytes=score_request_bytes(table.n_features, len(own)))
    if received.kind == scores.REQUEST_KIND:
        return plan_score_release(args, table, own, received)
    return plan_statistics_release(args, table, own, Request.from_release(received, n_features=table.n_features))


def plan_statistics_release(args: argparse.Namespace, table: Table, own: tuple, req) -> PlannedRelease:
    """The first release for the checked request ``req``: ONE Gaussian of the statistics it names, its Guarantee
    planned from public quantities, the rows read chunk by chunk (or per partition on a cluster) by ``execute``."""
    from dpadapt import sound
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.release import Release

    if [str(c) for c in own] != [str(c) for c in req.classes]:
        raise ValueError(f"the request is for the label set {list(req.classes)}; yours is {list(own)} (names and order must agree)")
    config = Config(epsilon=args.epsilon, delta=args.delta, classes=req.classes, relation=args.relation)
    plan = sound.plan(config, {"request": req, "n_source": table.n_rows})
    _, noise = random_streams(args.seed)
    if not on_cluster(args, table):
        return PlannedRelease(plan.guarantee, lambda: sound.release(plan, req, table.source, noise=noise))

    def on_the_cluster() -> Release:
        with client(args) as c:
            return sound.release(plan, req, table.path, noise=noise, client=c, label_column=table.label_column)

    return PlannedRelease(plan.guarantee, on_the_cluster)


def score_request_bytes(n_features: int, n_classes: int) -> int:
    """The most a score request can hold: a request's arrays, the model (K × k and K) and the bin edges."""
    from dpadapt.sound.request import MAX_K
    from dpadapt.sound.scores import MAX_BINS

    return request_bytes(n_features) + 8 * (n_classes * (min(n_features, MAX_K) + 1) + MAX_BINS)


def plan_score_release(args: argparse.Namespace, table: Table, own: tuple, received: Release) -> PlannedRelease:
    """The second release: the score request validated, then ONE Gaussian of the (K, B) counts of the source's rows by
    label and bin (:mod:`dpadapt.sound.scores`; read chunk by chunk, or per partition on a cluster as the first),
    charged to the source's ledger like any release (the ledger composes it with the first)."""
    from dpadapt.privacy.mechanisms import random_streams
    from dpadapt.sound import scores

    req = scores.ScoreRequest.from_release(received, n_features=table.n_features)
    if [str(c) for c in own] != [str(c) for c in req.classes]:
        raise ValueError(f"the score request is for the label set {list(req.classes)}; yours is {list(own)}")
    if args.relation not in ("replace_one", "add_remove"):
        raise ValueError(f"unknown relation {args.relation!r}")
    plan = scores.plan(req, args.epsilon, args.delta, n_source=table.n_rows, relation=args.relation)
    _, noise = random_streams(args.seed)
    if not on_cluster(args, table):
        return PlannedRelease(plan.guarantee, lambda: scores.release(plan, req, table.source, noise=noise))

    def on_the_cluster() -> Release:
        with client(args) as c:
            return scores.release(plan, req, table.path, noise=noise, client=c, label_column=table.label_column)

    return PlannedRelease(plan.guarantee, on_the_cluster)


def add_adapt_arguments(parser: argparse.ArgumentParser) -> None:
    add_option(parser, "--seed", type=int, default=None, help="unused: the receiver's steps are deterministic")
    add_option(parser, "--score-request", default=None, metavar="FILE",
               help="also write a score request for a second, small release: each source answers it with `dpadapt release "
                    "sound --request FILE` (per-class histograms of this model's scores on its rows, charged to its "
                    "ledger); adapt again with those releases and this file (--own-release) for calibrated probabilities "
                    "and the target's prevalence with an interval (docs/decisions.md)")
    add_option(parser, "--score-bins", type=int, default=None,
               help="bins of the binary score (default 10); with K > 2 classes, bins of the top-class probability per "
                    "predicted class (K²·M cells; default ⌊64/K²⌋ within 1..4)")
    add_option(parser, "--prevalence-interval", default=None, choices=("resample", "hull", "residual", "residual-tv"),
               help="with score histograms, the interval of the target's prevalence: resample (the release noise and "
                    "the rows), hull (of the match, em and mean estimators' intervals), residual / residual-tv (widened "
                    "by the mixture-fit residual of the receiver's scores; a shift beyond the prior); default: "
                    "dpadapt.sound.scores.INTERVAL (benchmarks/decisions)")


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    """The receiver's model from its request (an --own-release) and the sources' statistics (--release)."""
    from dpadapt import sound
    from dpadapt.sound import scores

    first = [r for r in releases if r.kind not in (scores.KIND, scores.REQUEST_KIND)]
    model = sound.adapt(first, table.X)
    score_rels = [r for r in releases if r.kind in (scores.KIND, scores.REQUEST_KIND)]
    if score_rels:
        model = calibrated(model, score_rels, table, getattr(args, "prevalence_interval", None))
    if getattr(args, "score_request", None):
        write_score_request(args, table, model)
    metrics: dict[str, float] = {}
    if table.y is not None and np.any(np.asarray(table.y) >= 0):
        known = np.asarray(table.y) >= 0
        truth = label_indices(table, tuple(model.classes), known)
        metrics["accuracy_on_target_labels"] = float(np.mean(np.argmax(model.decision_function(table.X[known]), axis=1) == truth))
    # with score histograms the driver composes every source release by dp-accounting (model_guarantees)
    # (the receiver's two disclosures are its one request's: the score request is post-processing of it and the release)
    guarantees = ({"target": next(r.guarantee for r in releases if r.kind == sound.REQUEST_KIND)} if score_rels else
                  {"source": sound._per_party([r for r in releases if r.kind == sound.STATS_KIND])[0]})
    return AdaptOutcome(model=model, guarantees=guarantees, metrics=metrics)


def calibrated(model, score_rels: list[Release], table: Table, interval: str | None = None):
    """The model calibrated by the sources' score histograms: the score request (--own-release) must be the one made
    from this very model (the receiver's steps are deterministic), each histogram file answer it (checked as untrusted
    input in :func:`dpadapt.sound.scores.combine`); ``interval``: the prevalence's (:data:`dpadapt.sound.scores.INTERVALS`)."""
    from dpadapt.sound import scores

    reqs = [r for r in score_rels if r.kind == scores.REQUEST_KIND]
    if len(reqs) != 1 or not any(r.kind == scores.KIND for r in score_rels):
        raise ValueError("calibrating with score histograms needs their score request (--own-release, the file "
                         "`adapt --score-request` wrote) and at least one source's answer (--release)")
    req = scores.ScoreRequest.from_release(reqs[0], n_features=table.n_features)
    if not (np.array_equal(req.W, model.W) and np.array_equal(req.b, model.b)):
        raise ValueError("the score request was made from another model than these releases give; refused")
    return scores.adapt(model, req, score_rels, table.X, interval=interval)


def write_score_request(args: argparse.Namespace, table: Table, model) -> None:
    """The score request for ``model`` (bins at the quantiles of the receiver's own scores), a disclosure of the receiver."""
    from dpadapt.cli.agreement import owner_params
    from dpadapt.cli.party_cmd import N_FEATURES_PARAM
    from dpadapt.sound import scores

    req = scores.request(model, table.X, bins=args.score_bins, confidence=args.score_bins, n_features=table.n_features)
    rel = req.to_release()
    rel.params.update({N_FEATURES_PARAM: int(table.n_features), **owner_params(table, args)})
    rel.save(args.score_request)
    print(f"wrote {args.score_request}: score request {rel.release_id[:12]} ({req.describe()}); give it to each source "
          "(`dpadapt release sound --request FILE`)")


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
