"""Sound one-release designs for a protected labelled source, chosen by a public rule (issue 23).

The sufficient-statistics design (SSP):

(a) :func:`basis` — only when the rule's space is ``"pca"``: the *unprotected* receiver sends the mean
    and top-k principal directions of its own mapped rows (a disclosure with ε = ∞, as in
    :mod:`dpadapt.classstats`; for the source it is a fixed public per-row map).
(b) :func:`release` — the protected source maps its rows with the public per-row map and working space
    (:mod:`dpadapt.sound.spaces`) and releases per-class sums, counts and the pooled second moment as
    ONE Gaussian (:func:`dpadapt.privacy.mechanisms.class_moment_statistics`): (ε, δ)-DP per record,
    labels included, Δ = √6 replace-one / √3 add/remove (proof beside ``CLASS_MOMENT_SENSITIVITY``);
    σ from the analytic Gaussian (Balle & Wang 2018, Thm. 8).
(c) :func:`adapt` — the receiver forms a shrunk LDA, the ridge classifier or the nearest class
    direction (as the rule says) from the noisy moments (:mod:`dpadapt.sound.ssp`, ridge from the
    public σ) and, where the rule says so, the guarded refinement on its own rows (:mod:`dpadapt.sound.guard`). Post-processing, no further privacy cost.

Which design, space, k, ridge and refinement: :func:`dpadapt.sound.rule.choose`, from public facts only,
fixed on the development pairs (``benchmarks/selection/sound/README.md``). The rule may also name another
design of the portfolio (issue 23, Build item 1), each its own route: ``classstats``
(:mod:`dpadapt.sound.classstats_route`, the class-statistics design), ``ncm`` / ``dplr``
(:mod:`dpadapt.sound.source_only_route`, a DP classifier on the source's full mapped features; the
selection may name them, round 3 names them in no cell). :class:`SoundDA` dispatches ONCE to the
chosen route and runs its steps in one process; its Guarantee is that route's. The party steps below (``plan`` → ``release`` → ``adapt``, the CLI's ``sound``
method) are the ``ssp`` route's.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.special import logsumexp

from dpadapt.api import ConfigEstimator, Family, Plan, register
from dpadapt.classstats import _digest, public_size
from dpadapt.classstats.adapt import fit_basis
from dpadapt.configs.sound import Config
from dpadapt.privacy.families.classstats import basis_disclosure
from dpadapt.privacy.families.sound import class_moments_plan
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.release import Release, ReleaseError
from dpadapt.sound import classstats_route, source_only_route
from dpadapt.sound.guard import guarded
from dpadapt.sound.rule import Choice, choose
from dpadapt.sound.spaces import mapped_rows, to_space
from dpadapt.sound.ssp import lda_from_moments, ridge, ridge_from_moments
from dpadapt.stream.readers import ChunkedSource, labelled_source
from dpadapt.stream.sums import ClassMomentSums, accumulate
from dpadapt.validation import (
    check_basis,
    check_declared_sigma,
    check_features,
    check_plausible_statistics,
    check_released_size,
    check_untrusted_array,
)

BASIS_KIND = "target_basis"
MOMENTS_KIND = "class_moments"
RANDOM_SEED = 20261125  # the public seed of the "random" space (released with the statistics)


def choice_for(config: Config, n_source: int, n_features: int) -> Choice:
    """The rule's choice for this configuration and the public sizes."""
    n_classes = len(config.classes) if config.classes is not None else 2
    return choose(feature_type=config.feature_type, n=n_source, n_classes=n_classes, n_features=n_features,
                  epsilon=config.epsilon)


def plan(config: Config, facts: dict) -> Plan:
    """σ and the Guarantee of the source's release from public facts (``n_source``, ``n_features``)."""
    n = int(facts["n_source"])
    choice = choice_for(config, n, int(facts["n_features"]))
    if choice.design != "ssp":
        raise ValueError(f"the rule's design for these public facts is {choice.design!r}, not the SSP release of "
                         f"the 'sound' method; run it with SoundDA (or the '{'classstats' if choice.design == 'classstats' else 'source-only'}' estimators)")
    if choice.space == "pca" and "k" in facts:  # a basis the receiver already sent fixes k
        choice = dataclasses.replace(choice, k=int(facts["k"]))
    if not config.private:
        return Plan(config.family, MOMENTS_KIND, config, dict(facts), None, {"sigma": 0.0, "choice": choice})
    delta = config.resolved_delta(n)
    sigma, guarantee = class_moments_plan(
        config.epsilon, delta, classes=config.required_classes(), relation=config.relation,
        extra_theorem=f"per-row map: {'log1p, ℓ2-normalise' if config.use_log1p() else ('/√d of declared-range columns' if choice.norm == 'box' else 'ℓ2-normalise')}"
        + f"; space: {choice.space}" + (f" (k = {choice.k})" if choice.k else ""),
    )
    return Plan(config.family, MOMENTS_KIND, config, dict(facts), guarantee, {"sigma": sigma, "delta": delta, "choice": choice})


def basis(Xt, config: Config, choice: Choice) -> Release:
    """The unprotected receiver's basis (only for the ``"pca"`` space): mean and top-k directions of its rows."""
    M = mapped_rows(check_features(Xt, "Xt (target)", allow_sparse=True), log1p=config.use_log1p(), norm=choice.norm)
    mean, components = fit_basis(M, choice.k)
    return Release(
        method=config.family, kind=BASIS_KIND, owner="target", arrays={"mean": mean, "components": components},
        guarantee=basis_disclosure("target"),
        params={"k": int(components.shape[1]), "sha256": _digest(mean, components), "disclosure": basis_disclosure("target").reasons[0]},
    )


def _basis_arrays(rel: Release | None, family: str) -> dict:
    if rel is None:
        return {}
    if rel.method != family or rel.kind != BASIS_KIND:
        raise ReleaseError(f"expected a {family}/{BASIS_KIND} release, got {rel.method}/{rel.kind}")
    try:
        if _digest(rel["mean"], rel["components"]) != rel.params.get("sha256"):
            raise ReleaseError("the basis arrays do not match their digest")
        mean, components = check_basis(rel["mean"], rel["components"])  # untrusted input (issue 19, item 1)
    except (KeyError, ValueError) as exc:
        raise ReleaseError(f"basis release: {exc}") from None
    return {"mean": mean, "components": components}


def _space_kwargs(choice: Choice, basis_release: Release | None, family: str) -> dict:
    if choice.space == "pca":
        if basis_release is None:
            raise ReleaseError("the 'pca' space needs the receiver's basis release (dpadapt basis --method sound)")
        if int(basis_release.params["k"]) != choice.k:
            raise ReleaseError(f"the basis has k = {basis_release.params['k']}; the plan is for k = {choice.k}")
        return _basis_arrays(basis_release, family)
    if choice.space == "random":
        return {"seed": RANDOM_SEED, "k": choice.k}
    return {}


def release(plan_: Plan, Xs, ys=None, noise=None, *, basis_release: Release | None = None) -> Release:
    """The source's step: class sums, counts and pooled second moment of its rows in the space, ONE Gaussian.

    ``Xs`` is an array / sparse matrix with labels ``ys``, or a :class:`~dpadapt.stream.ChunkedSource`
    (labels in its chunks, e.g. a file read by :func:`dpadapt.stream.open_source`). Either way the
    rows are mapped and summed chunk by chunk (:class:`~dpadapt.stream.ClassMomentSums`, which
    clips every row) and the noise is drawn once, on the totals.
    """
    config: Config = plan_.config
    choice: Choice = plan_.calibration["choice"]
    n_plan = int(plan_.facts["n_source"])
    if not isinstance(Xs, ChunkedSource):
        Xs = check_features(Xs, "Xs (source)", allow_sparse=True)
    source = labelled_source(Xs, ys, classes=config.classes)  # public label set: one class is valid
    if source.n_rows != n_plan:
        raise ValueError(f"the plan is for {n_plan} source rows, got {source.n_rows}")
    if config.private:
        classes = config.required_classes()
    elif config.classes:
        classes = tuple(config.classes)
    else:  # the non-private counterpart: the label set may come from the data
        classes = tuple(np.unique(np.concatenate([np.unique(y) for _, y in source])).tolist())
    space = _space_kwargs(choice, basis_release, plan_.family)

    def row_map(X):
        return to_space(mapped_rows(X, log1p=config.use_log1p(), norm=choice.norm), choice.space, **space)

    acc = accumulate(ClassMomentSums(classes, row_map), source)
    if acc.n_rows != n_plan:
        raise ValueError(f"the plan is for {n_plan} source rows, got {acc.n_rows}")
    if config.private:
        st = acc.release(sigma=plan_.calibration["sigma"], relation=config.relation, noise=noise)
        sums, counts, second, guarantee = st.sums, st.counts, st.second, plan_.guarantee
    else:  # the same statistics, exact (sparse rows stay sparse until the k × k product)
        sums, counts, second = acc.sums, acc.counts, acc.second
        guarantee = Guarantee.non_private("source", "epsilon=None: the non-private counterpart")
    return Release(
        method=plan_.family, kind=MOMENTS_KIND, owner="source", arrays={"sums": sums, "counts": counts, "second": second},
        guarantee=guarantee,
        params={"classes": list(classes), "log1p": config.use_log1p(), "n_features": int(source.n_features),
                **public_size(config.relation, acc.n_rows), "sigma": float(plan_.calibration.get("sigma", 0.0)),
                "relation": config.relation,
                "basis_sha256": basis_release.params["sha256"] if basis_release is not None else None,
                "random_seed": RANDOM_SEED if choice.space == "random" else None, **choice.to_params()},
    )


@dataclasses.dataclass
class SoundModel:
    """A linear classifier on raw rows: public row map → working space → scores ``Z @ W.T + b``.

    ``choice``: the rule's :class:`~dpadapt.sound.rule.Choice` as a dict; ``mean``/``components``: the
    receiver's basis (``pca`` space only). A flat record, saved by :mod:`dpadapt.modelio`.
    """

    classes: np.ndarray
    log1p: bool
    choice: dict
    mean: np.ndarray | None
    components: np.ndarray | None
    W: np.ndarray
    b: np.ndarray
    refined: bool = False

    @property
    def classes_(self) -> np.ndarray:
        return self.classes

    def transform(self, X) -> np.ndarray:
        c = Choice.from_params(self.choice)
        M = mapped_rows(check_features(X, allow_sparse=True), log1p=self.log1p, norm=c.norm)
        kw = {"mean": self.mean, "components": self.components} if c.space == "pca" else (
            {"seed": RANDOM_SEED, "k": c.k} if c.space == "random" else {})
        return to_space(M, c.space, **kw)

    def predict_proba(self, X) -> np.ndarray:
        s = self.transform(X) @ self.W.T + self.b
        return np.exp(s - logsumexp(s, axis=1, keepdims=True))

    def predict(self, X) -> np.ndarray:
        return self.classes[np.argmax(self.transform(X) @ self.W.T + self.b, axis=1)]

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


def adapt(release_: Release, Xt, config: Config, *, basis_release: Release | None = None, family: str | None = None) -> SoundModel:
    """The receiver's step: the rule's classifier (LDA, ridge or nearest class direction) from the noisy moments, then its (guarded) refinement."""
    family = family or config.family
    if release_.method != family or release_.kind != MOMENTS_KIND:
        raise ReleaseError(f"expected a {family}/{MOMENTS_KIND} release, got {release_.method}/{release_.kind}")
    p = release_.params
    choice = Choice.from_params(p)
    kw = _space_kwargs(choice, basis_release, family)
    if choice.space == "pca" and p.get("basis_sha256") != basis_release.params["sha256"]:
        raise ReleaseError("the statistics were released in another basis than the one given")
    Xt = check_features(Xt, "Xt (target)", allow_sparse=True)
    if Xt.shape[1] != p["n_features"]:
        raise ValueError(f"target has {Xt.shape[1]} features; the release was made for {p['n_features']}")
    if config.classes is not None and list(config.classes) != list(p.get("classes", [])):
        raise ReleaseError(f"the release is for the label set {p.get('classes')}, the receiver expects {list(config.classes)}")
    K = len(p["classes"])
    k = int(kw["components"].shape[1]) if choice.space == "pca" else (choice.k if choice.space == "random" else int(p["n_features"]))
    try:  # the source's statistics are untrusted input: finite float64 of the planned shapes, before any target row is mapped
        sums = check_untrusted_array(release_["sums"], "the released 'sums'", (K, k))
        counts = check_untrusted_array(release_["counts"], "the released 'counts'", (K,))
        second = check_untrusted_array(release_["second"], "the released 'second'", (k, k))
        n_source = check_released_size(p)  # None under add/remove: n is not released (issue 27, item 3)
        sigma = check_declared_sigma(p["sigma"], release_.guarantee)  # issue 27, item 7: what the mechanism can produce
        sums, counts, second = check_plausible_statistics(sums, counts, sigma=sigma, n=n_source, second=second)
    except (KeyError, ValueError) as exc:
        raise ReleaseError(f"class-moment release: {exc}") from None
    if n_source is None:  # add/remove: the size the receiver uses is the noisy total count
        n_source = max(float(np.sum(counts)), 1.0)
    lam = ridge(sigma, n_source, k, ridge_scale=choice.ridge_scale, ridge_floor=choice.ridge_floor)
    if choice.classifier == "ncm":  # nearest class direction (cosine) of the released sums
        W, b = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), np.finfo(float).tiny), np.zeros(sums.shape[0])
    elif choice.classifier == "ridge":  # least squares on the class indicators (selection round 3)
        W, b = ridge_from_moments(sums, second, lam)
    else:
        W, b = lda_from_moments(sums, counts, second, lam)
    model = SoundModel(np.asarray(p["classes"]), bool(p["log1p"]), choice.to_params(), kw.get("mean"), kw.get("components"), W, b)
    if choice.refinement == "guarded":
        g = guarded(model.transform(Xt), W, b, min_agreement=choice.min_agreement)
        model.W, model.b, model.refined = g.W, g.b, g.kept
    return model


def run_parties(config: Config, Xs, ys, Xt, *, bases: dict | None = None) -> tuple[Release | None, Release, SoundModel]:
    """All steps in one process (basis if the space needs it → release → adapt), noise from a fresh NoiseSource.

    ``bases``: optional cache {k: basis Release} of the receiver's bases of these same ``Xt`` (a
    benchmark reuses them across seeds and ε; the basis depends on nothing else).
    """
    _, noise = random_streams(config.random_state, reproducible_noise=config.reproducible_noise)
    facts = {"n_source": Xs.shape[0], "n_features": Xs.shape[1]}
    choice = choice_for(config, *facts.values())
    basis_rel = None
    if choice.space == "pca":
        basis_rel = (bases or {}).get(choice.k) or basis(Xt, config, choice)
        if bases is not None:
            bases[choice.k] = basis_rel
    if basis_rel is not None:
        facts["k"] = basis_rel.params["k"]
    the_plan = plan(config, facts)
    rel = release(the_plan, Xs, ys, noise, basis_release=basis_rel)
    return basis_rel, rel, adapt(rel, Xt, config, basis_release=basis_rel)


def contract_example(random_state: int) -> tuple[Config, dict]:
    """The family contract's example: 60 labelled source rows, 40 target rows (``contract_blobs``)."""
    from dpadapt.datasets.synthetic import contract_blobs

    return Config(epsilon=1.0, classes=(0, 1, 2), random_state=random_state), contract_blobs(random_state)


def contract_run(config: Config, data: dict) -> tuple[list[Release], SoundModel]:
    basis_rel, rel, model = run_parties(config, data["Xs"], data["ys"], data["Xt"])
    return [r for r in (basis_rel, rel) if r is not None], model


def _ssp_route(config: Config, Xs, ys, Xt, choice: Choice):
    return run_parties(config, Xs, ys, Xt)


#: design → route(config, Xs, ys, Xt, choice) → (basis release or None, release or None, fitted model)
ROUTES = {"ssp": _ssp_route, "classstats": classstats_route.run, "ncm": source_only_route.run, "dplr": source_only_route.run}


class SoundDA(ConfigEstimator):
    """Sound DA for a protected labelled source: the design the public rule names for the public facts.

    Record-level (ε, δ)-DP for the source (labels included); the target is not protected (its basis,
    when the chosen design uses one, is disclosed). The design (``ssp``: ONE release of class moments in
    a public space → LDA, ridge or nearest class direction, guarded refinement; ``classstats``; ``ncm``;
    ``dplr``), space, k, ridge and refinement come from the public selection rule (:func:`dpadapt.sound.rule.choose`); ``fit_domains``
    runs that ONE route (``design_``) and the Guarantee is that route's. ``epsilon=None`` runs the
    same pipeline without noise.
    """

    config_class = Config

    def fit_domains(self, Xs, ys, Xt, yt=None):
        Xs, ys, Xt, _ = self._check_domains(Xs, ys, Xt, None, allow_sparse=True)
        self.config_ = self.make_config()
        choice = choice_for(self.config_, Xs.shape[0], Xs.shape[1])
        self.design_ = choice.design
        self.basis_release_, self.release_, self.model_ = ROUTES[choice.design](self.config_, Xs, ys, Xt, choice)
        self.classes_ = self.model_.classes_
        route_guarantees = getattr(self.model_, "guarantees_", None)  # a fitted source-only estimator carries its own
        self._set_guarantees(*(route_guarantees.values() if route_guarantees is not None
                               else [self.release_.guarantee] if self.config_.private else []))
        return self

    def predict(self, X):
        return self.model_.predict(X)

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


register(Family(
    name="sound", config=Config, protected=("source",), plan=plan, release=release, adapt=adapt, estimator=SoundDA,
    summary="source DP class moments (one Gaussian) in a public space → LDA; guarded target refinement; design by a public rule",
    example=contract_example, run_parties=contract_run, public_arrays=("mean", "components"), noisy_arrays=("sums", "counts", "second"),
))

__all__ = ["BASIS_KIND", "MOMENTS_KIND", "ROUTES", "Choice", "Config", "SoundDA", "SoundModel", "adapt", "basis", "plan", "release", "run_parties"]
