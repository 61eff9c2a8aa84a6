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

import warnings

import numpy as np

from dpadapt.api import Plan
from dpadapt.classstats.tiny import TinySourceWarning, warn_if_pure_noise  # noqa: F401  (TinySourceWarning: part of this step's API)
from dpadapt.privacy.families.classstats import class_statistics_plan
from dpadapt.privacy.families.sound import class_moments_plan
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.release import Release
from dpadapt.sound.request import METHOD, Request
from dpadapt.stream.readers import labelled_source
from dpadapt.stream.sums import ClassMomentSums, ClassSums, accumulate

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
    make = class_moments_plan if request.statistics == "moments" else class_statistics_plan
    sigma, guarantee = make(config.epsilon, delta, classes=request.classes, relation=config.relation,
                            extra_theorem=f"the receiver's request {request.digest()[:12]}: "
                            f"{'signed log1p, ' if request.log1p else ''}ℓ2-normalise"
                            + (f", its {request.k}-d basis, re-normalise" if request.space == "basis" else ""))
    warn_if_pure_noise(n_source, len(request.classes), sigma, config.epsilon, delta)
    return Plan(METHOD, KIND, config, public, guarantee, {"sigma": sigma, "delta": delta})


def _accumulator(request: Request):
    """The exact sums the request names, of rows labelled with values of its public label set."""
    return (ClassMomentSums if request.statistics == "moments" else ClassSums)(tuple(request.classes), request.row_map())


def release(plan_: Plan, request: Request, Xs, ys=None, noise=None) -> Release:
    """The source's release. ``Xs``: rows with labels ``ys`` (values of ``request.classes``), or a
    :class:`~dpadapt.stream.ChunkedSource` whose chunks carry them; read once, chunk by chunk."""
    if request.digest() != plan_.facts["request_sha256"]:
        raise ValueError("the plan was made for another release request")
    source = labelled_source(Xs, ys, classes=tuple(request.classes))
    if source.n_features != request.n_features:
        raise ValueError(f"the request is for {request.n_features} features; the source has {source.n_features}")
    acc = accumulate(_accumulator(request), source)
    if acc.n_rows != int(plan_.facts["n_source"]):
        raise ValueError(f"the plan is for {plan_.facts['n_source']} source rows, got {acc.n_rows}")
    config = plan_.config
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
