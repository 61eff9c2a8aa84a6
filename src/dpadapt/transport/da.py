"""DPOT's party steps, the :class:`DPOTAdapter` estimator and the non-private :class:`OTDA`.

Sound mode (:func:`plan`, :func:`adapt`, :func:`run_parties`): the sound route's request and release
(:mod:`dpadapt.sound`) with DPOT's receiver step, the ``prototypes`` design — the target's request (its basis),
the source's ONE Gaussian release of class sums and counts in it, the DP prototypes refined by entropic OT on
the target's rows. The CLI (``dpadapt request --design prototypes`` → ``release dpot`` → ``adapt dpot``) runs
the same functions.

Per-row target step (paper mode; :func:`adapt_dpot`, post-processing of a DPOT per-row release): project the target rows
with the public M (after the same public per-row preprocessing as the source), build the
debiased cost, solve OT per released block (whole batch, or one minibatch per step against a
fresh target minibatch), map every released source row to its barycentric image in the
**original** target feature space, and train a classifier on (images, released labels) plus any
labelled target rows. Nothing goes back to the source. If the target later publishes its model,
that model reveals target information (the images are weighted averages of raw target rows) —
the target's privacy is out of scope here.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from dpadapt import sound
from dpadapt.api import ConfigError, ConfigEstimator
from dpadapt.base import DAEstimator
from dpadapt.configs.dpot import Config
from dpadapt.models import make_classifier
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.release import Release, ReleaseError
from dpadapt.transport.coupling import (
    COST_NORMS,
    barycentric_map,
    debiased_cost,
    forbidden_pairs,
    solve_ot,
)
from dpadapt.transport.dpot import (
    KIND,
    METHOD,
    draw_projection,
    preprocess_rows,
    projection_digest,
    release_dpot_source,
)
from dpadapt.validation import check_features, check_random_state

#: Paper mode's cost scaling: POT's ``norm="max"`` (C̃ / max C̃), chosen from the paper's text and
#: POT's OT-DA conventions before it was run (``benchmarks/dpot/dpot_paper_reading.md``).
PAPER_COST_NORM = "max"


@dataclasses.dataclass
class DPOTAdaptation:
    """Result of the target step: the classifier and what it was trained on."""

    model: Pipeline
    images: np.ndarray
    image_labels: np.ndarray
    w_tilde: float
    w_tilde_per_block: np.ndarray
    guarantee: Guarantee
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)


def paper_block_labels(counts: np.ndarray, m: int) -> np.ndarray:
    """Labels of the m label-sorted source rows from a noisy class histogram (paper mode, post-processing).

    Rule: clip the noisy counts at 0, rescale them to sum to m and round with the largest-remainder
    method; rows 1..c̃_0 get label 0, the next c̃_1 rows label 1, and so on. An all-zero histogram
    is replaced by a uniform one.
    """
    c = np.clip(np.asarray(counts, dtype=np.float64), 0.0, None)
    if c.sum() <= 0:
        c = np.ones_like(c)
    share = c * m / c.sum()
    rounded = np.floor(share).astype(np.int64)
    short = m - int(rounded.sum())
    rounded[np.argsort(-(share - rounded), kind="stable")[:short]] += 1
    return np.repeat(np.arange(c.size), rounded)


def _seed_of(random_state) -> int:
    if isinstance(random_state, (int, np.integer)):
        return int(random_state)
    return int(check_random_state(random_state).integers(2**31 - 1))


def transport_blocks(
    blocks: list[tuple[np.ndarray, np.ndarray]],
    Yt: np.ndarray,
    Xt: np.ndarray,
    sigma: float,
    rng: np.random.Generator,
    *,
    yt_partial: np.ndarray | None = None,
    target_batch_size: int | None = None,
    ot_method: str = "sinkhorn_gl",
    reg_e: float = 0.01,
    reg_g: float = 0.1,
    cost_norm: str = "centred_max",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """OT of every (rows, labels) block onto the (projected) target, barycentric images in ``Xt``'s space.

    A block of the full source size uses all target rows; a minibatch block uses a fresh sample
    of ``target_batch_size`` target rows (default: the block size) without replacement.
    Every block's cost is scaled on its own (``cost_norm``, :func:`~dpadapt.transport.coupling.normalised_cost`).
    Returns images, their labels and W̃ of every block.
    """
    n_t = Yt.shape[0]
    images, labels, w = [], [], []
    for Z, lab in blocks:
        if target_batch_size is None and len(blocks) == 1:
            tb = np.arange(n_t)
        else:
            size = min(
                n_t, Z.shape[0] if target_batch_size is None else int(target_batch_size)
            )
            tb = np.sort(rng.choice(n_t, size=size, replace=False))
        C = debiased_cost(Z, Yt[tb], sigma)
        forbid = forbidden_pairs(lab, None if yt_partial is None else yt_partial[tb])
        res = solve_ot(
            C, ot_method, reg_e=reg_e, reg_g=reg_g, source_labels=lab, forbidden=forbid, cost_norm=cost_norm
        )
        images.append(barycentric_map(res.coupling, Xt[tb]))
        labels.append(lab)
        w.append(res.cost_value)
    return np.concatenate(images), np.concatenate(labels), np.asarray(w)


def train_classifier(images, labels, Xt, yt_partial, head: str, seed: int) -> Pipeline:
    """Fit the head on (images, labels) plus the labelled target rows (label ≥ 0)."""
    X, y = images, labels
    if yt_partial is not None and np.any(yt_partial >= 0):
        known = yt_partial >= 0
        X, y = np.vstack([X, Xt[known]]), np.concatenate([y, yt_partial[known]])
    if np.unique(y).size < 2:
        raise ValueError(
            "the transported training set has a single class; cannot train a classifier"
        )
    return make_classifier(head, random_state=seed).fit(X, y)


def _check_partial_labels(yt_partial, n_t: int) -> np.ndarray | None:
    if yt_partial is None:
        return None
    yt = np.asarray(yt_partial)
    if yt.shape != (n_t,):
        raise ValueError(
            f"yt_partial has shape {yt.shape}; expected ({n_t},) with -1 for unlabelled rows"
        )
    yt = yt.astype(np.int64)
    return yt if np.any(yt >= 0) else None


def adapt_dpot(
    release: Release,
    Xt,
    yt_partial=None,
    *,
    ot_method: str = "sinkhorn_gl",
    reg_e: float = 0.01,
    reg_g: float = 0.1,
    head: str = "mlp",
    target_batch_size: int | None = None,
    random_state=None,
    cost_norm: str | None = None,
) -> DPOTAdaptation:
    """Target party step of DPDA on a DPOT source release (post-processing; no new privacy cost).

    Parameters
    ----------
    release : Release
        A ``dpot/source_projection`` release.
    Xt : array (n_t, k)
        The target's rows (same k features as the source).
    yt_partial : array (n_t,), optional
        Known target labels (−1 = unknown): semi-supervised variant; pairs of a known target row
        and a source row with a different (released) label carry no mass, and the known rows join
        the training set.
    ot_method : {"exact", "sinkhorn", "sinkhorn_gl"}
    reg_e, reg_g : float
        λ_e, λ_g (paper: 0.01, 0.1) on the normalised cost.
    head : {"mlp", "logreg"}
        The classifier (:func:`dpadapt.models.make_classifier`).
    target_batch_size : int, optional
        Target rows per minibatch step (default: the source batch size).
    random_state : int or Generator
        Target-side randomness (target minibatches, classifier initialisation).
    cost_norm : {"max", "centred_max", "median", "log", "loglog"}, optional
        Scaling of each block's cost before the solver. Default: ``"max"`` (POT's ``norm="max"``,
        the reading of ``benchmarks/dpot/dpot_paper_reading.md``) for a paper-mode release,
        ``"centred_max"`` otherwise.
    """
    if release.method != METHOD or release.kind != KIND:
        raise ReleaseError(
            f"expected a {METHOD}/{KIND} release, got {release.method}/{release.kind}"
        )
    p = release.params
    Xt = check_features(Xt, "Xt (target)")
    if Xt.shape[1] != p["n_features"]:
        raise ValueError(
            f"target has {Xt.shape[1]} features but the source release was made for {p['n_features']}: "
            "the domains must share a feature space"
        )
    yt_partial = _check_partial_labels(yt_partial, Xt.shape[0])
    start = time.perf_counter()
    M = draw_projection(
        p["n_features"],
        p["proj_dim"],
        p["projection_seed"],
        p.get("projection_kind", "jl"),
    )
    if projection_digest(M) != p["projection_sha256"]:
        raise ReleaseError(
            "the regenerated projection matrix does not match the release (numpy version?)"
        )
    seed = _seed_of(random_state)
    rng = np.random.default_rng(seed)
    Yt = preprocess_rows(Xt, p["row_norm"], p["clip_norm"]) @ M
    Z = release["Z"]
    block = Z.shape[0] if p["batch_size"] is None else p["batch_size"]
    n_blocks = Z.shape[0] // block
    if p["privacy_mode"] == "sound":
        lab = release["labels"]
    else:
        lab = paper_block_labels(release["counts"], p["n_samples"])[
            release["positions"]
        ]
    if "classes" in p:  # released labels are indices into the public label set
        lab = np.asarray(p["classes"])[lab]
    blocks = [
        (Z[i * block : (i + 1) * block], lab[i * block : (i + 1) * block])
        for i in range(n_blocks)
    ]
    if cost_norm is None:
        cost_norm = PAPER_COST_NORM if p["privacy_mode"] == "paper" else "centred_max"
    images, labels, w = transport_blocks(
        blocks,
        Yt,
        Xt,
        p["sigma"],
        rng,
        yt_partial=yt_partial,
        target_batch_size=target_batch_size,
        ot_method=ot_method,
        reg_e=reg_e,
        reg_g=reg_g,
        cost_norm=cost_norm,
    )
    mid = time.perf_counter()
    model = train_classifier(images, labels, Xt, yt_partial, head, seed)
    seconds = {"transport": mid - start, "classifier": time.perf_counter() - mid}
    return DPOTAdaptation(
        model, images, labels, float(w.mean()), w, release.guarantee, seconds
    )


#: DPOT's receiver step in sound mode: the sound route's ``prototypes`` design (:mod:`dpadapt.sound`), whose
#: post-processing refines the DP class prototypes by entropic OT between the receiver's rows and the classes.
SOUND_DESIGN = "prototypes"


def sound_config(config: Config) -> sound.Config:
    """DPOT's sound mode as a Config of the sound route: the same (ε, δ), label set, relation, seed and per-row map,
    with the receiver's request pinned to the :data:`SOUND_DESIGN`. Refuses the DPOT options sound mode does not read."""
    defaults = {f.name: f.default for f in dataclasses.fields(Config)}
    ignored = [name for name in ("k", "refinement") if getattr(config, name) != defaults[name]]
    if ignored:
        raise ConfigError(f"{', '.join(ignored)} are not read in sound mode: the sound design sizes the basis from the "
                          "public noise level and the rows, and the transport step is the refinement")
    feature_type = config.feature_type if config.log1p == "auto" else ("counts" if config.log1p == "true" else "dense")
    return sound.Config(epsilon=config.epsilon, delta=config.delta, classes=config.classes,
                        random_state=config.random_state, reproducible_noise=config.reproducible_noise,
                        relation=config.relation, feature_type=feature_type, design=SOUND_DESIGN)


def check_request(request_: Release | sound.Request) -> sound.Request:
    """The receiver's request, refused (one line) unless it asks for DPOT's receiver step (:data:`SOUND_DESIGN`)."""
    req = request_ if isinstance(request_, sound.Request) else sound.Request.from_release(request_)
    if req.design.get("design") != SOUND_DESIGN:
        raise ReleaseError(f"the request is for the {req.design.get('design')!r} design; DPOT's receiver step is the "
                           f"{SOUND_DESIGN!r} design (`dpadapt request --design {SOUND_DESIGN}`), or answer this request "
                           "with `dpadapt release sound`")
    return req


def plan(config: Config, facts: dict):
    """(source, before any row is read) σ and the Guarantee of its release for the receiver's ``facts["request"]``
    (:func:`dpadapt.sound.plan` of :func:`sound_config`)."""
    check_request(facts["request"])
    return sound.plan(sound_config(config), facts)


def adapt(releases: list[Release], Xt, config: Config | None = None) -> sound.SoundModel:
    """(receiver) DPOT's step on the sources' releases of its prototypes request (:func:`dpadapt.sound.adapt`)."""
    for r in releases:
        if r.kind == sound.REQUEST_KIND:
            check_request(r)
    return sound.adapt(releases, Xt, None if config is None else sound_config(config))


def run_parties(config: Config, Xs, ys, Xt) -> tuple[Release, Release, sound.SoundModel]:
    """Sound mode in one process (:func:`dpadapt.sound.run_parties` of :func:`sound_config`): the request, the
    source's release, the receiver's model."""
    req, (rel,), model = sound.run_parties(sound_config(config), [(Xs, ys)], Xt)
    return req, rel, model


def contract_example(random_state: int) -> tuple[Config, dict]:
    """The family contract's example: 60 labelled source rows, 40 target rows (``contract_blobs``)."""
    from dpadapt.datasets.synthetic import contract_blobs

    return Config(epsilon=1.0, classes=(0, 1, 2), random_state=random_state), contract_blobs(random_state)


def contract_run(config: Config, data: dict) -> tuple[list[Release], sound.SoundModel]:
    req, rel, model = run_parties(config, data["Xs"], data["ys"], data["Xt"])
    return [req, rel], model


class DPOTAdapter(ConfigEstimator):
    """DPOT with both party steps in one process; skada-compatible.

    Sound mode (default): the sound route (:mod:`dpadapt.sound`) with DPOT's transport step as the
    post-processing — the unprotected target sends its request (mean and top-k basis, k from the
    design rule), the source releases per-class sums and counts of its rows in that basis as ONE
    Gaussian (record-level (ε, δ)-DP, labels included, Δ = 2 replace-one; analytic Gaussian, Balle & Wang
    2018, Thm. 8), the target refines the DP prototypes on its own rows by entropic OT (each row to the class
    it sends most mass to, :func:`dpadapt.sound.receiver.prototypes_ot`) and re-estimates its class prior
    on them; post-processing, no further cost. The CLI's ``request --design prototypes`` → ``release dpot``
    → ``adapt dpot`` give the same model. After fitting: ``request_``, ``release_``, ``model_``. ``design="rows"``
    (the per-row release) is refused in sound mode.
    Paper mode: the published procedure (LeTien et al. 2019), its guarantee marked invalid.
    ``classes`` (the public label set) is required in sound mode; δ defaults to 1/(10 n_s) and
    δ ≥ 1/n_s is refused in sound mode.
    """

    config_class = Config

    def fit_domains(self, Xs, ys, Xt, yt=None):
        self.config_ = c = self.make_config()
        return _FIT_BY_DESIGN[c.resolved_design()](self, c, Xs, ys, Xt, yt)

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(check_features(X, allow_sparse=True) if hasattr(self.model_, "transform") else check_features(X))

    def predict_proba(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(check_features(X, allow_sparse=True) if hasattr(self.model_, "transform") else check_features(X))


def _fit_classstats(est: DPOTAdapter, c: Config, Xs, ys, Xt, yt) -> DPOTAdapter:
    """Sound mode: DPOT's transport step as a post-processing of the sound route (:mod:`dpadapt.sound`) — the
    receiver's request (its basis, k from the rule of :mod:`dpadapt.sound.design`), ONE Gaussian release of the
    source's class sums and counts, the DP prototypes refined by entropic OT on the receiver's rows
    (:func:`run_parties`; the CLI's ``request`` → ``release dpot`` → ``adapt dpot`` are the same steps)."""
    config = sound_config(c)
    Xs, ys, Xt, _ = est._check_domains(Xs, ys, Xt, None, allow_sparse=True)
    start = time.perf_counter()
    est.request_, est.release_, est.model_ = run_parties(c, Xs, ys, Xt)
    est.seconds_ = {"total": time.perf_counter() - start}
    est.classes_ = est.model_.classes_
    est._set_guarantees(*([est.release_.guarantee] if config.private else []))
    return est


def _fit_rows(est: DPOTAdapter, c: Config, Xs, ys, Xt, yt) -> DPOTAdapter:
    """Per-row design, paper mode only (sound mode refuses it): noisy projected rows, OT, barycentric images."""
    if not c.private:
        raise ConfigError("the per-row design needs epsilon; its non-private counterpart is OTDA")
    Xs, ys, Xt, yt = est._check_domains(Xs, ys, Xt, yt)
    start = time.perf_counter()
    est.release_ = release_dpot_source(
        Xs, ys, c.epsilon,
        c.resolved_delta(Xs.shape[0]) if c.delta is not None else 1.0 / (1.2 * Xs.shape[0]),
        classes=c.classes, proj_dim=c.proj_dim, batch_size=c.batch_size, noise_multiplier=c.noise_multiplier,
        steps=c.steps, label_epsilon=c.label_epsilon, labels=c.labels, row_norm=c.row_norm,
        clip_norm=c.clip_norm, privacy_mode=c.privacy_mode, projection=c.projection,
        random_state=c.random_state, reproducible_noise=c.reproducible_noise,
    )
    released = time.perf_counter()
    est.adaptation_ = adapt_dpot(
        est.release_, Xt, yt, ot_method=c.ot_method, reg_e=c.reg_e, reg_g=c.reg_g, head=c.head,
        target_batch_size=c.target_batch_size, random_state=c.random_state, cost_norm=c.cost_norm,
    )
    est.model_ = est.adaptation_.model
    est.classes_ = est.model_.classes_
    est.w_tilde_ = est.adaptation_.w_tilde
    est.seconds_ = {"release": released - start, **est.adaptation_.seconds}
    est._set_guarantees(est.release_.guarantee)
    return est


#: One route per design; :meth:`DPOTAdapter.fit_domains` dispatches once on the resolved design.
_FIT_BY_DESIGN = {"classstats": _fit_classstats, "rows": _fit_rows}


class OTDA(DAEstimator):
    """Non-private OT domain adaptation (Courty et al. 2017): the DPDA pipeline without privacy.

    Same solvers, barycentric map and classifier as :class:`DPOTAdapter`, on the raw features (no
    projection, no noise, true labels). ``cost_norm``: the double-centred cost by default; ``"max"``
    is paper mode's reading (POT's ``norm="max"``). No guarantee (``guarantee_`` is None).
    """

    def __init__(
        self,
        ot_method: str = "sinkhorn_gl",
        reg_e: float = 0.01,
        reg_g: float = 0.1,
        head: str = "mlp",
        batch_size: int | None = None,
        row_norm: str = "none",
        random_state: int | None = None,
        cost_norm: str = "centred_max",
    ):
        self.ot_method = ot_method
        self.reg_e = reg_e
        self.reg_g = reg_g
        self.head = head
        self.batch_size = batch_size
        self.row_norm = row_norm
        self.random_state = random_state
        self.cost_norm = cost_norm

    def fit_domains(self, Xs, ys, Xt, yt=None):
        Xs, ys, Xt, yt = self._check_domains(Xs, ys, Xt, yt)
        seed = _seed_of(self.random_state)
        rng = np.random.default_rng(seed)
        Ps, Pt = (
            preprocess_rows(Xs, self.row_norm, 1.0),
            preprocess_rows(Xt, self.row_norm, 1.0),
        )
        n = Xs.shape[0]
        if self.batch_size is None or self.batch_size >= n:
            blocks = [(Ps, ys)]
        else:
            steps = math.ceil(n / self.batch_size)
            idx = [
                rng.choice(n, size=self.batch_size, replace=False) for _ in range(steps)
            ]
            blocks = [(Ps[i], ys[i]) for i in idx]
        yt = _check_partial_labels(yt, Xt.shape[0])
        start = time.perf_counter()
        images, labels, w = transport_blocks(
            blocks,
            Pt,
            Xt,
            0.0,
            rng,
            yt_partial=yt,
            ot_method=self.ot_method,
            reg_e=self.reg_e,
            reg_g=self.reg_g,
            cost_norm=self.cost_norm,
        )
        mid = time.perf_counter()
        self.model_ = train_classifier(images, labels, Xt, yt, self.head, seed)
        self.seconds_ = {
            "release": 0.0,
            "transport": mid - start,
            "classifier": time.perf_counter() - mid,
        }
        self.classes_ = self.model_.classes_
        self.w_ = float(w.mean())
        self._set_guarantees()
        return self

    def predict(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict(check_features(X))

    def predict_proba(self, X):
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(check_features(X))
