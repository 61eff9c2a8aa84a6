"""Class statistics released once: the sound design for a labelled protected source.

Three party steps:

(a) :func:`basis` — the *unprotected* receiver sends the mean and top-k principal
    directions of its own mapped rows. It is a disclosure, not a DP release: its Guarantee has ε = ∞
    and says why that costs the target nothing in this setting (the target is not protected there).
    Without a basis (``k=0``) the source releases in the mapped feature space itself.
(b) :func:`release` — the protected source maps its rows with the public per-row map (optional
    ``log1p``, ℓ2 normalisation), projects them onto the public basis (re-normalised, a per-row map
    fixed before the source's data is read) and releases per-class sums and counts as ONE Gaussian
    (:func:`dpadapt.privacy.mechanisms.class_statistics`): (ε, δ)-DP per record under replace-one
    (Δ = 2) or add/remove (Δ = √2), labels included; σ from the analytic Gaussian (Balle & Wang 2018).
(c) :func:`adapt` — the receiver turns the noisy statistics into class prototypes and refines them on
    its own rows (:mod:`dpadapt.classstats.adapt`); post-processing, no further privacy cost.

:class:`ClassStatsDA` runs exactly these steps in one process.
"""

from __future__ import annotations

import hashlib
import warnings
from typing import TYPE_CHECKING

import numpy as np

from dpadapt import lazy
from dpadapt.api import Family, Plan, register
from dpadapt.classstats.adapt import ClassStatsModel, fit_basis_source, project, prototypes_from_release, refine, row_map
from dpadapt.configs.classstats import Config
from dpadapt.privacy.families.classstats import basis_disclosure, class_statistics_plan
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.stream.readers import ChunkedSource, from_arrays, labelled_source
from dpadapt.stream.sums import ClassSums, RowMap, accumulate, label_indices
from dpadapt.release import Release, ReleaseError
from dpadapt.validation import check_basis, check_class_statistics, check_features

BASIS_KIND = "target_basis"
STATS_KIND = "class_statistics"


def _digest(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()


def plan(config: Config, facts: dict) -> Plan:
    """σ and the Guarantee of the source's release from public facts (``n_source``, ``n_features``, ``k``)."""
    n = int(facts["n_source"])
    if not config.private:
        return Plan(config.family, STATS_KIND, config, dict(facts), None, {"sigma": 0.0})
    classes = config.required_classes()
    delta = config.resolved_delta(n)
    sigma, guarantee = class_statistics_plan(
        config.epsilon, delta, classes=classes, relation=config.relation,
        extra_theorem=f"per-row map: {'log1p, ' if config.use_log1p() else ''}ℓ2-normalise"
        + (f", project on the receiver's public {facts.get('k', config.k)}-d basis, re-normalise" if config.k else ""),
    )
    from dpadapt.classstats.tiny import warn_if_pure_noise

    warn_if_pure_noise(n, len(classes), sigma, config.epsilon, delta)
    return Plan(config.family, STATS_KIND, config, dict(facts), guarantee, {"sigma": sigma, "delta": delta})


def basis(Xt, config: Config) -> Release:
    """The unprotected receiver's basis: mean and top-k principal directions of its mapped rows.

    ``Xt``: an array / sparse matrix, or a :class:`~dpadapt.stream.ChunkedSource` (read in a few passes,
    chunk by chunk: :func:`~dpadapt.classstats.adapt.fit_basis_source`).
    """
    if config.k < 1:
        raise ValueError("k=0 means no basis; nothing to send")
    source = Xt if isinstance(Xt, ChunkedSource) else from_arrays(
        check_features(Xt, "Xt (target)", allow_sparse=True), name="Xt (target)")
    mean, components = fit_basis_source(source, config.k, lambda X: row_map(X, config.use_log1p()))
    return Release(
        method=config.family, kind=BASIS_KIND, owner="target",
        arrays={"mean": mean, "components": components}, guarantee=basis_disclosure("target"),
        params={"k": int(components.shape[1]), "log1p": config.use_log1p(), "n_features": int(source.n_features),
                "sha256": _digest(mean, components), "disclosure": basis_disclosure("target").reasons[0]},
    )


def _check_basis(
    rel: Release | None, family: str, n_features: int | None = None
) -> tuple[np.ndarray | None, np.ndarray | None, str | None]:
    """The other party's basis, checked as untrusted input (:func:`dpadapt.validation.check_basis`:
    finite, orthonormal columns, ‖mean‖ ≤ 1, ``n_features`` rows) before it touches private rows."""
    if rel is None:
        return None, None, None
    if rel.method != family or rel.kind != BASIS_KIND:
        raise ReleaseError(f"expected a {family}/{BASIS_KIND} release, got {rel.method}/{rel.kind}")
    try:
        mean, comp = rel["mean"], rel["components"]
        if _digest(mean, comp) != rel.params.get("sha256"):
            raise ReleaseError("the basis arrays do not match their digest")
        mean, comp = check_basis(mean, comp, n_features)
    except (KeyError, ValueError) as exc:
        raise ReleaseError(f"basis release: {exc}") from None
    return mean, comp, rel.params["sha256"]


def _class_sums(Xs, ys, classes, row_map_: RowMap, *, client, label_column: str) -> ClassSums:
    """Exact class sums of the source's rows: chunk by chunk here, or per partition on a Dask cluster."""
    if hasattr(Xs, "__dask_graph__"):  # a dask collection: sums on the workers
        from dpadapt.stream import dask_engine

        if hasattr(Xs, "columns"):
            return dask_engine.class_sums_frame(Xs, label_column, classes, row_map_, client=client)
        return dask_engine.class_sums_array(Xs, ys, classes, row_map_, client=client)
    return accumulate(ClassSums(classes, row_map_), Xs)


def release(plan_: Plan, Xs, ys=None, noise=None, *, basis_release: Release | None = None, client=None,
            label_column: str = "y") -> Release:
    """The source's step: class statistics of its mapped rows (in the basis) as ONE Gaussian.

    ``Xs`` is an array / sparse matrix with labels ``ys``; a :class:`~dpadapt.stream.ChunkedSource`
    (labels in its chunks); or a Dask collection — a ``dask.array`` with labels ``ys``, or a
    ``dask.dataframe`` with a ``label_column`` — summed per partition on the Dask cluster of
    ``client`` (default: the current one). Either way every row goes through the public per-row map
    and the clipping of :func:`dpadapt.privacy.mechanisms.class_sums`, the exact sums are added over
    chunks / partitions (:class:`~dpadapt.stream.ClassSums`), and the noise is drawn once, here.
    """
    config: Config = plan_.config
    n_plan = int(plan_.facts["n_source"])
    if not hasattr(Xs, "__dask_graph__"):
        Xs, ys = labelled_source(Xs, ys, classes=config.classes), None
    n_rows = getattr(Xs, "n_rows", None) or (Xs.shape[0] if not hasattr(Xs, "columns") else None)
    if n_rows is not None and int(n_rows) != n_plan:
        raise ValueError(f"the plan is for {n_plan} source rows, got {n_rows}")
    if isinstance(Xs, ChunkedSource):
        n_features = Xs.n_features
    else:  # a dask collection: an array's columns, or a frame's columns but the label
        n_features = int(Xs.shape[1]) if not hasattr(Xs, "columns") else len(Xs.columns) - 1
    mean, comp, digest = _check_basis(basis_release, plan_.family, n_features)
    if config.k and comp is None:
        raise ReleaseError(f"k={config.k} needs the receiver's basis release (or set k=0)")
    if config.private:
        classes = config.required_classes()
    elif config.classes:
        classes = tuple(config.classes)
    elif isinstance(Xs, ChunkedSource):  # non-private counterpart: the label set may come from the data
        classes = tuple(np.unique(np.concatenate([np.unique(y) for _, y in Xs])).tolist())
    else:
        raise ValueError("the non-private counterpart on a Dask collection needs the public label set (classes=...)")
    acc = _class_sums(Xs, ys, classes, RowMap(config.use_log1p(), mean, comp), client=client, label_column=label_column)
    if acc.n_rows != n_plan:
        raise ValueError(f"the plan is for {n_plan} source rows, got {acc.n_rows}")
    if config.private:
        st = acc.release(sigma=plan_.calibration["sigma"], relation=config.relation, noise=noise)
        sums, counts, guarantee = st.sums, st.counts, plan_.guarantee
    else:
        sums, counts = acc.sums, acc.counts
        guarantee = Guarantee.non_private("source", "epsilon=None: the non-private counterpart")
    return Release(
        method=plan_.family, kind=STATS_KIND, owner="source", arrays={"sums": sums, "counts": counts},
        guarantee=guarantee,
        params={"classes": list(classes), "log1p": config.use_log1p(), "basis_sha256": digest,
                "n_features": n_features, "sigma": float(plan_.calibration.get("sigma", 0.0)),
                "relation": config.relation, **public_size(config.relation, n_plan)},
    )


def public_size(relation: str, n: int) -> dict:
    """``{"n_source": n}`` where the size is public (replace-one: the receiver checks the counts against it,
    :func:`dpadapt.validation.check_plausible_statistics`); nothing under add/remove, where n is protected."""
    return {"n_source": int(n)} if relation == "replace_one" else {}


class NoiseDominatedWarning(UserWarning):
    """The released class statistics are mostly noise: the adapted model will be near chance."""


def noise_share(sums: np.ndarray, sigma: float) -> np.ndarray:
    """Per class, the estimated share of noise in the energy of its noisy sum (post-processing).

    E‖S_c‖² = ‖T_c‖² + kσ² for a noisy sum S_c = T_c + N(0, σ²I_k), so kσ² / ‖S_c‖² estimates
    the noise share (capped at 1); above 1/2 the class direction is more noise than signal.
    """
    energy = np.sum(np.asarray(sums, dtype=np.float64) ** 2, axis=1)
    return np.minimum(1.0, sums.shape[1] * sigma**2 / np.maximum(energy, np.finfo(float).tiny))


def _warn_if_noise_dominated(sums: np.ndarray, sigma: float) -> None:
    share = noise_share(sums, sigma)
    if sigma > 0 and float(np.mean(share)) > 0.75:  # on DeCAF6 D→W: 0.50 at ε = 2 (88 %), 0.83 at ε = 0.5 (26 %)
        warnings.warn(
            f"the release noise dominates the class statistics (noise share {np.mean(share):.2f} of their energy, "
            f"σ = {sigma:.3g}): expect accuracy near chance; a larger ε, more source rows per class or a smaller "
            "basis k would help",
            NoiseDominatedWarning, stacklevel=3,
        )


def adapt(release_: Release, Xt, config: Config, *, basis_release: Release | None = None) -> ClassStatsModel:
    """The receiver's step: prototypes from the noisy statistics, refined on its own rows."""
    family = config.family
    if release_.method != family or release_.kind != STATS_KIND:
        raise ReleaseError(f"expected a {family}/{STATS_KIND} release, got {release_.method}/{release_.kind}")
    p = release_.params
    if config.classes is not None and list(config.classes) != list(p.get("classes", [])):
        raise ReleaseError(f"the release is for the label set {p.get('classes')}, the receiver expects {list(config.classes)}")
    mean, comp, digest = _check_basis(basis_release, family)
    if p.get("basis_sha256") != digest:
        raise ReleaseError("the statistics were released in another basis than the one given")
    Xt = check_features(Xt, "Xt (target)", allow_sparse=True)
    if Xt.shape[1] != p["n_features"]:
        raise ValueError(f"target has {Xt.shape[1]} features; the release was made for {p['n_features']}")
    K, k = len(p["classes"]), (comp.shape[1] if comp is not None else int(p["n_features"]))
    try:  # the source's statistics are untrusted input: finite float64 of the planned shapes, and what the
        # declared mechanism can produce, before any target row is mapped
        sums, counts, sigma = check_class_statistics(release_, (K, k))
    except (KeyError, ValueError) as exc:
        raise ReleaseError(f"class-statistics release: {exc}") from None
    M = row_map(Xt, bool(p["log1p"]))
    Z = project(M, mean, comp)
    _warn_if_noise_dominated(sums, sigma)
    centers, proportions = prototypes_from_release(sums, counts)
    r = refine(Z, centers, proportions, config.refinement, F=M, random_state=config.random_state)
    W, b = r.scorer if r.scorer is not None else (None, None)
    return ClassStatsModel(np.asarray(p["classes"]), bool(p["log1p"]), mean, comp, r.centers, r.head, W, b)


def run_parties(config: Config, Xs, ys, Xt) -> tuple[Release | None, Release, ClassStatsModel]:
    """All three steps in one process (basis → release → adapt), noise from a fresh NoiseSource."""
    _, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
    basis_rel = basis(Xt, config) if config.k else None
    k = basis_rel.params["k"] if basis_rel is not None else 0
    the_plan = plan(config, {"n_source": Xs.shape[0], "n_features": Xs.shape[1], "k": k})
    rel = release(the_plan, Xs, ys, noise, basis_release=basis_rel)
    model = adapt(rel, Xt, config, basis_release=basis_rel)
    return basis_rel, rel, model


def contract_example(random_state: int) -> tuple[Config, dict]:
    """The family contract's example (``api.Family.example``): 60 labelled source rows, 40 target rows, k = 3."""
    from dpadapt.datasets.synthetic import contract_blobs

    return Config(epsilon=1.0, classes=(0, 1, 2), random_state=random_state, k=3), contract_blobs(random_state)


def contract_run(config: Config, data: dict) -> tuple[list[Release], ClassStatsModel]:
    """The family contract's ``run_parties``: the releases that cross (basis, statistics) and the model."""
    basis_rel, rel, model = run_parties(config, data["Xs"], data["ys"], data["Xt"])
    return [r for r in (basis_rel, rel) if r is not None], model


register(Family(
    name="classstats", config=Config, protected=("source",), plan=plan, release=release, adapt=adapt,
    estimator="dpadapt.classstats.ClassStatsDA", summary="source DP class statistics (one Gaussian) in the target's public basis; target refinement",
    example=contract_example, run_parties=contract_run, public_arrays=("mean", "components"), noisy_arrays=("sums", "counts"),
))

if TYPE_CHECKING:
    from dpadapt.classstats.baselines import DPLeastSquares, DPLogisticRegression, DPNearestClassMean
    from dpadapt.classstats.estimator import ClassStatsDA

#: the estimators load scikit-learn: imported on first use (the party steps need NumPy only)
__getattr__, __dir__ = lazy.attach(__name__, {
    "ClassStatsDA": "dpadapt.classstats.estimator", "DPLeastSquares": "dpadapt.classstats.baselines",
    "DPLogisticRegression": "dpadapt.classstats.baselines", "DPNearestClassMean": "dpadapt.classstats.baselines"})

__all__ = ["BASIS_KIND", "STATS_KIND", "ClassStatsDA", "Config", "DPLeastSquares", "DPLogisticRegression", "DPNearestClassMean",
           "adapt", "basis", "label_indices", "plan", "release", "run_parties"]
