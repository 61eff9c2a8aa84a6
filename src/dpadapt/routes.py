"""Every way a public estimator can run privately, enumerable, so that every attack runs against every route.

A *route* is one branch of one public estimator that a public configuration selects — a
:class:`~dpadapt.sound.SoundDA` design, a discrepancy algorithm, a PRIMA
protocol, ... — with a small example that takes it (well under a second). ``tests/test_attacks.py``
runs every attack on every registered route (a one-class source, NaN/inf/overflowing rows
from the other party, the whole release file D vs D′ under every neighbour relation the route states,
reproducible-noise marking, the sensitivity at the worst case), with no test code per route; a public estimator (anything exported with ``fit``) that is neither
routed here nor declared non-private fails ``test_every_public_estimator_is_routed``.

Registering a route: ``register_route(Route(...))`` from the estimator's module, or a builder in
:data:`ROUTE_BUILDERS`. The :class:`~dpadapt.sound.SoundDA` routes are derived from its designs
(:data:`dpadapt.sound.design.DESIGNS`): one route per design, so a new design is attacked without a line of new
test code (and fails the suite until it has an example here).

The threat model every route is attacked under is ``docs/threat-model.md``.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

#: Where the threat model (who is protected, which relation, what the receiver sees) is written down.
THREAT_MODEL = "docs/threat-model.md"

#: The declared domain of a protected row, for the neighbours the attacks build: any finite real vector,
#: non-negative counts, or features a declared schema scaled to [-1, 1].
DOMAINS = ("real", "counts", "box")


@dataclasses.dataclass(frozen=True)
class Route:
    """One private route of a public estimator and a small example that takes it.

    name : str
        ``"<estimator family>/<route>"``, unique.
    estimator : type
        The public estimator class (a :class:`~dpadapt.api.ConfigEstimator`).
    params : mapping
        Constructor parameters of a private sound run that takes the route (``epsilon`` set, the public
        ``classes`` set where labels are private); the attacks add ``random_state`` and ``reproducible_noise``.
    data : callable ``(random_state) -> dict``
        ``{"Xs", "ys", "Xt"}`` (and ``"yt"``): 60 source and 40 target rows are plenty.
    protected : tuple of str
        The parties whose records the route's Guarantee protects.
    labelled : bool
        Whether the source labels are part of a protected record (a labelled protected source).
    domain : str
        The declared domain of a protected row (:data:`DOMAINS`).
    dtype : numpy dtype
        The dtype the protected rows are computed in (float32 for torch routes): "overflowing" is judged in it.
    taken : callable ``(fitted estimator) -> bool``, optional
        Whether a fit took this route (e.g. ``est.design_["design"] == "prototypes"``); checked by the suite.
    worst_pair : callable ``(data) -> (data_D, data_D′)``, optional
        Neighbouring datasets on which the route's first noise draw moves by exactly its stated Δ.
    unobserved : str
        Why the route's first noise draw states no sensitivity to check (empty when it does): the draw
        (:func:`dpadapt.privacy.mechanisms.observe_draws`) of a DP-SGD step or of noisy projections.
    relations : tuple of str
        Neighbour relations the route states beyond those the suite reads off it (replace-one always; add/remove where
        the estimator has a ``relation`` parameter or its Guarantee is add/remove): each is a key of the suite's
        ``RELATIONS``, under which D and D′ must give release files identical in every public field.
    known_gaps : mapping
        attack name → why the route does not withstand it yet (the suite expects that attack to fail, strictly:
        a fix makes the test pass and the gap must then be removed here). Open breaks, never silent ones.
    """

    name: str
    estimator: type
    params: Mapping[str, Any]
    data: Callable[[int], dict]
    protected: tuple[str, ...]
    labelled: bool = True
    domain: str = "real"
    dtype: Any = np.float64
    taken: Callable[[Any], bool] | None = None
    worst_pair: Callable[[dict], tuple[dict, dict]] | None = None
    unobserved: str = ""
    relations: tuple[str, ...] = ()
    known_gaps: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.domain not in DOMAINS:
            raise ValueError(f"domain must be one of {DOMAINS}, got {self.domain!r}")
        if not self.protected:
            raise ValueError("a route protects at least one party")

    def make(self, **overrides: Any):
        """A fresh estimator of this route (``overrides`` on top of :attr:`params`)."""
        return self.estimator(**{**self.params, **overrides})


_ROUTES: dict[str, Route] = {}
_NON_PRIVATE: dict[type, str] = {}


def register_route(route: Route) -> Route:
    """Add a route to the registry the attack suite reads."""
    _ROUTES[route.name] = route
    return route


def declare_non_private(estimator: type, reason: str) -> type:
    """Record that a public estimator has no private route (it releases nothing under a guarantee), and why."""
    _NON_PRIVATE[estimator] = reason
    return estimator


def routes() -> dict[str, Route]:
    """Every registered route (builds the built-in ones on first use)."""
    if not _BUILT:
        for build in ROUTE_BUILDERS:
            for route in build():
                _ROUTES.setdefault(route.name, route)
        _BUILT.append(True)
    return dict(sorted(_ROUTES.items()))


def non_private() -> dict[type, str]:
    """The public estimators declared non-private, with the reason."""
    routes()
    return dict(_NON_PRIVATE)


# --- example data -----------------------------------------------------------------------------------

CLASSES = (0, 1, 2)


def blobs(random_state: int) -> dict:
    """60 labelled source rows and 40 target rows of three shifted blobs in 6 dimensions."""
    from dpadapt.datasets.synthetic import contract_blobs

    return contract_blobs(random_state)


def count_blobs(random_state: int) -> dict:
    """The blobs as non-negative counts (a bag-of-words–like table)."""
    d = blobs(random_state)
    return {**d, "Xs": np.floor(3.0 * np.abs(d["Xs"])), "Xt": np.floor(3.0 * np.abs(d["Xt"]))}


def box_blobs(random_state: int) -> dict:
    """The blobs scaled into [-1, 1], as a declared table schema maps them."""
    d = blobs(random_state)
    return {**d, "Xs": np.clip(d["Xs"] / 4.0, -1.0, 1.0), "Xt": np.clip(d["Xt"] / 4.0, -1.0, 1.0)}


def regression(random_state: int) -> dict:
    """The discrepancy family's example: 60 public labelled source rows, 40 private target rows (a regression)."""
    from dpadapt.datasets.synthetic import make_bms_regression

    return make_bms_regression(m=60, n=40, d=5, n_test=1, random_state=random_state)


def relabel_first(data: dict) -> tuple[dict, dict]:
    """D and D′ that differ in the label of record 0 only: the worst case of the class statistics
    (Δ = 2 replace-one: the unit-norm mapped row leaves one class sum for another, two counts move by 1)."""
    ys = np.asarray(data["ys"]).copy()
    other = ys.copy()
    other[0] = (ys[0] + 1) % len(CLASSES)
    return data, {**data, "ys": other}


def axis_rows(data: dict) -> tuple[dict, dict]:
    """D with record 0 = (e₁, class 0) and D′ with record 0 = (e₂, class 1): orthogonal axis-aligned unit rows that
    change class, the worst case of the class moments in the feature space (Δ = √6, proof beside the constant)."""
    Xs, ys = np.asarray(data["Xs"], dtype=np.float64).copy(), np.asarray(data["ys"]).copy()
    X2, y2 = Xs.copy(), ys.copy()
    Xs[0], ys[0] = 0.0, 0
    X2[0], y2[0] = 0.0, 1
    Xs[0, 0], X2[0, 1] = 1.0, 1.0
    return {**data, "Xs": Xs, "ys": ys}, {**data, "Xs": X2, "ys": y2}


# --- the built-in routes --------------------------------------------------------------------------------


def _classstats_routes() -> list[Route]:
    from dpadapt.classstats import ClassStatsDA, DPLeastSquares, DPLogisticRegression, DPNearestClassMean

    common = {"epsilon": 1.0, "delta": 1e-5, "classes": CLASSES}
    return _with_dask_variants([
        Route("classstats/basis", ClassStatsDA, {**common, "k": 3}, blobs, ("source",), worst_pair=relabel_first),
        Route("classstats/features", ClassStatsDA, {**common, "k": 0}, blobs, ("source",), worst_pair=relabel_first),
        Route("classstats/counts", ClassStatsDA, {**common, "k": 3, "feature_type": "counts"}, count_blobs, ("source",),
              domain="counts", worst_pair=relabel_first),
        Route("classstats/ncm", DPNearestClassMean, common, blobs, ("source",), worst_pair=relabel_first),
        Route("classstats/dplr", DPLogisticRegression, {**common, "steps": 5}, blobs, ("source",)),
        Route("classstats/dplsq", DPLeastSquares, common, blobs, ("source",)),
    ])


def _dpot_routes() -> list[Route]:
    from dpadapt.transport import DPOTAdapter

    return _with_dask_variants([
        Route("dpot/classstats", DPOTAdapter, {"epsilon": 1.0, "delta": 1e-5, "classes": CLASSES}, blobs, ("source",),
              taken=lambda est: est.config_.resolved_design() == "classstats", worst_pair=relabel_first)])


def _with_dask_variants(routes_: list[Route]) -> list[Route]:
    """``routes_`` and, for each, its ``/dask`` variant: the same route with the sources as ``dask.array`` blocks
    (:func:`on_dask_sources`), so that every attack runs against the cluster path of every estimator that takes one."""
    return [*routes_, *(dataclasses.replace(r, name=f"{r.name}/dask", estimator=on_dask_sources(r.estimator))
                        for r in routes_)]


def clustered_blobs(random_state: int) -> dict:
    """Three tight, well-separated clusters (60 source rows, 40 slightly shifted target rows): a receiver whose rows
    form its classes' clusters (the sound default's ``prototypes`` design)."""
    from dpadapt.privacy.mechanisms import public_gaussian_matrix

    ys, yt = np.arange(60) % 3, np.arange(40) % 3
    centers = 5.0 * np.eye(3, 6)
    noise = public_gaussian_matrix((100, 6), 0.3, random_state)
    return {"Xs": centers[ys] + noise[:60], "ys": ys, "Xt": centers[yt] + 0.5 + noise[60:], "yt": yt}


def _sound_routes() -> list[Route]:
    """One route per design of the sound default (:data:`dpadapt.sound.design.DESIGNS`), declared (the examples' 20 rows
    a class would take the tiny-source prototypes under ``design="auto"``) on rows that suit it; and count rows (the
    log1p map, ``design="auto"``). A design without an example here fails the suite (``KeyError``) by construction."""
    from dpadapt.sound import SoundDA, design

    examples = {"prototypes": (clustered_blobs, relabel_first), "discriminant": (blobs, None),
                "selection": (clustered_blobs, relabel_first)}
    common = {"epsilon": 1.0, "delta": 1e-5, "classes": CLASSES}
    out = [Route(f"sound/{name}", SoundDA, {**common, "design": name}, examples[name][0], ("source",), worst_pair=examples[name][1],
                 taken=lambda est, name=name: est.design_["design"] == name) for name in design.DESIGNS]
    out.append(Route("sound/counts", SoundDA, common, count_blobs, ("source",), domain="counts",
                     taken=lambda est: est.design_["log1p"]))
    out = _with_dask_variants(out)
    # the second, calibrating release (dpadapt.sound.scores): per-class histograms of the fitted model's scores on the
    # source's rows (three classes: predicted class × confidence bin, the K > 2 layout), its budget split exactly with
    # the first release
    score_route = Route("sound/score-histograms", SoundDA, {**common, "design": "discriminant", "score_share": 0.25}, blobs,
                        ("source",), taken=lambda est: any(r.kind == "score_histograms" for r in est.releases_))
    return [*out, *_with_dask_variants([score_route])]


def on_dask_sources(estimator: type) -> type:
    """``estimator`` whose protected sources reach it as ``dask.array`` blocks (its cluster path: every block mapped,
    clipped and summed apart, the totals noised once), run on Dask's synchronous scheduler to keep the suite fast."""

    def fit_domains(self, Xs, ys, Xt=None, yt=None):
        import dask
        import dask.array as da

        X = np.asarray(Xs)
        with dask.config.set(scheduler="synchronous"):
            return estimator.fit_domains(self, da.from_array(X, chunks=(max(1, -(-X.shape[0] // 3)), X.shape[1])),
                                         da.from_array(np.asarray(ys)), Xt, *([] if yt is None else [yt]))

    return type(f"{estimator.__name__}OnDask", (estimator,), {"fit_domains": fit_domains, "__doc__": estimator.__doc__,
                                                               "__module__": __name__})


def _prima_routes() -> list[Route]:
    from dpadapt.alignment import PRIMA, PRISA

    common = {"epsilon": 1.0, "delta": 1e-5, "classes": CLASSES}
    heads = {**common, "source_release": "dpsgd_heads", "subspace_size": 3, "epochs": 1, "batch_size": 59, "sa_dim": 2}
    return [
        Route("prima/class_statistics", PRIMA, {**common, "basis_dim": 4}, blobs, ("source", "target"), worst_pair=relabel_first),
        Route("prima/dpsgd_heads", PRIMA, heads, blobs, ("source", "target"), dtype=np.float32),
        Route("prisa/dpsgd_heads", PRISA, heads, blobs, ("source", "target"), dtype=np.float32),
    ]


def _discrepancy_routes() -> list[Route]:
    from dpadapt.discrepancy import DiscrepancyClassifier, DiscrepancyRegressor

    out = []
    for algorithm in ("frank_wolfe", "mirror_descent", "single_stage"):
        params = {"epsilon": 1.0, "delta": 1e-5, "algorithm": algorithm, "K": 10}
        out.append(Route(f"discrepancy/regressor-{algorithm}", DiscrepancyRegressor, params, regression, ("target",),
                         labelled=False))
    out.append(Route("discrepancy/classifier-frank_wolfe", DiscrepancyClassifier,
                     {"epsilon": 1.0, "delta": 1e-5, "algorithm": "frank_wolfe", "K": 10, "classes": CLASSES}, blobs,
                     ("target",), labelled=False))
    return out


def _deep_routes() -> list[Route]:
    from dpadapt.deep import DPDA, GDPDA, DPSWDAdapter

    net = {"hidden": (8,), "epochs": 1, "batch_size": 40, "device": "cpu", "classes": CLASSES}
    swd = {"epsilon": 1.0, "delta": 1e-5, "epochs": 1, "min_steps": 3, "batch_size": 40, "k": 10, "device": "cpu",
           "adapt_steps": 3, "classes": CLASSES}
    dpsgd = ("a DP-SGD step: the noisy sum of per-example gradients clipped to C (torch), on a secret Poisson sample; "
             "its sensitivity is the clip, tested in tests/test_deep_mechanisms.py")
    return [
        Route("dpda/dpsgd", DPDA, {**net, "epsilon": 8.0, "delta": 1e-5, "noise_multiplier": 2.0}, blobs, ("target",),
              labelled=False, dtype=np.float32, unobserved=dpsgd),
        Route("gdpda/dpsgd", GDPDA, {**net, "epsilon": 8.0, "delta": 1e-5, "noise_multiplier": 2.0,
                                     "source_noise_multiplier": 2.0}, blobs, ("source", "target"), dtype=np.float32,
              unobserved=dpsgd),
        Route("dpswd/per-step", DPSWDAdapter, {**swd, "design": "per-step"}, blobs, ("target",), labelled=False,
              dtype=np.float32, unobserved="noisy projections of a secret subsample (Δ = 2R‖U‖op, tests/test_dpswd.py)"),
        Route("dpswd/marginals", DPSWDAdapter, {**swd, "design": "marginals"}, blobs, ("target",), labelled=False,
              dtype=np.float32),
    ]


def _declare_non_private() -> list[Route]:
    from dpadapt.alignment import CORAL, SubspaceAlignment
    from dpadapt.baselines import FlooredStandardScaler, SourceOnly
    from dpadapt.deep import DANN
    from dpadapt.transport import OTDA

    for est, reason in ((CORAL, "non-private CORAL baseline"), (SubspaceAlignment, "non-private subspace alignment"),
                        (SourceOnly, "non-private source-only baseline"), (FlooredStandardScaler, "a scaler (no data leaves)"),
                        (DANN, "non-private DANN (epsilon must be None)"), (OTDA, "non-private optimal-transport DA")):
        declare_non_private(est, reason)
    return []


#: Functions returning the built-in routes (a module may also call :func:`register_route` itself).
ROUTE_BUILDERS: list[Callable[[], list[Route]]] = [
    _classstats_routes, _dpot_routes, _sound_routes, _prima_routes, _discrepancy_routes, _deep_routes, _declare_non_private,
]
_BUILT: list[bool] = []

#: The packages whose ``__all__`` lists the public estimators (checked against the registry).
PUBLIC_PACKAGES = ("dpadapt.alignment", "dpadapt.baselines", "dpadapt.classstats", "dpadapt.deep", "dpadapt.discrepancy",
                   "dpadapt.sound", "dpadapt.transport")


def public_estimators() -> dict[str, type]:
    """Every class exported (``__all__``) by :data:`PUBLIC_PACKAGES` that has ``fit``: name → class."""
    out: dict[str, type] = {}
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if isinstance(obj, type) and callable(getattr(obj, "fit", None)):
                out[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return out


__all__ = ["DOMAINS", "PUBLIC_PACKAGES", "ROUTE_BUILDERS", "Route", "THREAT_MODEL", "declare_non_private", "non_private",
           "public_estimators", "register_route", "routes"]
