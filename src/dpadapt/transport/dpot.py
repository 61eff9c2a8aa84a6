"""DPOT source party, per-row design: Johnson–Lindenstrauss projection + Gaussian noise on the source rows.

Sound DPOT is the sound route's prototypes design (:mod:`dpadapt.sound`, ``design="auto"`` in
:class:`dpadapt.transport.DPOTAdapter`). This module is the per-row release of paper mode (``design="rows"``);
the estimator and the CLI refuse it in sound mode — the whole-batch release is *weak* (every row carries noise far larger than the row
itself: ≈ 11 % on DeCAF6 D↔W at ε = 20, chance level) and the minibatch accounting does not hold.

LeTien, Habrard & Sebban (IJCAI 2019), Algorithms 1–2, with the fixes of spec ``01-dpot`` §7.

The source draws a public matrix M ∈ R^{k×ℓ} with i.i.d. N(0, 1/ℓ) entries and releases
``Z = X_s M + Δ`` (Δ ∈ R^{m×ℓ} i.i.d. N(0, σ²)) together with labels. Two privacy modes:

``"sound"`` (default) — record-level DP under ``replace_one`` (n_s public):

* every row is L2-normalised to a public norm C (``row_norm="normalize"``) or clipped to it
  (``"clip"``) — per-record operations, so ‖x‖ ≤ C for every record;
* one record changes one released row by ‖(x − x′)M‖ ≤ ‖x − x′‖·‖M‖op ≤ 2C‖M‖op =: Δ, with
  ‖M‖op computed exactly for the drawn (data-independent) M;
* whole batch: one Gaussian release of the n_s×ℓ matrix, σ from the analytic Gaussian mechanism
  (Balle & Wang 2018, Thm. 8) at (ε − ε′, δ);
* minibatches are refused (``SOUND_ROWS_REFUSED``): every released row carries its
  label, which voids the amplification by subsampling an accountant would assume;
* labels: k-ary randomized response with budget ε′, applied once per record; rows are released
  in a uniformly random order (never sorted by label). The total guarantee composes the feature
  release with ε′ (basic composition). ``labels="public"`` releases true labels and says so in the
  Guarantee.

``"paper"`` — the published procedure: raw rows, attribute-level sensitivity w = max row norm of
M, σ/w = sqrt(2(ln(1/δ) + ε))/ε (whole batch) or z = σ/w with a Poisson moments accountant
(minibatch), rows sorted by label with a Laplace(1/ε′) class histogram. Its Guarantee is marked
invalid with every reason from the spec.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from typing import Any, Literal

import numpy as np

from dpadapt.configs.dpot import SOUND_ROWS_REFUSED
from dpadapt.privacy import accounting
from dpadapt.privacy.families import dpot as families
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import (
    NoiseSource,
    clip_rows,
    gaussian,
    laplace_mechanism,
    public_gaussian_matrix,
    random_streams,
    randomized_response,
    recorded,
    secret_order,
)
from dpadapt.release import Release
from dpadapt.validation import (
    check_delta,
    check_epsilon,
    check_features,
    check_labels,
    check_positive,
    check_privacy_mode,
)

RowNorm = Literal["normalize", "clip", "none"]
LabelPolicy = Literal["rr", "public"]

METHOD = "dpot"
KIND = "source_projection"
#: Default share of the total ε spent on the labels in sound mode.
DEFAULT_LABEL_SHARE = 0.25
#: ε′ assumed for the paper-mode histogram (the paper does not report it).
PAPER_LABEL_EPSILON = 1.0

#: Paper mode with minibatches: the same failure, recorded as a reason of the (invalid) Guarantee.
PAPER_BATCH_REASON = (
    "minibatches are accounted with amplification by subsampling, but every released row carries its position in "
    "the label-sorted order (its label): a record alone in its class is identified at each appearance, so the "
    "amplification does not hold and the stated ε is not the real one"
)

PAPER_REASONS = (
    (
        "privacy unit is one attribute changed by at most 1 (Kenthapadi et al. 2013), not a record; "
        "source rows are not bounded, so no record-level guarantee holds"
    ),
    "labels are disclosed by the label-sorted row order; the Laplace histogram protects counts only",
    "Laplace(1/ε′) histogram has ℓ1 sensitivity 2 under replace-one, so it is 2ε′-DP, not ε′-DP",
    "ε′ (label budget) is not reported by the paper; an assumed value is used",
)


def default_proj_dim(n_features: int) -> int:
    """ℓ = ⌈k/10⌉ (the paper's choice)."""
    return max(1, math.ceil(n_features / 10))


def draw_projection(
    n_features: int, proj_dim: int, seed: int, kind: str = "jl"
) -> np.ndarray:
    """The public matrix M generated from ``seed`` (public randomness).

    ``kind="jl"`` (the paper): k×ℓ with i.i.d. N(0, 1/ℓ) entries. ``kind="identity"``: M = I_k
    (ℓ = k, ‖M‖op = 1) — no projection; at record level this gives ‖M‖op ≈ 1 + √(k/ℓ) times less
    noise than the JL matrix for the same (ε, δ), since the projection only helps the paper's
    attribute-level sensitivity.
    """
    if kind == "identity":
        if proj_dim != n_features:
            raise ValueError("the identity projection needs proj_dim == n_features")
        return np.eye(n_features)
    if kind != "jl":
        raise ValueError(f"projection must be 'jl' or 'identity', got {kind!r}")
    return public_gaussian_matrix((n_features, proj_dim), 1.0 / math.sqrt(proj_dim), seed)


def projection_digest(M: np.ndarray) -> str:
    """SHA-256 of M's bytes, stored in the Release so the receiver can verify its regenerated M."""
    return hashlib.sha256(
        np.ascontiguousarray(M, dtype=np.float64).tobytes()
    ).hexdigest()


def operator_norm(M: np.ndarray) -> float:
    """‖M‖op = sqrt(λ_max) of the smaller Gram matrix (MᵀM or MMᵀ), rounded up by 1e-9 relative.

    The tiny upward rounding keeps the sensitivity an upper bound despite floating-point error.
    """
    gram = M.T @ M if M.shape[0] >= M.shape[1] else M @ M.T
    top = float(np.linalg.eigvalsh(gram)[-1])
    return math.sqrt(top) * (1.0 + 1e-9)


def preprocess_rows(X: np.ndarray, row_norm: RowNorm, clip_norm: float) -> np.ndarray:
    """Per-record row preprocessing shared by both parties (public rule, public C).

    ``"normalize"`` scales every non-zero row to norm exactly C, ``"clip"`` scales rows above C
    down to C, ``"none"`` keeps raw rows (paper mode; no sensitivity bound).
    """
    X = np.asarray(X, dtype=np.float64)
    if row_norm == "none":
        return X
    if row_norm == "clip":
        return clip_rows(X, clip_norm)
    if row_norm == "normalize":
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        return np.where(
            norms > 0, X * (clip_norm / np.where(norms > 0, norms, 1.0)), 0.0
        )
    raise ValueError(
        f"row_norm must be 'normalize', 'clip' or 'none', got {row_norm!r}"
    )


@dataclasses.dataclass(frozen=True)
class DPOTSourcePlan:
    """Everything about a DPOT source release that is fixed before any noise is drawn.

    Computed from public quantities only (n_s, k, q, ε, δ, the public projection seed), so the
    guarantee can be checked against a budget before :func:`execute_dpot_source` touches the rows.
    """

    guarantee: Guarantee
    privacy_mode: str
    n_samples: int
    n_features: int
    n_classes: int
    proj_dim: int
    projection_seed: int
    projection_sha256: str
    projection_kind: str
    op_norm: float
    max_row_norm: float
    sensitivity: float
    sigma: float
    noise_multiplier: float
    batch_size: int | None
    steps: int
    row_norm: str
    clip_norm: float
    labels: str
    label_epsilon: float
    feature_epsilon: float
    projection: np.ndarray = dataclasses.field(repr=False, compare=False, default=None)

    def public_params(self) -> dict:
        """The parameters the receiver needs (and the report shows)."""
        return {
            "privacy_mode": self.privacy_mode,
            "n_samples": self.n_samples,
            "n_features": self.n_features,
            "n_classes": self.n_classes,
            "proj_dim": self.proj_dim,
            "projection_seed": self.projection_seed,
            "projection_kind": self.projection_kind,
            "projection_sha256": self.projection_sha256,
            "op_norm": self.op_norm,
            "max_row_norm": self.max_row_norm,
            "sensitivity": self.sensitivity,
            "sigma": self.sigma,
            "noise_multiplier": self.noise_multiplier,
            "batch_size": self.batch_size,
            "steps": self.steps,
            "row_norm": self.row_norm,
            "clip_norm": self.clip_norm,
            "labels": self.labels,
            "label_epsilon": self.label_epsilon,
            "feature_epsilon": self.feature_epsilon,
        }


def plan_dpot_source(
    n_samples: int,
    n_features: int,
    n_classes: int,
    epsilon: float,
    delta: float,
    *,
    projection_seed: int,
    proj_dim: int | None = None,
    batch_size: int | None = None,
    noise_multiplier: float = 1.1,
    steps: int | None = None,
    label_epsilon: float | None = None,
    labels: LabelPolicy = "rr",
    row_norm: RowNorm | None = None,
    clip_norm: float = 1.0,
    privacy_mode: str = "sound",
    projection: str = "jl",
) -> DPOTSourcePlan:
    """Calibrate a DPOT source release (σ, steps, guarantee) from public quantities only.

    Parameters
    ----------
    n_samples, n_features, n_classes : int
        n_s (public under replace-one), k and the size q of the (public) label set.
    epsilon, delta : float
        Total budget. Sound mode: features *and* labels; paper mode: the paper's feature ε.
    projection_seed : int
        Seed of the public JL matrix M.
    proj_dim : int, optional
        ℓ (default ⌈k/10⌉).
    batch_size : int, optional
        ``None``: one whole-batch release. Otherwise (paper mode only; refused in sound mode)
        B rows per step, as many steps as allowed.
    noise_multiplier : float
        Paper-mode minibatches only: z = σ/w. The paper uses 1.1. T is then the largest number
        of steps within the budget.
    steps : int, optional
        Paper-mode minibatches only: fix T instead and calibrate z (smallest z with T steps within budget).
    label_epsilon : float, optional
        ε′ for the labels; sound default ``0.25·epsilon`` (part of the total), paper default 1.0
        (added to ε as in the paper's Thm. 3). Ignored with ``labels="public"``.
    labels : {"rr", "public"}
        Sound mode: randomized response, or labels declared public (released in the clear).
    row_norm : {"normalize", "clip", "none"}, optional
        Default ``"normalize"`` in sound mode and ``"none"`` in paper mode.
    clip_norm : float
        Public row norm C.
    privacy_mode : {"sound", "paper"}
    projection : {"jl", "identity"}
        The paper's JL matrix (default) or no projection (M = I, ℓ = k; a sound-mode improvement).
    """
    check_privacy_mode(privacy_mode)
    if privacy_mode == "sound" and batch_size is not None and int(batch_size) != n_samples:
        raise ValueError(SOUND_ROWS_REFUSED)
    epsilon = check_epsilon(epsilon)
    if privacy_mode == "sound" and n_samples > 0 and float(delta) >= 1.0 / n_samples:
        raise ValueError(
            f"delta={float(delta):g} is ≥ 1/n = {1.0 / n_samples:g}: refused in sound mode (use δ ≤ 1/(10 n))"
        )
    delta = check_delta(delta, n_samples)
    if n_samples < 1:
        raise ValueError("the source has no rows")
    if n_classes < 2:
        raise ValueError(f"need at least 2 classes, got {n_classes}")
    proj_dim = default_proj_dim(n_features) if proj_dim is None else int(proj_dim)
    if proj_dim < 1:
        raise ValueError(f"proj_dim must be ≥ 1, got {proj_dim}")
    if batch_size is not None and not 1 <= int(batch_size) <= n_samples:
        raise ValueError(
            f"batch_size must be in [1, n_s={n_samples}], got {batch_size}"
        )
    batch_size = (
        None if batch_size is None or int(batch_size) == n_samples else int(batch_size)
    )
    check_positive(clip_norm, "clip_norm")
    check_positive(noise_multiplier, "noise_multiplier")
    if labels not in ("rr", "public"):
        raise ValueError(f"labels must be 'rr' or 'public', got {labels!r}")
    row_norm = (
        ("normalize" if privacy_mode == "sound" else "none")
        if row_norm is None
        else row_norm
    )
    if privacy_mode == "sound" and row_norm == "none":
        raise ValueError(
            "sound mode needs bounded rows: row_norm must be 'normalize' or 'clip'"
        )

    if projection == "identity":
        proj_dim = n_features
    M = draw_projection(n_features, proj_dim, projection_seed, projection)
    op_norm = operator_norm(M)
    max_row_norm = float(np.linalg.norm(M, axis=1).max())
    common = {
        "privacy_mode": privacy_mode,
        "n_samples": int(n_samples),
        "n_features": int(n_features),
        "n_classes": int(n_classes),
        "proj_dim": proj_dim,
        "projection_seed": int(projection_seed),
        "projection_sha256": projection_digest(M),
        "op_norm": op_norm,
        "max_row_norm": max_row_norm,
        "batch_size": batch_size,
        "row_norm": row_norm,
        "clip_norm": float(clip_norm),
        "projection_kind": projection,
        "projection": M,
    }
    if steps is not None and (batch_size is None or int(steps) < 1):
        raise ValueError("steps is a minibatch option (set batch_size) and must be ≥ 1")
    if privacy_mode == "sound":
        return _plan_sound(epsilon, delta, label_epsilon, labels, common)
    return _plan_paper(epsilon, delta, noise_multiplier, steps, label_epsilon, common)


def _plan_sound(epsilon, delta, label_epsilon, labels, common) -> DPOTSourcePlan:
    C = common["clip_norm"]
    sensitivity = 2.0 * C * common["op_norm"]
    if labels == "public":
        eps_label = 0.0
        label_events: list = []
    else:
        eps_label = (
            DEFAULT_LABEL_SHARE * epsilon
            if label_epsilon is None
            else check_epsilon(label_epsilon, "label_epsilon")
        )
        if eps_label >= epsilon:
            raise ValueError(
                f"label_epsilon={eps_label:g} leaves nothing of epsilon={epsilon:g} for the features"
            )
        label_events = [
            accounting.randomized_response_event(eps_label, common["n_classes"])
        ]
    label_words = (
        "labels declared public and released in the clear (not protected)"
        if labels == "public"
        else f"labels by {common['n_classes']}-ary randomized response (ε′ = {eps_label:.4g}), rows in random order"
    )
    details = {
        "clip_norm": C,
        "row_norm": common["row_norm"],
        "op_norm_M": common["op_norm"],
        "proj_dim": common["proj_dim"],
        "labels": label_words,
        "label_epsilon": eps_label,
    }
    # whole batch only: plan_dpot_source refuses sound minibatches (SOUND_ROWS_REFUSED)
    eps_feat = epsilon - eps_label
    sigma = accounting.analytic_gaussian_sigma(eps_feat, delta, sensitivity)
    z_used = sigma / sensitivity
    events = (accounting.gaussian_event(z_used), *label_events)
    guarantee = families.rows_guarantee(
        epsilon, delta, labels=labels, feature_epsilon=eps_feat, events=events, label_words=label_words,
        sensitivity=sensitivity, details={**details, "sigma": sigma, "feature_epsilon": eps_feat},
    )
    return DPOTSourcePlan(
        guarantee=guarantee,
        sensitivity=sensitivity,
        sigma=float(sigma),
        noise_multiplier=float(z_used),
        steps=1,
        labels=labels,
        label_epsilon=float(eps_label),
        feature_epsilon=float(eps_feat),
        **common,
    )


def _plan_paper(
    epsilon, delta, z, fixed_steps, label_epsilon, common
) -> DPOTSourcePlan:
    n, B = common["n_samples"], common["batch_size"]
    w = common["max_row_norm"]
    eps_label = (
        PAPER_LABEL_EPSILON
        if label_epsilon is None
        else check_epsilon(label_epsilon, "label_epsilon")
    )
    label_event = accounting.laplace_event(1.0 / eps_label)
    reasons = list(PAPER_REASONS) + ([PAPER_BATCH_REASON] if B is not None else [])
    if B is None:
        ratio = accounting.dpot_paper_noise_ratio(epsilon, delta)
        sigma, steps, eps_feat = ratio * w, 1, epsilon
        feat_event = accounting.gaussian_event(ratio)
        relation = "replace_one"
        how = "basic_composition"  # KKMM (the paper's noise ratio) + pure labels, paper Thm. 3
    else:
        q = B / n
        if fixed_steps is None:
            steps = accounting.max_steps(
                lambda T: accounting.poisson_gaussian_event(z, q, T),
                epsilon,
                delta,
                "add_remove",
            )
        else:
            steps = int(fixed_steps)
            z = accounting.calibrate_noise_multiplier(
                lambda z_: accounting.poisson_gaussian_event(z_, q, steps),
                epsilon,
                delta,
                "add_remove",
            )
        sigma = z * w
        if steps == 0:
            raise ValueError(
                f"not even one minibatch step fits in ε={epsilon:g} with σ/w = {z:g}"
            )
        feat_event = accounting.poisson_gaussian_event(z, q, steps)
        eps_feat = accounting.epsilon(feat_event, delta, "add_remove")
        relation = "add_remove"
        how = "basic_composition"  # Poisson RDP (the paper's moments accountant) + pure labels
        reasons.append(
            "batches are fixed-size without replacement but accounted as Poisson subsampling with add/remove "
            "(the paper's moments accountant)"
        )
    guarantee = families.paper_rows_guarantee(
        eps_feat,
        eps_label,
        delta,
        events=(feat_event, label_event),
        relation=relation,
        how=how,
        reasons=reasons,
        sensitivity=w,
        details={
            "w": w,
            "sigma": sigma,
            "noise_ratio": sigma / w,
            "feature_epsilon": eps_feat,
            "label_epsilon": eps_label,
            "steps": steps,
            "batch_size": B,
            "labels": "rows sorted by label + Laplace(1/ε′) class histogram",
        },
    )
    return DPOTSourcePlan(
        guarantee=guarantee,
        sensitivity=w,
        sigma=float(sigma),
        noise_multiplier=float(sigma / w),
        steps=int(steps),
        labels="sorted_histogram",
        label_epsilon=float(eps_label),
        feature_epsilon=float(eps_feat),
        **common,
    )


def release_labels_rr(
    ys: np.ndarray, n_classes: int, label_epsilon: float, noise: NoiseSource
) -> np.ndarray:
    """One k-ary randomized-response draw per record (ε′-DP per label; reused by every batch)."""
    return randomized_response(ys, n_classes, label_epsilon, noise).value


def execute_dpot_source(plan: DPOTSourcePlan, Xs, ys, noise: NoiseSource) -> Release:
    """Draw the noise and build the Release of a planned DPOT source step.

    ``ys`` are indices into the public label set (``0..n_classes-1``; anything else is an error).
    The Release holds ``Z`` (m×ℓ noisy projected rows; m = n_s or T·B) and either ``labels``
    (sound: randomized-response or public labels of the rows, in the rows' secret random order) or,
    in paper mode, ``counts`` (one noisy class histogram of the label-sorted source) and
    ``positions`` (each row's index in the sorted order; whole batch: 0..n_s−1, i.e. sorted rows).
    M is public and regenerated by the receiver from ``projection_seed`` (checked against
    ``projection_sha256``). All noise — the Gaussian on the rows, randomized response, the paper's
    Laplace histogram, the secret row order — is drawn from ``noise`` by :mod:`dpadapt.privacy.mechanisms`.
    """
    Xs = check_features(Xs, "Xs (source)")
    ys = check_labels(ys, Xs.shape[0], "ys (source labels)", classes=range(plan.n_classes))
    if Xs.shape != (plan.n_samples, plan.n_features):
        raise ValueError(
            f"the plan is for a {plan.n_samples}×{plan.n_features} source, got {Xs.shape}"
        )
    if ys.min() < 0 or ys.max() >= plan.n_classes:
        raise ValueError(f"source labels must be indices into the public label set 0..{plan.n_classes - 1}")
    M = (
        plan.projection
        if plan.projection is not None
        else draw_projection(
            plan.n_features, plan.proj_dim, plan.projection_seed, plan.projection_kind
        )
    )
    X = preprocess_rows(Xs, plan.row_norm, plan.clip_norm)
    n = plan.n_samples
    if plan.privacy_mode == "paper":  # Alg. 2 step 1: sort the records by label (the leak of §7.3)
        order = np.argsort(ys, kind="stable")
        X, ys = X[order], ys[order]
    idx = secret_order(n, noise, plan.batch_size, plan.steps)
    arrays: dict[str, np.ndarray] = {}
    if plan.privacy_mode == "sound":
        y_rel = ys if plan.labels == "public" else release_labels_rr(ys, plan.n_classes, plan.label_epsilon, noise)
        arrays["labels"] = y_rel[idx].astype(np.int64)
    else:
        # one Laplace(1/ε′) histogram; every released row carries its position in the sorted order
        block = n if plan.batch_size is None else plan.batch_size
        idx = np.concatenate([np.sort(b) for b in np.split(idx, len(idx) // block)])
        counts = np.bincount(ys, minlength=plan.n_classes).astype(np.float64)
        arrays["positions"] = idx.astype(np.int64)
        arrays["counts"] = laplace_mechanism(counts, 1.0, plan.label_epsilon, noise, party="source").value
    # paper mode (an invalid Guarantee anyway) keeps numpy's sampler: n × ℓ vetted draws cost minutes
    arrays["Z"] = gaussian(X[idx] @ M, sigma=plan.sigma, sensitivity=plan.sensitivity, noise=noise,
                           vetted=plan.privacy_mode == "sound").value
    return Release(
        method=METHOD,
        kind=KIND,
        owner="source",
        arrays=arrays,
        guarantee=plan.guarantee,
        params=plan.public_params(),
    )


def release_dpot_source(
    Xs,
    ys,
    epsilon: float,
    delta: float,
    *,
    classes=None,
    privacy_mode: str = "sound",
    random_state=None,
    reproducible_noise: bool = False,
    **options: Any,
) -> Release:
    """Source party step of DPOT/DPDA (per-row design): plan (guarantee first), then release noisy rows.

    ``classes`` is the public label set, required in sound mode (paper mode falls back to the
    published procedure's ``0..max(y)``); a label outside it is an error. The projection seed is
    public randomness drawn from ``random_state``; the noise comes from a separate
    :class:`~dpadapt.privacy.mechanisms.NoiseSource` (fresh OS entropy unless
    ``reproducible_noise``), so the seed, even when guessed, replays no noise. ``options`` are the
    keyword parameters of :func:`plan_dpot_source` (``proj_dim``, ``batch_size``, ``noise_multiplier``,
    ``steps``, ``label_epsilon``, ``labels``, ``row_norm``, ``clip_norm``, ``projection``); see the
    module docstring for the guarantees.
    """
    from dpadapt.classstats import label_indices

    Xs = check_features(Xs, "Xs (source)")
    ys = check_labels(ys, Xs.shape[0], "ys (source labels)", classes=classes)
    if classes is None:
        if privacy_mode == "sound":
            raise ValueError(
                "classes= must be given in sound mode: the label set is a public parameter "
                "(inferring it from private labels leaks them)"
            )
        classes = tuple(range(int(ys.max()) + 1))
    classes = tuple(np.asarray(classes).ravel().tolist())
    public, noise = random_streams(random_state, reproducible_noise=reproducible_noise)
    plan = plan_dpot_source(
        Xs.shape[0],
        Xs.shape[1],
        len(classes),
        epsilon,
        delta,
        projection_seed=int(public.integers(2**63 - 1)),
        privacy_mode=privacy_mode,
        **options,
    )
    release = execute_dpot_source(plan, Xs, label_indices(ys, classes), noise)
    release.params["classes"] = list(classes)
    release.guarantee = recorded(release.guarantee, noise)
    return release
