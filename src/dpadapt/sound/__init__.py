"""The sound default: the receiver designs ONE release of the protected sources' class statistics.

Three party steps (``docs/threat-model.md`` for who sees what):

(a) :func:`request` — the unprotected receiver (the target) designs the release on its own rows and the
    public facts (:mod:`dpadapt.sound.design`): the per-row map, its top-k principal directions (k from its
    spectrum and the public noise level), which statistics (sums and counts, or with the pooled second
    moment) and the post-processing. It sends the :class:`~dpadapt.sound.request.Request` in the clear (a
    disclosure of the receiver: ε = ∞; for a source a fixed public per-row map).
(b) :func:`release` — each protected source validates the request as untrusted input, charges its budget
    and releases ONE Gaussian of exactly those statistics (:mod:`dpadapt.sound.source`): (ε, δ)-DP per
    source record, labels included; Δ = 2 (sums, counts) or √6 (with the second moment) replace-one; σ from
    the analytic Gaussian (Balle & Wang, ICML 2018, Thm. 8).
(c) :func:`adapt` — the receiver adds the sources' statistics (several sources answer one request; each
    keeps its own guarantee) and post-processes them on its own rows (:mod:`dpadapt.sound.receiver`):
    the DP prototypes refined by optimal transport, or Fisher's discriminant of the noisy moments (one
    function per design, :data:`POST_PROCESSINGS`). Post-processing: no further privacy cost.

:class:`SoundDA` runs exactly these steps in one process; ``epsilon=None`` is the same pipeline without noise.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING

import numpy as np

from dpadapt import api, lazy
from dpadapt.api import Family, Plan, register
from dpadapt.configs.sound import Config
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import Release, ReleaseError
from dpadapt.sound import design as rule
from dpadapt.sound import calibrate, receiver, scores, source
from dpadapt.sound.receiver import SoundModel, Statistics, combine
from dpadapt.sound.request import KIND as REQUEST_KIND
from dpadapt.sound.request import Request, SourceFacts
from dpadapt.sound.source import KIND as STATS_KIND
from dpadapt.stream import dask_engine
from dpadapt.validation import check_features


def source_facts(config: Config, n_source: int) -> SourceFacts:
    """The public facts of a source of ``n_source`` rows under ``config`` (under add/remove: ``n_design``, never n)."""
    n = config.design_size(n_source)
    if not config.private:
        return SourceFacts(n, None, None, config.relation)
    return SourceFacts(n, split_epsilons(config, n)[0], config.resolved_delta(n), config.relation)


def split_epsilons(config: Config, n_source: int) -> tuple[float, float | None]:
    """(ε of the class statistics, ε of the score histograms or ``None``) of one source at the config's δ: the whole ε
    without a second release (``score_share`` 0), else the exact split of :func:`dpadapt.privacy.families.sound.split_budget`."""
    if not config.score_share:
        return float(config.epsilon), None
    from dpadapt.privacy.families.sound import split_budget

    return split_budget(float(config.epsilon), config.resolved_delta(n_source), float(config.score_share))


class NoiseDominatedWarning(UserWarning):
    """The released statistics are mostly noise: the adapted model will be near the prior."""


def request(Xt, config: Config, n_sources, *, client=None, label_column: str | None = "y") -> Release:
    """(a) The receiver's request for sources of sizes ``n_sources`` (an int or a list), as a Release to send.

    ``Xt``: the receiver's rows in memory (dense or sparse), or on a Dask cluster — a ``dask.array``, a
    ``dask.dataframe`` or the path of a partitioned Parquet dataset (``label_column``, if present, is not a
    feature) — whose map detection, basis (Dask's randomized SVD) and gap statistic run on the workers of
    ``client`` (default: the current scheduler)."""
    sizes = [int(n_sources)] if np.isscalar(n_sources) else [int(n) for n in n_sources]
    classes = config.required_classes() if config.private else config.classes
    if classes is None:
        raise api.ConfigError("classes= must be given: the request names the public label set")
    facts = rule.Facts(tuple(classes), tuple(source_facts(config, n) for n in sizes))
    if not dask_engine.on_cluster(Xt):
        Xt = check_features(Xt, "Xt (target)", allow_sparse=True)
    if config.score_share and config.design == "selection":
        raise api.ConfigError("score_share > 0 splits the budget exactly between two Gaussian releases; the selection "
                              "design's release is a Laplace table: use score_share=0 or another design")
    return rule.design(Xt, facts, feature_type=config.feature_type, kind=config.design, client=client,
                       label_column=label_column, selection=not config.score_share).to_release()


def plan(config: Config, facts: dict) -> Plan:
    """(b, before any row is read) σ and the Guarantee of one source's release: ``facts`` holds the
    ``request`` (a :class:`Request`, or its Release) and the source's ``n_source``."""
    req = facts["request"]
    req = req if isinstance(req, Request) else Request.from_release(req)
    n = int(facts["n_source"])
    first = config.replace(epsilon=split_epsilons(config, n)[0], delta=config.resolved_delta(n)) \
        if config.private and config.score_share else config
    return source.plan(req, first, n)


def release(plan_: Plan, request_: Release | Request, Xs, ys=None, noise=None, **cluster) -> Release:
    """(b) One source's release; ``ys`` labels of the public label set (or ``Xs`` a ChunkedSource that carries them),
    or a Dask collection / Parquet dataset summed on a cluster (``cluster``: :func:`dpadapt.sound.source.release`'s
    ``client``, ``label_column``, ``id_column``, ``rows_per_id``)."""
    req = request_ if isinstance(request_, Request) else Request.from_release(request_)
    return source.release(plan_, req, Xs, ys, noise, **cluster)


def _warn_if_noise_dominated(st: Statistics) -> None:
    energy = np.sum(st.sums**2, axis=1)
    share = np.minimum(1.0, st.sums.shape[1] * st.sigma**2 / np.maximum(energy, np.finfo(float).tiny))
    if st.sigma > 0 and float(np.mean(share)) > 0.75:
        warnings.warn(f"the release noise dominates the class statistics (noise share {np.mean(share):.2f} of their energy, "
                      f"σ = {st.sigma:.3g}): expect predictions near the class prior; a larger ε or more source rows would help",
                      NoiseDominatedWarning, stacklevel=3)


def adapt(releases: list[Release], Xt, config: Config | None = None, *, request_: Release | None = None) -> SoundModel:
    """(c) The receiver's model from the sources' releases of its request (the request may be among ``releases``)."""
    reqs = [r for r in releases if r.kind == REQUEST_KIND] + ([request_] if request_ is not None else [])
    if len({r.digest() for r in reqs}) != 1:
        raise ReleaseError("adapt needs the one release request the sources answered (`dpadapt request`); "
                           f"got {len(reqs)}")
    Xt = check_features(Xt, "Xt (target)", allow_sparse=True)
    req = Request.from_release(reqs[0], n_features=Xt.shape[1])
    if config is not None and config.classes is not None and tuple(config.classes) != tuple(req.classes):
        raise ReleaseError(f"the request is for the label set {list(req.classes)}, you expect {list(config.classes)}")
    if req.statistics == "candidates":
        return _adapt_selection(req, [r for r in releases if r.kind == STATS_KIND], Xt)
    st = combine(req, [r for r in releases if r.kind == STATS_KIND])
    _warn_if_noise_dominated(st)
    Z = req.row_map()(Xt)
    post = req.design["design"]
    W, b, details = POST_PROCESSINGS[post](req, st, Z)
    details.update(sigma=st.sigma, n=st.n, k=req.k, sources=len(st.guarantees))
    W, b, cal = calibrate.calibrate(post, st, W, b)
    model = SoundModel(np.asarray(req.classes), req.log1p, req.mean, req.components, W, b, post,
                       {**details, **cal, "source_prior": receiver.class_prior(st.counts).tolist()})
    return calibrate.at_target_prior(model, Z)


def _adapt_selection(req: Request, releases: list[Release], Xt, readout: str | None = None) -> SoundModel:
    """(c) of the selection design: the candidates read off the sources' noisy tables (:func:`receiver.selection`;
    ``readout``: the request's, else :data:`design.SELECTION_READOUT`), then the target's prior estimated on its
    rows — post-processing only."""
    table = receiver.combine_candidates(req, releases)
    Z = req.row_map()(Xt)
    readout = readout or req.design.get("readout", "matching")  # a request made before the readout was stated: matching
    W, b, details = receiver.selection(table, req.candidates, Z, readout)
    details.update(scale=table.scale, k=req.k, sources=len(table.guarantees), temperature=1.0, temperature_applied=False,
                   calibration="none (the prototypes' concentration is fitted on the receiver's rows)",
                   source_prior=receiver.class_prior(table.counts.sum(axis=1)).tolist())
    model = SoundModel(np.asarray(req.classes), req.log1p, req.mean, req.components, W, b, "selection", details)
    return calibrate.at_target_prior(model, Z)


def _prototypes(req: Request, st: Statistics, Z) -> tuple:
    """The DP prototypes refined by optimal transport on the receiver's rows (:func:`receiver.prototypes_ot`)."""
    W, b = receiver.prototypes_ot(st, Z)
    return W, b, {}


def _discriminant(req: Request, st: Statistics, Z) -> tuple:
    """Fisher's discriminant of the noisy moments with the public ridge of :func:`design.discriminant_ridge`."""
    if st.second is None:
        raise ReleaseError("the discriminant design needs the second moment, which the release does not carry")
    lam = rule.discriminant_ridge(st.sigma, st.n, req.k)
    n = float(sum(s.n_source for s in req.sources))  # public facts of the request, never the release
    sigma = rule.effective_noise(req.sources, req.statistics)
    finish = rule.finishes("discriminant", n, len(req.classes), sigma)
    if finish:  # plenty of data: the ridge of both errors (design.sampling_ridge)
        lam = rule.sampling_ridge(sigma, n, req.k)
    W, b = receiver.discriminant(st, lam)
    return W, b, {"ridge": lam, "finish": finish}


#: The receiver's post-processing of each design (:data:`design.DESIGNS`).
POST_PROCESSINGS = {"prototypes": _prototypes, "discriminant": _discriminant}


def _n_rows(Xs, label_column: str) -> int:
    """The number of rows of a source: its shape, or (a Dask frame, a Parquet dataset) counted on the cluster."""
    if dask_engine.is_parquet_dataset(Xs):
        Xs = dask_engine.read_parquet(Xs, label_column)
    return int(Xs.shape[0]) if not hasattr(Xs, "columns") or not dask_engine.on_cluster(Xs) else int(len(Xs))


def run_parties(config: Config, sources: list[tuple], Xt) -> tuple[Release, list[Release], SoundModel]:
    """All steps in one process: the request, one release per ``(Xs, ys)`` in ``sources`` (fresh noise each),
    the model. A source on a cluster is a Dask array with its labels, or a Dask frame / Parquet dataset with the
    name of its label column as ``ys``; its sums are computed on the current Dask scheduler."""
    frames = [dask_engine.on_cluster(Xs) and isinstance(ys, str) for Xs, ys in sources]
    sizes = [_n_rows(Xs, ys if frame else "y") for (Xs, ys), frame in zip(sources, frames)]
    req = request(Xt, config, sizes)
    _, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
    rels = []
    for (Xs, ys), n, frame in zip(sources, sizes, frames):
        p = plan(config, {"request": req, "n_source": n})
        rels.append(release(p, req, Xs, None, noise, label_column=ys) if frame else release(p, req, Xs, ys, noise))
    model = adapt([req, *rels], Xt, config)
    if not config.score_share:
        return req, rels, model
    score_req = scores.request(model, Xt, bins=config.score_bins, confidence=config.score_confidence_bins,
                               n_features=Xt.shape[1])
    for (Xs, ys), n, frame in zip(sources, sizes, frames):
        eps2 = split_epsilons(config, n)[1] if config.private else None
        sp = scores.plan(score_req, eps2, config.resolved_delta(n) if config.private else None, n_source=n,
                         relation=config.relation)
        rels.append(scores.release(sp, score_req, Xs, None, noise, label_column=ys) if frame else
                    scores.release(sp, score_req, Xs, ys, noise))
    rels.append(score_req.to_release())
    return req, rels, scores.adapt(model, score_req, rels, Xt)


def contract_example(random_state: int) -> tuple[Config, dict]:
    """The family contract's example: 60 labelled source rows, 40 target rows (``contract_blobs``).

    The design is pinned to the prototypes: at 20 rows a class and ε = 1 ``auto`` takes the selection design,
    whose one noisy array (its count table) is not the family's ``sums``/``counts``; that design is attacked as its
    own route (:mod:`dpadapt.routes`, ``sound/selection``).
    """
    from dpadapt.datasets.synthetic import contract_blobs

    config = Config(epsilon=1.0, classes=(0, 1, 2), random_state=random_state, design="prototypes")
    return config, contract_blobs(random_state)


def contract_run(config: Config, data: dict) -> tuple[list[Release], SoundModel]:
    req, rels, model = run_parties(config, [(data["Xs"], data["ys"])], data["Xt"])
    return [req, *rels], model


def _per_party(releases: list[Release]):
    """One guarantee for the source party: the release's, or (several sources) the loosest, with the others in details.
    A source that also released score histograms holds the exact composition of its two releases."""
    stats = [r for r in releases if r.kind == STATS_KIND]
    extra = [r for r in releases if r.kind == scores.KIND]
    if extra and len(extra) != len(stats):
        raise ReleaseError("every source answers both releases: the class statistics and the score histograms")
    if extra:
        from dpadapt.privacy.families.sound import composed_guarantee

        gs = [composed_guarantee(a.guarantee, b.guarantee) for a, b in zip(stats, extra)]
    else:
        gs = [r.guarantee for r in stats]
    if len(gs) == 1:
        return gs
    worst = max(gs, key=lambda g: (g.epsilon, g.delta))
    return [dataclasses.replace(worst, details={**worst.details, "sources": [g.to_dict() for g in gs],
                                                "note": "each source holds its own (ε, δ) for its own rows; shown: the largest"})]


register(Family(
    name="sound", config=Config, protected=("source",), plan=plan, release=release, adapt=adapt, estimator="dpadapt.sound.SoundDA",
    summary="the receiver designs ONE Gaussian release of the sources' class statistics; OT prototypes or Fisher's discriminant",
    example=contract_example, run_parties=contract_run, public_arrays=("mean", "components"),
    noisy_arrays=("sums", "counts"),
))

if TYPE_CHECKING:
    from dpadapt.sound.estimator import SoundDA

#: the estimator loads scikit-learn: imported on first use (``import dpadapt.sound`` needs NumPy only)
__getattr__, __dir__ = lazy.attach(__name__, {"SoundDA": "dpadapt.sound.estimator"})

__all__ = ["Config", "NoiseDominatedWarning", "Request", "SoundDA", "SoundModel", "SourceFacts", "adapt", "plan",
           "release", "request", "run_parties"]
