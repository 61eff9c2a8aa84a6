"""The protected source's step: ONE Gaussian release of exactly the statistics the request names.

:func:`plan` — from the request and the source's own public facts (its size n, (ε, δ), the relation and
its label set), before any row is read: σ from the analytic Gaussian (Balle & Wang, ICML 2018, Thm. 8)
at Δ = 2 for per-class sums and counts (``"sums"``, :data:`~dpadapt.privacy.mechanisms.CLASS_STATISTICS_SENSITIVITY`),
Δ = √6 with the pooled second moment (``"moments"``, :data:`~dpadapt.privacy.mechanisms.CLASS_MOMENT_SENSITIVITY`),
replace-one (√2 / √3 add/remove), whatever n and the request: the request is a public per-row map into the
unit ball, so the guarantee is that of the release alone — (ε, δ)-DP per source record, label included.

:func:`release` — maps every row with the request's map (:class:`~dpadapt.sound.spaces.RowMap`), adds its
exact sums chunk by chunk (rows clipped to the unit ball by the mechanism), and draws the noise once, in
:mod:`dpadapt.privacy.mechanisms`. A source that holds one class, or none of some, releases like any other:
the label set is public.
"""

from __future__ import annotations

import functools
import math
import warnings

from dpadapt.api import Plan
from dpadapt.classstats.tiny import TinySourceWarning, warn_if_pure_noise  # noqa: F401  (TinySourceWarning: part of this step's API)
from dpadapt.privacy.families.classstats import class_statistics_plan
from dpadapt.privacy.families.sound import candidate_histogram_plan, class_moments_plan
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.release import Release
from dpadapt.sound.request import METHOD, Request
from dpadapt.stream import dask_engine
from dpadapt.stream.readers import labelled_source
from dpadapt.stream.sums import CandidateCounts, ClassMomentSums, ClassSums, accumulate

KIND = "class_statistics"


class RequestMismatchWarning(UserWarning):
    """The source releases for other public facts than the request was designed for (valid, but not the best design)."""


def plan(request: Request, config, n_source: int) -> Plan:
    """σ and the Guarantee of this source's release of ``request`` (``config``: the source's :class:`~dpadapt.sound.Config`).

    Refuses (one line) a request made for another label set; warns (:class:`RequestMismatchWarning`, one line)
    when it was designed for other (n, ε, δ) or another relation — the release then uses the source's own
    facts, its guarantee is unchanged, and the receiver post-processes with the σ the release states.
    """
    if tuple(request.classes) != tuple(config.required_classes() if config.private else (config.classes or request.classes)):
        raise ValueError(f"the release request is for the label set {list(request.classes)}, yours is "
                         f"{list(config.classes)} (names and order must agree)")
    delta = config.resolved_delta(n_source) if config.private else None
    mismatch = request.mismatch(n_source, config.epsilon, delta, config.relation)
    if mismatch:
        warnings.warn(mismatch, RequestMismatchWarning, stacklevel=2)
    public = {"n_source": int(n_source), "request_sha256": request.digest(), "statistics": request.statistics}
    if not config.private:
        return Plan(METHOD, KIND, config, public, None, {"sigma": 0.0})
    if request.statistics == "candidates":  # the selection design: one Laplace table, pure ε
        scale, guarantee = candidate_histogram_plan(config.epsilon, classes=request.classes,
                                                    num_candidates=request.num_candidates, relation=config.relation,
                                                    extra_theorem=_map_words(request))
        warn_if_pure_noise(n_source, len(request.classes), math.sqrt(2.0) * scale, config.epsilon, delta)  # Laplace's std
        return Plan(METHOD, KIND, config, public, guarantee, {"sigma": 0.0, "scale": scale, "delta": delta})
    make = class_moments_plan if request.statistics == "moments" else class_statistics_plan
    sigma, guarantee = make(config.epsilon, delta, classes=request.classes, relation=config.relation,
                            extra_theorem=_map_words(request))
    warn_if_pure_noise(n_source, len(request.classes), sigma, config.epsilon, delta)
    return Plan(METHOD, KIND, config, public, guarantee, {"sigma": sigma, "delta": delta})


def _map_words(request: Request) -> str:
    return (f"the receiver's request {request.digest()[:12]}: {'signed log1p, ' if request.log1p else ''}ℓ2-normalise"
            + (f", its {request.k}-d basis, re-normalise" if request.space == "basis" else ""))


def _accumulator(request: Request):
    """A factory of empty accumulators of the exact sums the request names (picklable: it travels to Dask workers)."""
    if request.statistics == "candidates":
        return functools.partial(CandidateCounts, tuple(request.classes), request.row_map(), request.candidates)
    kind = ClassMomentSums if request.statistics == "moments" else ClassSums
    return functools.partial(kind, tuple(request.classes), request.row_map())


def _exact_sums(request: Request, Xs, ys, *, client, label_column: str, id_column: str | None, rows_per_id: int | None):
    """The request's exact sums of the source's rows: chunk by chunk here, or per partition on a Dask cluster."""
    empty = _accumulator(request)
    if dask_engine.is_parquet_dataset(Xs):
        Xs = dask_engine.read_parquet(Xs, label_column)
    if dask_engine.is_dask_collection(Xs):
        frame = hasattr(Xs, "columns")
        d = len([c for c in Xs.columns if c not in (label_column, id_column)]) if frame else int(Xs.shape[1])
        if d != request.n_features:
            raise ValueError(f"the request is for {request.n_features} features; the source has {d}")
        if frame:
            return dask_engine.sums_of_frame(Xs, label_column, empty, client=client, id_column=id_column,
                                             rows_per_id=rows_per_id)
        if ys is None or rows_per_id is not None:
            raise ValueError("a dask.array source needs its labels ys (and patient-level bounding needs a frame with the ID column)")
        return dask_engine.sums_of_array(Xs, ys, empty, client=client)
    if rows_per_id is not None:
        raise ValueError("rows_per_id bounds a Dask frame or Parquet dataset by its ID column; bound an in-memory table "
                         "before the release (the CLI's --rows-per-patient)")
    source = labelled_source(Xs, ys, classes=tuple(request.classes))
    if source.n_features != request.n_features:
        raise ValueError(f"the request is for {request.n_features} features; the source has {source.n_features}")
    return accumulate(empty(), source)


def release(plan_: Plan, request: Request, Xs, ys=None, noise=None, *, client=None, label_column: str = "y",
            id_column: str | None = None, rows_per_id: int | None = None) -> Release:
    """The source's release. ``Xs``: rows with labels ``ys`` (values of ``request.classes``); a
    :class:`~dpadapt.stream.ChunkedSource` whose chunks carry them (read once, chunk by chunk); or, summed per
    partition on the Dask cluster of ``client`` (default: the current scheduler), a ``dask.array`` with labels
    ``ys``, a ``dask.dataframe`` with a ``label_column`` or the path of a partitioned Parquet dataset (a directory
    or a glob). On a frame, ``rows_per_id`` keeps the first that many rows of each ``id_column`` value before any
    row is mapped (patient-level bounding; the plan is then for the rows kept). The noise is drawn once, here."""
    if request.digest() != plan_.facts["request_sha256"]:
        raise ValueError("the plan was made for another release request")
    acc = _exact_sums(request, Xs, ys, client=client, label_column=label_column, id_column=id_column,
                      rows_per_id=rows_per_id)
    if acc.n_rows != int(plan_.facts["n_source"]):
        raise ValueError(f"the plan is for {plan_.facts['n_source']} source rows, got {acc.n_rows}")
    config = plan_.config
    if request.statistics == "candidates":
        return _candidates_release(plan_, request, acc, noise)
    if config.private:
        st = acc.release(sigma=plan_.calibration["sigma"], relation=config.relation, noise=noise)
        arrays = {"sums": st.sums, "counts": st.counts}
        if request.statistics == "moments":
            arrays["second"] = st.second
        guarantee = plan_.guarantee
    else:
        arrays = {"sums": acc.sums, "counts": acc.counts}
        if request.statistics == "moments":
            arrays["second"] = acc.second
        guarantee = Guarantee.non_private("source", "epsilon=None: the non-private counterpart")
    params = {"classes": list(request.classes), "request_sha256": request.digest(), "statistics": request.statistics,
              "k": request.k, "sigma": float(plan_.calibration["sigma"]), "relation": config.relation}
    if config.relation == "replace_one":  # n is public under replace-one; under add/remove it is not released
        params["n_source"] = int(acc.n_rows)
    return Release(method=METHOD, kind=KIND, owner="source", arrays=arrays, guarantee=guarantee, params=params)


def _candidates_release(plan_: Plan, request: Request, acc: CandidateCounts, noise) -> Release:
    """The selection design's release: the (K, M) table of counts by (label, nearest candidate), Laplace-noised once."""
    config = plan_.config
    if config.private:
        counts = acc.release(epsilon=config.epsilon, relation=config.relation, noise=noise).value
        guarantee = plan_.guarantee
    else:
        counts, guarantee = acc.counts, Guarantee.non_private("source", "epsilon=None: the non-private counterpart")
    params = {"classes": list(request.classes), "request_sha256": request.digest(), "statistics": request.statistics,
              "k": request.k, "sigma": 0.0, "scale": float(plan_.calibration.get("scale", 0.0)), "relation": config.relation}
    if config.relation == "replace_one":
        params["n_source"] = int(acc.n_rows)
    return Release(method=METHOD, kind=KIND, owner="source", arrays={"candidate_counts": counts}, guarantee=guarantee,
                   params=params)
