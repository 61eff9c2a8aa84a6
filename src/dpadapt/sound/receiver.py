"""The receiver's step: combine the sources' releases, then post-process them on its own rows (no privacy cost).

:func:`combine` — the statistics of every source that answered the same request add up (sums, counts and
second moments of disjoint row sets; independent Gaussian noises, so σ² adds). Each release is untrusted
input: the request's digest, the label set, its σ against its own Guarantee, finite float64 arrays of the
planned shapes and values the declared mechanism can produce
(:func:`dpadapt.validation.check_plausible_statistics`) are checked before any target row is mapped.

The post-processings (the request names which one, :mod:`dpadapt.sound.design`):

* :func:`prototypes_ot` — the DP class prototypes (directions of the noisy class sums) refined on the
  receiver's rows by entropic optimal transport between its rows and the classes, with the DP class
  proportions as the class marginal (the class-statistics design; DPOT's transport step);
* :func:`discriminant` — Fisher's linear discriminant of the noisy class moments: class means, the pooled
  within-class scatter projected onto the PSD cone and shrunk towards a scaled identity by a ridge λ set
  from public quantities (σ√k: the spectral size of the noise; n/k: the size of the signal), with the DP class
  prior. (Re-estimating the prior on the receiver's rows by EM lost on the development pairs, so it is not
  applied; ``dpadapt score``/``report`` show both sides of a label-shift correction, :mod:`dpadapt.labelshift`.)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from dpadapt.classstats.adapt import normalise_rows, refine_ot
from dpadapt.release import Release, ReleaseError
from dpadapt.sound.request import METHOD, Request
from dpadapt.sound.source import KIND
from dpadapt.sound.spaces import RowMap
from dpadapt.validation import check_declared_sigma, check_plausible_statistics, check_released_size

@dataclasses.dataclass(frozen=True)
class Statistics:
    """The combined statistics: sums (K, k), counts (K,), second moment (k, k) or ``None``, the effective
    noise σ (``sqrt(Σ σ_i²)``), the public number of source rows (``None`` when a source hid it) and the
    releases' guarantees."""

    sums: np.ndarray
    counts: np.ndarray
    second: np.ndarray | None
    sigma: float
    n_public: float | None
    guarantees: tuple

    @property
    def n(self) -> float:
        """The number of source rows: public when every source released it, else the noisy counts' sum (≥ 1)."""
        return float(self.n_public) if self.n_public is not None else max(float(self.counts.sum()), 1.0)


def combine(request: Request, releases: list[Release]) -> Statistics:
    """Add the statistics of every source release made for ``request`` (checked as untrusted input)."""
    stats = [r for r in releases if r.kind == KIND]
    if not stats:
        raise ReleaseError(f"no source statistics among the releases ({[f'{r.method}/{r.kind}' for r in releases]})")
    ids = [r.release_id for r in stats]
    if len(set(ids)) != len(ids):
        raise ReleaseError("the same source release was given twice (its statistics would count twice); refused")
    K, k = len(request.classes), request.k
    shapes = {"sums": (K, k), "counts": (K,), "second": (k, k)}
    total = {name: 0.0 for name in shapes}
    var, n_public = 0.0, 0.0
    guarantees = []
    for r in stats:
        p = r.params
        if r.method != METHOD:
            raise ReleaseError(f"expected a {METHOD}/{KIND} release, got {r.method}/{r.kind}")
        if p.get("request_sha256") != request.digest():
            raise ReleaseError(f"release {r.release_id[:12]} answers another release request than the one given; refused")
        if list(p.get("classes", [])) != list(request.classes):
            raise ReleaseError(f"release {r.release_id[:12]} is for the label set {p.get('classes')}, the request for "
                               f"{list(request.classes)} (names and order must agree)")
        try:  # untrusted input: finite, of the planned shapes, and what the declared mechanism can produce
            sigma = check_declared_sigma(p.get("sigma"), r.guarantee)
            n = check_released_size(p)
            sums, counts, second = check_plausible_statistics(
                r["sums"], r["counts"], sigma=sigma, n=n, second=r.arrays.get("second") if request.statistics == "moments" else None)
        except (KeyError, ValueError) as exc:
            raise ReleaseError(f"class-statistics release {r.release_id[:12]}: {exc}") from None
        if sums.shape != shapes["sums"] or (request.statistics == "moments" and second is None):
            raise ReleaseError(f"class-statistics release {r.release_id[:12]}: its statistics do not have the requested "
                               f"shape ({request.statistics} of {K} classes in k = {k}); refused")
        arrays = {"sums": sums, "counts": counts, **({"second": second} if second is not None else {})}
        for name, a in arrays.items():
            total[name] = total[name] + a
        var += sigma**2
        n_public = None if (n is None or n_public is None) else n_public + float(n)
        guarantees.append(r.guarantee)
    second = total["second"] if request.statistics == "moments" else None
    return Statistics(total["sums"], total["counts"], second, math.sqrt(var), n_public, tuple(guarantees))


@dataclasses.dataclass(frozen=True)
class CandidateTable:
    """The combined (K, M) tables of counts by (label, nearest candidate) of the selection design, their public
    Laplace scale b_eff = sqrt(Σ b_i²) and the releases' guarantees."""

    counts: np.ndarray
    scale: float
    guarantees: tuple


def combine_candidates(request: Request, releases: list[Release]) -> CandidateTable:
    """Add the candidate tables of every source release made for ``request`` (checked as untrusted input: the digest,
    the label set, the declared Laplace scale against its Guarantee, a finite (K, M) table the mechanism can produce)."""
    stats = [r for r in releases if r.kind == KIND]
    if not stats or len({r.release_id for r in stats}) != len(stats):
        raise ReleaseError("the selection design needs each source's candidate table once")
    shape = (len(request.classes), request.num_candidates)
    total, var, guarantees = np.zeros(shape), 0.0, []
    for r in stats:
        p = r.params
        if (r.method != METHOD or p.get("request_sha256") != request.digest()
                or list(p.get("classes", [])) != list(request.classes)):
            raise ReleaseError(f"release {r.release_id[:12]} does not answer this request (digest or label set); refused")
        try:
            scale = float(p.get("scale"))
            expected = 0.0 if math.isinf(r.guarantee.epsilon) else float(r.guarantee.details.get("scale", math.nan))
            if not scale == expected:
                raise ValueError(f"its declared Laplace scale {scale!r} is not its Guarantee's {expected!r}")
            counts = np.asarray(r["candidate_counts"])
            if counts.shape != shape or counts.dtype != np.float64 or not np.all(np.isfinite(counts)):
                raise ValueError(f"its table must be finite float64 of shape {shape}")
            n = check_released_size(p)
            if counts.min() < -60.0 * scale or (n is not None and counts.max() > n + 60.0 * scale):
                raise ValueError("its counts are beyond what the declared mechanism produces (Laplace tails e^-60)")
        except (KeyError, TypeError, ValueError) as exc:
            raise ReleaseError(f"candidate-table release {r.release_id[:12]}: {exc}; refused") from None
        total, var = total + counts, var + scale**2
        guarantees.append(r.guarantee)
    return CandidateTable(total, math.sqrt(var), tuple(guarantees))


def selection(table: CandidateTable, candidates: np.ndarray, Z: np.ndarray,
              readout: str = "matching") -> tuple[np.ndarray, np.ndarray, dict]:
    """(W, b, details) of the selection design, read off the noisy (K, M) table (post-processing only).

    Every readout starts from classes matched one-to-one to candidates by the largest total noisy count (the
    assignment problem on the released table, Kuhn 1955; with one class it is report-noisy-max), then:

    * ``"matching"`` — each class's prototype is its matched candidate (the design of requests made before the
      readout was stated);
    * ``"weighted"`` — each class's prototype is the direction of Σ_j max(n̂_yj, 0)·c_j (its matched candidate
      when every count is ≤ 0).

    κ is the vMF concentration of the receiver's rows around their nearest centre, the prior the noisy row sums."""
    from scipy.optimize import linear_sum_assignment

    counts = table.counts
    K, M = counts.shape
    C = normalise_rows(np.asarray(candidates, dtype=np.float64))
    _, chosen = linear_sum_assignment(-counts)
    if readout == "matching":
        centers = C[chosen]
    elif readout == "weighted":
        sums = np.maximum(counts, 0.0) @ C
        empty = np.linalg.norm(sums, axis=1) <= 0
        sums[empty] = C[chosen[empty]]
        centers = normalise_rows(sums)
    else:
        raise ValueError(f"readout must be one of ('matching', 'weighted'), got {readout!r}")
    kappa = vmf_concentration(Z, np.argmax(Z @ centers.T, axis=1), centers) if Z.shape[0] else 1.0
    prior = class_prior(counts.sum(axis=1))
    details = {"selected": chosen.tolist(), "concentration": kappa, "readout": readout,
               "candidates_used": int(centers.shape[0])}
    return kappa * centers, np.log(prior), details


# --- post-processings ---------------------------------------------------------------------------------


def _psd_eigh(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    vals, vecs = np.linalg.eigh((A + A.T) / 2.0)
    return np.clip(vals, 0.0, None), vecs


def class_prior(counts: np.ndarray) -> np.ndarray:
    """The DP class proportions (counts floored at 1: a declared class is assumed present)."""
    c = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    return c / c.sum()


def discriminant(st: Statistics, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) of the shrunk LDA of the noisy moments: scores ``Z @ W.T + b`` are log-posteriors up to a constant.

    Σ = m/(λ + m)·(S_W + λI)/n with S_W the PSD part of the within-class scatter and m its mean eigenvalue:
    shrinking towards m·I keeps the scale, so that as the noise grows the rule tends to the Gaussian
    nearest-class-mean rule with the DP class prior.
    """
    c = np.maximum(st.counts, 1.0)
    means = st.sums / c[:, None]
    vals, vecs = _psd_eigh(st.second - (st.sums.T / c) @ st.sums)
    n = float(c.sum())
    k = vals.size
    m = max(float(vals.mean()), 1e-6 * n / k)  # a noise-emptied scatter keeps a public scale (n/k: unit rows)
    inv = (vecs / ((vals + lam) / n * (m / (lam + m)))) @ vecs.T
    W = means @ inv
    return W, -0.5 * np.sum(W * means, axis=1) + np.log(c / n)


def vmf_concentration(Z: np.ndarray, labels: np.ndarray, centers: np.ndarray) -> float:
    """A von Mises–Fisher concentration κ of unit rows around their centers (Banerjee et al., JMLR 2005):
    κ ≈ R̄(k − R̄²)/(1 − R̄²), R̄ the mean cosine of a row to its center."""
    k = Z.shape[1]
    rbar = float(np.clip(np.mean(np.sum(Z * centers[labels], axis=1)), 1e-6, 1 - 1e-6)) if Z.shape[0] else 0.5
    return rbar * (k - rbar**2) / (1.0 - rbar**2)


def prototypes_ot(st: Statistics, Z: np.ndarray, *, reg: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """(W, b): the DP prototypes refined by entropic OT on the receiver's rows ``Z`` (the working space).

    Each row goes to the class it sends most mass to under the plan between the rows (uniform) and the
    classes (the DP proportions) with cost 1 − cos; a class's center becomes the direction of its rows' sum
    (a class no row went to keeps its DP prototype). Scores are κ·cos(z, center) + log prior, κ a von
    Mises–Fisher concentration of the rows around their centers, so that softmax gives probabilities.
    """
    centers = normalise_rows(st.sums)
    prior = class_prior(st.counts)
    if Z.shape[0]:
        hard = np.argmax(refine_ot(Z, centers, prior, reg=reg), axis=1)
        sums = np.zeros_like(centers)
        np.add.at(sums, hard, Z)
        filled = np.linalg.norm(sums, axis=1) > 0
        centers[filled] = normalise_rows(sums[filled])
        kappa = vmf_concentration(Z, hard, centers)
    else:
        kappa = 1.0
    return kappa * centers, np.log(prior)


@dataclasses.dataclass
class SoundModel:
    """A linear classifier on raw rows: the request's row map, then scores ``Z @ W.T + b`` (log-posteriors
    up to a constant). ``classes``: the public label set; ``post``: the post-processing that made (W, b);
    ``details``: its stated quantities (prior estimates, λ, κ) for the report. Saved by :mod:`dpadapt.modelio`."""

    classes: np.ndarray
    log1p: bool
    mean: np.ndarray | None
    components: np.ndarray | None
    W: np.ndarray
    b: np.ndarray
    post: str
    details: dict = dataclasses.field(default_factory=dict)

    @property
    def classes_(self) -> np.ndarray:
        return self.classes

    def row_map(self) -> RowMap:
        return RowMap(self.log1p, self.mean, self.components)

    def decision_function(self, X) -> np.ndarray:
        from dpadapt.validation import check_features

        X = check_features(X, allow_sparse=True)
        d = self.W.shape[1] if self.components is None else self.components.shape[0]
        if X.shape[1] != d:
            raise ValueError(f"X has {X.shape[1]} features; the model was made for {d}")
        return self.scores(self.row_map()(X))

    def scores(self, Z: np.ndarray) -> np.ndarray:
        """The class scores of mapped rows ``Z`` (log-posteriors at the source prior, up to a constant)."""
        return np.asarray(Z @ self.W.T + self.b)

    def prior_shift(self) -> np.ndarray:
        """log π_t − log π_s: the target's estimated prior against the DP source prior (zeros when not estimated, or
        when ``details["prior_shift"]`` is false: the probabilities already average to the estimate,
        :func:`dpadapt.sound.scores.adapt`)."""
        d = self.details
        if d.get("target_prior") is None or d.get("source_prior") is None or d.get("prior_shift") is False:
            return np.zeros(self.b.shape)
        return np.log(np.asarray(d["target_prior"], dtype=np.float64)) - np.log(np.asarray(d["source_prior"], dtype=np.float64))

    def at_target(self, s: np.ndarray) -> np.ndarray:
        """Scores ``s`` (as :meth:`scores`) on the target: on the target's scale where ``details["target_scale"]``
        was applied (:mod:`dpadapt.sound.target_scale`), then shifted to the target's estimated prior."""
        from dpadapt.sound import target_scale

        return target_scale.on_target(self.details, s) + self.prior_shift()

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities at the target's estimated prior (``details["target_prior"]``, :mod:`dpadapt.sound.calibrate`)."""
        from scipy.special import logsumexp

        s = self.at_target(self.decision_function(X))
        return np.exp(s - logsumexp(s, axis=1, keepdims=True))

    def predict(self, X) -> np.ndarray:
        """The most probable class at the target's estimated prior (the Bayes rule for accuracy on the target)."""
        return self.classes[np.argmax(self.at_target(self.decision_function(X)), axis=1)]

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))
