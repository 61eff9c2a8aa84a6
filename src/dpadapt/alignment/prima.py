"""PRIMA / PRISA (Jin, Cheng, Yang, Shen, IJCAI 2021) with both parties protected, in the shared shape.

``PrimaConfig`` declares every hyper-parameter once; :func:`plan` fixes σ and both parties'
Guarantees from public facts (sizes, dimension, the public label set) before any row is read;
the party steps are plain functions working across processes through Release files.

Two protocols (``source_release``):

* ``"class_statistics"`` (the sound default): the source maps each row by a public per-row map
  (log1p for counts, ℓ2 normalisation, a public random basis of ``basis_dim`` columns drawn from the
  public stream, normalised again) and releases ONE Gaussian on its per-class sums and counts
  (:func:`dpadapt.privacy.mechanisms.class_statistics`, Δ = 2 replace-one). The target turns them
  into prototypes (centred on the source mean estimated from the same release, while it centres its
  own rows on its own mean), refines them on its own rows (:mod:`dpadapt.classstats.adapt`, shared with the class-statistics family) and keeps
  the classifier: its own computation, nothing of the target is released (target ε = 0).
* ``"dpsgd_heads"`` (the published design, and paper mode): the target releases noisy subspace second
  moments (:func:`release_target`), the source aligns every subspace (CORAL for PRIMA, SA for PRISA)
  and trains one head per subspace with DP-SGD; the target predicts by majority vote.

``privacy_mode="paper"`` reproduces the published procedure (per-feature [0, 1] scaling with the
data's own extremes, forward selection on raw target rows, per-block classic Gaussian noise,
raw source covariance, per-subspace DP-SGD runs, median clipping bound); its guarantees are
marked invalid with reasons. Public randomness (the partition, the basis) comes from the public
stream of ``random_state``; noise only from the secret :class:`~dpadapt.privacy.mechanisms.NoiseSource`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from dpadapt.alignment import covariance as cov
from dpadapt.alignment.coral import coral_matrix
from dpadapt.alignment.dp_training import dpsgd_schedule, head_scores, train_heads, train_one_vs_rest_heads
from dpadapt.alignment.subspace import sa_bases
from dpadapt.api import ConfigError, Plan
from dpadapt.classstats.adapt import class_means, normalise_rows, principal_directions, refine
from dpadapt.configs.prima import PrimaConfig
from dpadapt.privacy import accounting
from dpadapt.privacy.families import prima as calib
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import NoiseSource, class_statistics, gaussian
from dpadapt.release import Release, ReleaseError
from dpadapt.validation import check_class_statistics, check_features, check_labels, check_untrusted_array

METHOD = "prima"
# --- public facts, plan ---------------------------------------------------------------------


def plan(config: PrimaConfig, facts: dict[str, Any]) -> Plan:
    """Both parties' Guarantees and every σ, from ``facts`` (n_source, n_target, n_features).

    The Plan's guarantee is the source's; ``calibration["target_guarantee"]`` the target's.
    """
    if config.privacy_mode == "paper" and config.protocol() == "class_statistics":
        raise ConfigError("source_release='class_statistics' is our protocol; paper mode runs the published heads")
    if (config.paper_calibration != "accountant" or config.per_class_budget) and config.privacy_mode != "paper":
        raise ConfigError("paper_calibration and per_class_budget are readings of the published procedure: paper mode only")
    if config.per_class_budget and config.head != "logreg":
        raise ConfigError("per_class_budget trains binary logistic-regression heads: head must be 'logreg'")
    n_s, n_t, d = int(facts["n_source"]), int(facts["n_target"]), int(facts["n_features"])
    kind = config.protocol()
    cal: dict[str, Any] = {"protocol": kind}
    if kind == "dpsgd_heads":
        q, steps = dpsgd_schedule(n_s, config.batch_size, config.epochs)
        n_heads = 1 if config.partition == "full" else math.ceil(d / min(config.subspace_size, d))
        cal.update(sample_rate=q, steps=steps, n_heads=n_heads)
    if not config.private:
        return Plan(METHOD, kind, config, dict(facts), None, {**cal, "target_guarantee": None})
    delta_s = config.resolved_delta(n_s) if config.privacy_mode == "sound" else float(config.delta or 1e-5)
    if kind == "class_statistics":
        g_s, sigma = calib.class_statistics_plan(config.epsilon, delta_s)
        cal.update(sigma=sigma, target_guarantee=calib.target_silent())
        return Plan(METHOD, kind, config, dict(facts), g_s, cal)
    delta_t = config.resolved_delta(n_t) if config.privacy_mode == "sound" else float(config.delta or 1e-5)
    g_t, sigma_t = calib.target_covariances_plan(n_t, config.epsilon, delta_t, partition=config.partition,
                                                 privacy_mode=config.privacy_mode)
    g_s, z_cov, z = calib.dpsgd_heads_plan(
        cal["n_heads"], config.epsilon, delta_s, sample_rate=cal["sample_rate"], steps=cal["steps"],
        cov_budget_fraction=config.cov_budget_fraction, joint=config.joint, privacy_mode=config.privacy_mode,
        paper_calibration=config.paper_calibration,
        budget_split=len(config.required_classes()) if config.per_class_budget else 1,
    )
    cal.update(sigma_entry=sigma_t, cov_noise_multiplier=z_cov, noise_multiplier=z, target_guarantee=g_t)
    return Plan(METHOD, kind, config, dict(facts), g_s, cal)


def class_indices(ys, config: PrimaConfig) -> tuple[np.ndarray, np.ndarray]:
    """(public label set, indices of ``ys`` into it); a label outside the public set is an error.

    The label set comes from ``classes=`` (required whenever the source is protected); only the
    non-private counterpart may read it off the labels.
    """
    if config.private or config.classes is not None:
        classes = np.asarray(config.required_classes())
    else:
        classes = np.unique(ys)
    lookup = {c: i for i, c in enumerate(classes.tolist())}
    try:
        idx = np.array([lookup[c] for c in np.asarray(ys).tolist()], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"source label {exc.args[0]!r} is not in the public label set classes={tuple(classes.tolist())}") from None
    return classes, idx


# --- preprocessing (public, per record) --------------------------------------------------------


def preprocess(X, *, log_counts: bool, row_norm: float, privacy_mode: str):
    """Sound: optional log(1 + x) (counts), then clip rows to ``row_norm``. Paper: per-feature [0, 1]."""
    X = check_features(X, allow_sparse=True)
    if privacy_mode == "paper":
        dense = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        lo, hi = dense.min(axis=0), dense.max(axis=0)
        return (dense - lo) / np.where(hi > lo, hi - lo, 1.0)
    if log_counts:
        if sp.issparse(X):
            X = X.copy()
            if X.data.size and X.data.min() < 0:
                raise ValueError("log_counts needs non-negative counts")
            X.data = np.log1p(X.data)
        else:
            if X.size and X.min() < 0:
                raise ValueError("log_counts needs non-negative counts")
            X = np.log1p(X)
    return cov.clip_rows_any(X, row_norm)


def _block(X, idx: np.ndarray) -> np.ndarray:
    B = X[:, idx]
    return B.toarray() if sp.issparse(B) else np.asarray(B, dtype=np.float64)


def _split_partition(flat: np.ndarray, sizes: np.ndarray) -> list[np.ndarray]:
    return np.split(np.asarray(flat, dtype=np.int64), np.cumsum(sizes)[:-1])


# --- class-statistics protocol ---------------------------------------------------------------


def _dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def public_basis(n_features: int, basis_dim: int | None, seed: int) -> np.ndarray | None:
    """The public random basis (d × k random signs / √k, Achlioptas 2003) regenerated from its released seed.

    Public randomness (it is released through its seed), so no privacy noise is drawn here.
    """
    if basis_dim is None:
        return None
    signs = np.random.default_rng(seed).integers(0, 2, size=(n_features, basis_dim), dtype=np.int8)
    return (2.0 * signs - 1.0) / math.sqrt(basis_dim)


def embed(X, *, log_counts: bool, basis: np.ndarray | None) -> np.ndarray:
    """The public per-row map: log1p (counts), ℓ2 normalisation, projection on the public basis, normalisation."""
    X = preprocess(X, log_counts=log_counts, row_norm=1.0, privacy_mode="sound")
    Z = normalise_rows(_dense(X))
    if basis is not None:
        Z = normalise_rows(Z @ basis)
    return Z


def release_source_statistics(plan_: Plan, Xs, ys, public: np.random.Generator, noise: NoiseSource) -> Release:
    """Source party: ONE Gaussian on per-class sums and counts of its mapped rows (the Plan's σ)."""
    config: PrimaConfig = plan_.config
    Xs = check_features(Xs, "Xs (source)", allow_sparse=True, min_rows=2)
    d = int(plan_.facts["n_features"])
    if Xs.shape[1] != d:
        raise ValueError(f"source has {Xs.shape[1]} features, the plan {d}")
    classes, y_idx = class_indices(check_labels(ys, Xs.shape[0], "ys (source labels)", classes=config.classes), config)
    basis_seed = int(public.integers(2**63 - 1))
    Z = embed(Xs, log_counts=config.log_counts, basis=public_basis(d, config.basis_dim, basis_seed))
    if config.private:
        stats = class_statistics(Z, y_idx, len(classes), sigma=plan_.calibration["sigma"], relation="replace_one", noise=noise)
        sums, counts = stats.sums, stats.counts
        guarantee = plan_.guarantee
    else:
        sums = np.zeros((len(classes), Z.shape[1]))
        np.add.at(sums, y_idx, Z)
        counts = np.bincount(y_idx, minlength=len(classes)).astype(np.float64)
        guarantee = Guarantee.non_private("source", "non-private counterpart (epsilon=None)")
    params = {"n_features": d, "basis_dim": config.basis_dim, "basis_seed": basis_seed, "log_counts": config.log_counts,
              "privacy_mode": config.privacy_mode, "sigma": plan_.calibration.get("sigma"),
              "n_source": int(Xs.shape[0])}  # public (replace-one): the receiver checks the counts against it
    return Release(METHOD, "source_class_statistics", "source",
                   {"sums": sums, "counts": counts, "classes": classes}, guarantee, params)


@dataclasses.dataclass
class ClassStatisticsClassifier:
    """The target's classifier from released class statistics: linear scores on its embedded rows."""

    classes_: np.ndarray
    W: np.ndarray
    b: np.ndarray
    target_mean: np.ndarray | None
    n_features: int
    basis_dim: int | None
    basis_seed: int
    log_counts: bool
    directions: np.ndarray | None = None

    def _embed(self, X) -> np.ndarray:
        Z = embed(X, log_counts=self.log_counts, basis=public_basis(self.n_features, self.basis_dim, self.basis_seed))
        if self.target_mean is not None:
            Z = normalise_rows(Z - self.target_mean)
        if self.directions is not None:  # rows re-normalised after projection, as during refinement
            P = Z @ self.directions
            Z = (P / np.maximum(np.linalg.norm(P, axis=1, keepdims=True), 1e-12)) @ self.directions.T
        return Z

    def decision_function(self, X) -> np.ndarray:
        return self._embed(X) @ self.W.T + self.b

    def predict(self, X) -> np.ndarray:
        return self.classes_[self.decision_function(X).argmax(axis=1)]

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


def adapt_class_statistics(release: Release, Xt, config: PrimaConfig) -> ClassStatisticsClassifier:
    """Target party: prototypes from the release, refined on its own rows (post-processing + own data)."""
    if release.method != METHOD or release.kind != "source_class_statistics":
        raise ReleaseError(f"expected a prima source_class_statistics release, got {release.method}/{release.kind}")
    p = release.params
    d = int(p["n_features"])
    Xt = check_features(Xt, "Xt (target)", allow_sparse=True, min_rows=1)
    if Xt.shape[1] != d:
        raise ValueError(f"target has {Xt.shape[1]} features, the release {d}")
    K = len(config.classes) if config.classes is not None else None
    try:  # the source's statistics are untrusted input: what the declared mechanism can produce
        classes = release["classes"]
        if K is not None and list(np.asarray(classes).tolist()) != list(config.classes):
            raise ValueError(f"the release is for the label set {np.asarray(classes).tolist()}, the receiver expects {list(config.classes)}")
        sums, counts, _ = check_class_statistics(release, (len(classes), p["basis_dim"] or d))
    except (KeyError, ValueError) as exc:
        raise ReleaseError(f"class-statistics release: {exc}") from None
    means, pooled = class_means(sums, counts)
    Zt = embed(Xt, log_counts=bool(p["log_counts"]), basis=public_basis(d, p["basis_dim"], int(p["basis_seed"])))
    target_mean = None
    if config.center:
        target_mean = Zt.mean(axis=0)
        Zt = normalise_rows(Zt - target_mean)
        means = means - pooled
    V = None
    if config.target_pca is not None:
        V = principal_directions(Zt, config.target_pca)
        Zt, means = normalise_rows(Zt @ V), means @ V
    W, b = refine(Zt, normalise_rows(means), None, config.refinement,
                              random_state=config.random_state).linear()
    if V is not None:  # scores of normalised projected rows = (Z V / ‖Z V‖) Wᵀ: keep the map in the model
        W = W @ V.T
    return ClassStatisticsClassifier(classes, W, b, target_mean, d, p["basis_dim"], int(p["basis_seed"]),
                                     bool(p["log_counts"]), V)


# --- heads protocol: target party ---------------------------------------------------------------


def release_target(plan_: Plan, Xt, public: np.random.Generator, noise: NoiseSource) -> Release:
    """Target party (heads protocol): noisy PSD-repaired second-moment blocks of all subspaces.

    The partition is drawn from the PUBLIC stream (data-independent, released); the noise from the
    secret ``noise`` stream, so knowing the seed of the partition does not replay the noise.
    """
    config: PrimaConfig = plan_.config
    if plan_.kind != "dpsgd_heads":
        raise ValueError("the target releases covariances only in the dpsgd_heads protocol")
    Xt = check_features(Xt, "Xt (target)", allow_sparse=True, min_rows=2)
    n, d = Xt.shape
    X = preprocess(Xt, log_counts=config.log_counts, row_norm=1.0, privacy_mode=config.privacy_mode)
    if config.partition == "random":
        parts = cov.random_partition(d, config.subspace_size, public)
    elif config.partition == "full":
        parts = cov.full_partition(d)
    else:
        parts = cov.forward_selection(X, config.epsilon or 1.0, config.delta or 1e-5, public)
    sigma = plan_.calibration.get("sigma_entry")
    if not config.private:
        blocks = cov.block_second_moments(X, parts)
        guarantee = Guarantee.non_private("target", "non-private counterpart (epsilon=None)")
    else:
        blocks = cov.release_block_second_moments(X, parts, sigma, noise, row_norm=1.0,
                                                  sensitivity=plan_.calibration["target_guarantee"].sensitivity,
                                                  enforce_norm=config.privacy_mode == "sound")
        guarantee = plan_.calibration["target_guarantee"]
    repaired = [cov.psd_repair(C, config.psd_repair) for C in blocks]
    arrays: dict[str, np.ndarray] = {
        "partition": np.concatenate(parts).astype(np.int64),
        "block_sizes": np.array([len(p) for p in parts], dtype=np.int64),
    }
    for i, C in enumerate(repaired):
        arrays[f"cov_{i}"] = C
    params: dict[str, Any] = {
        "n_features": d, "n_target": n, "n_blocks": len(parts), "subspace_size": config.subspace_size,
        "partition": config.partition, "psd_repair": config.psd_repair, "log_counts": config.log_counts,
        "row_norm": 1.0, "sigma_entry": sigma or 0.0, "privacy_mode": config.privacy_mode,
        "second_moment": "uncentered (1/n) XᵀX per block",
    }
    return Release(METHOD, "target_covariances", "target", arrays, guarantee, params)


def target_blocks(release: Release) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(partition blocks, released covariance blocks) of a target Release, checked."""
    if release.method != METHOD or release.kind != "target_covariances":
        raise ReleaseError(f"expected a prima target_covariances release, got {release.method}/{release.kind}")
    sizes = release["block_sizes"]
    parts = _split_partition(release["partition"], sizes)
    cov.check_partition(parts, int(release.params["n_features"]))
    covs = []
    for i, p in enumerate(parts):  # untrusted input: finite, symmetric, of the partition's shape
        try:
            C = check_untrusted_array(release[f"cov_{i}"], f"covariance block {i}", (len(p), len(p)))
        except ValueError as exc:
            raise ReleaseError(f"release covariance block does not match its partition block: {exc}") from None
        if not np.allclose(C, C.T, rtol=1e-9, atol=1e-12):
            raise ReleaseError(f"release covariance block {i} is not symmetric; refused")
        covs.append(C)
    return parts, covs


#: Largest spectral norm accepted for a per-block alignment map built from the other party's covariance:
#: the source's unit-norm rows then map to features of norm ≤ 1e6, whose per-example gradients stay
#: far inside float32 (the DP-SGD heads train in float32). An honest map is O(√d) (unit-mean-diagonal CORAL).
MAX_ALIGNMENT_NORM = 1e6


def _checked_map(H: np.ndarray, i: int) -> np.ndarray:
    """A block's alignment map (a function of the other party's release and of our own DP release only),
    refused if non-finite or of spectral norm above :data:`MAX_ALIGNMENT_NORM` (checked before any private
    row is mapped)."""
    norm = float(np.linalg.norm(H, 2)) if np.all(np.isfinite(H)) else math.inf
    if not norm <= MAX_ALIGNMENT_NORM:
        raise ReleaseError(
            f"the alignment map of block {i} built from the other party's covariance has norm {norm:.3g} "
            f"> {MAX_ALIGNMENT_NORM:g} (hostile or broken release); refused"
        )
    return H


# --- heads protocol: source party -----------------------------------------------------------------


def release_source_heads(plan_: Plan, target_release: Release, Xs, ys, public: np.random.Generator,
                         noise: NoiseSource) -> Release:
    """Source party (heads protocol): align every subspace to the target's blocks, train DP-SGD heads.

    The head widths come from the public label set (never from the labels present).
    """
    config: PrimaConfig = plan_.config
    parts, covs_t = target_blocks(target_release)
    if target_release.params.get("privacy_mode") != config.privacy_mode:
        raise ReleaseError(
            f"the target release was made in {target_release.params.get('privacy_mode')!r} mode, adapt runs in {config.privacy_mode!r} mode"
        )
    Xs = check_features(Xs, "Xs (source)", allow_sparse=True, min_rows=2)
    d = int(target_release.params["n_features"])
    if Xs.shape[1] != d:
        raise ValueError(f"source has {Xs.shape[1]} features, the target release {d}")
    classes, y_idx = class_indices(check_labels(ys, Xs.shape[0], "ys (source labels)", classes=config.classes), config)
    n = Xs.shape[0]
    mode = config.privacy_mode
    repair = target_release.params["psd_repair"]
    X = preprocess(Xs, log_counts=bool(target_release.params["log_counts"]), row_norm=1.0, privacy_mode=mode)
    cal = plan_.calibration
    z_cov = cal.get("cov_noise_multiplier")
    if config.private and z_cov is not None:
        covs_s, sigma_s = cov.noisy_sum_second_moments(X, parts, z_cov, noise)
        covs_s = [cov.psd_repair(C, repair) for C in covs_s]
    else:
        covs_s, sigma_s = cov.block_second_moments(X, parts), 0.0
    scale = float(d) if mode == "sound" else 1.0
    sigma_t = float(target_release.params["sigma_entry"])
    if not (math.isfinite(sigma_t) and sigma_t >= 0):
        raise ReleaseError(f"the target release's sigma_entry {sigma_t!r} is not a finite number ≥ 0; refused")
    feats, sizes, tproj = [], [], []
    for i, idx in enumerate(parts):
        B = _block(X, idx)
        if config.alignment == "coral":
            ridge = config.reg
            if config.noise_aware_reg and mode == "sound":
                ridge += scale * (cov.noise_spectral_scale(len(idx), sigma_t) + cov.noise_spectral_scale(len(idx), sigma_s))
            feats.append(B @ _checked_map(coral_matrix(covs_s[i], covs_t[i], ridge, scale), i))
            sizes.append(len(idx))
        else:
            k = min(config.sa_dim, len(idx))
            Ps, Bt = sa_bases(covs_s[i], covs_t[i], k)
            feats.append(B @ _checked_map(Ps, i))
            tproj.append(Bt)
            sizes.append(k)
    Z = np.hstack(feats)
    # the DP-SGD engine takes an integer seed for its noise: drawn from the secret stream
    seed = int(noise.torch_generator().initial_seed() % (2**31 - 1)) if config.private else int(public.integers(2**31 - 1))
    z = cal.get("noise_multiplier") if config.private else None
    train = train_one_vs_rest_heads if config.per_class_budget else train_heads
    trained = train(
        Z, y_idx, sizes, len(classes), head=config.head, hidden=config.hidden, epochs=config.epochs,
        batch_size=config.batch_size, lr=config.lr, momentum=config.momentum, max_grad_norm=config.max_grad_norm,
        noise_multiplier=z, joint=config.joint and mode == "sound", seed=seed, noise=noise,
        clip_rule="median" if mode == "paper" else "fixed",
    )
    if config.private:
        guarantee = plan_.guarantee
        if trained.events and mode == "sound":
            spent = calib.source_heads_event(z_cov, trained.events)
            if accounting.epsilon(spent, guarantee.delta, guarantee.relation, "pld") > guarantee.epsilon + 1e-6:
                raise RuntimeError("the DP-SGD run spent more than planned; refusing to release")
    else:
        guarantee = Guarantee.non_private("source", "non-private counterpart (epsilon=None)")
    arrays: dict[str, np.ndarray] = {
        "partition": target_release["partition"], "block_sizes": target_release["block_sizes"], "classes": classes,
    }
    for i, params in enumerate(trained.params):
        for j, a in enumerate(params):
            arrays[f"head{i}_p{j}"] = a
    for i, Bt in enumerate(tproj):
        arrays[f"tproj_{i}"] = Bt
    return Release(METHOD, "source_models", "source", arrays, guarantee, {
        "alignment": config.alignment, "head": config.head, "n_heads": len(parts),
        "n_layers": len(trained.params[0]) // 2,
        "log_counts": bool(target_release.params["log_counts"]), "privacy_mode": mode,
        "target_release_id": target_release.release_id, "max_grad_norm": trained.clip_norms, "noise_multiplier": z,
        "cov_noise_multiplier": z_cov if config.private else None, "dpsgd_runs": len(trained.events),
    })


# --- the family's party steps ------------------------------------------------------------------


def release(plan_: Plan, data: dict[str, Any], public: np.random.Generator, noise: NoiseSource) -> Release:
    """The source party's release of the planned protocol (``data``: Xs, ys and, for heads, target_release)."""
    if plan_.kind == "class_statistics":
        return release_source_statistics(plan_, data["Xs"], data["ys"], public, noise)
    return release_source_heads(plan_, data["target_release"], data["Xs"], data["ys"], public, noise)


def adapt(release_: Release, Xt, config: PrimaConfig):
    """The target party's model from the source's release (post-processing and its own rows)."""
    if release_.method != METHOD:
        raise ReleaseError(f"expected a prima release, got {release_.method}/{release_.kind}")
    if release_.kind == "source_class_statistics":
        return adapt_class_statistics(release_, Xt, config)
    if release_.kind == "source_models":
        return PrimaVoteClassifier(release_)
    raise ReleaseError(f"unexpected prima release kind {release_.kind!r}")


# --- target party: prediction ---------------------------------------------------------------


def vote_scores(release: Release, Xt) -> np.ndarray:
    """Per class: number of heads voting for it plus a tie-break < 1 from the summed probabilities."""
    vote_scores_check(release)
    p = release.params
    parts = _split_partition(release["partition"], release["block_sizes"])
    X = preprocess(Xt, log_counts=bool(p["log_counts"]), row_norm=1.0, privacy_mode=p["privacy_mode"])
    n_cls = release["classes"].size
    votes = np.zeros((X.shape[0], n_cls))
    prob_sum = np.zeros_like(votes)
    for i, idx in enumerate(parts):
        Z = _block(X, idx)
        if p["alignment"] == "sa":
            Z = Z @ release[f"tproj_{i}"]
        params = [release[f"head{i}_p{j}"] for j in range(2 * int(p["n_layers"]))]
        s = head_scores(params, Z)
        votes[np.arange(X.shape[0]), s.argmax(axis=1)] += 1
        e = np.exp(s - s.max(axis=1, keepdims=True))
        prob_sum += e / e.sum(axis=1, keepdims=True)
    return votes + prob_sum / (len(parts) + 1.0)


class PrimaVoteClassifier:
    """The target's classifier: the source's return Release applied by majority vote (picklable)."""

    def __init__(self, release: Release):
        vote_scores_check(release)
        self.release = release
        self.classes_ = release["classes"]

    def decision_function(self, X) -> np.ndarray:
        return vote_scores(self.release, X)

    def predict(self, X) -> np.ndarray:
        return predict_prima(self.release, X)

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


def vote_scores_check(release: Release) -> None:
    if release.method != METHOD or release.kind != "source_models":
        raise ReleaseError(f"expected a prima source_models release, got {release.method}/{release.kind}")


def predict_prima(release: Release, Xt) -> np.ndarray:
    """Majority vote of the subspace heads (ties broken by summed probabilities)."""
    scores = vote_scores(release, Xt)
    return release["classes"][scores.argmax(axis=1)]
