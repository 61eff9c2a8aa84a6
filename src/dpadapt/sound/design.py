"""The receiver designs the release from its own rows and the public noise level (no privacy cost).

Everything here reads only the receiver's rows and public facts — the label set (K classes), each source's
size n_i and (ε_i, δ_i) — so it costs nothing: the receiver is not protected, and the request it produces is a
fixed public map for the sources. The rule and its derivation are written in
``benchmarks/sound/design_rule.md``; the constants below were fixed on the development pairs only.

1. **The map.** ``log1p`` exactly when the receiver's rows are non-negative whole numbers (counts: bags of
   words or of visual words); a declared ``feature_type`` that disagrees with the rows is used, with a warning.
2. **The design.** The receiver asks whether its rows form K clusters: k-means (K clusters) on its rows in
   its top-2K principal directions leaves a within-cluster scatter ``W``; the same on a Gaussian with the
   same covariance leaves ``W_ref``. When ``W / W_ref < CLUSTER_RATIO`` (a gap statistic, Tibshirani, Walther
   & Hastie 2001) classes are likely clusters on its side and the ``"prototypes"`` design refines the DP class
   prototypes on its rows (sums and counts only, Δ = 2); otherwise the ``"discriminant"`` design asks for the
   pooled second moment too (Δ = √6) and forms Fisher's discriminant of the noisy moments. Sources with fewer
   than :data:`MEAN_ONLY_ROWS_PER_CLASS` rows a class (n/K) get the prototypes whatever the ratio: a second
   moment cannot be estimated from a handful of rows. This choice does not depend on ε (the selection design of
   item 4 does, through the public noise scale, and switches off once as ε grows).
3. **The working space.** The receiver's top-k principal directions, k the number of directions whose signal
   stands above BOTH errors of the source's statistics: the release noise σ_eff (σ_eff² = Σ σ_i²) and the
   sampling error of class means and second moments on n = Σ n_i rows (λ_j the receiver's spectrum of mapped
   rows, E_k = λ_1 + … + λ_k, s_k = λ_k / E_k the share of a re-normalised row along the k-th direction):

   * prototypes: a coordinate of a class mean along direction k carries the release noise σ_eff·K/n and the
     sampling error √(s_k·K/n) (n/K rows whose spread there is at most s_k), against the row's spread s_k:
     (σ_eff K / n)² + s_k·K/n ≤ γ_s·s_k; at least K directions (K class means span K − 1);
   * discriminant: in the coordinates whitened by the true second moment, the noise on the k × k moment has
     spectral norm ≈ 2σ_eff√k / (n s_k) at the k-th direction (Bai–Yin) and the sampling error of n rows
     ≈ 2√(k/n) (the Marchenko–Pastur edge); a direction is resolved when their sum stays below γ_m (Weyl):
     2√k·(σ_eff / (n s_k) + 1/√n) ≤ γ_m.

   Both left sides grow with k and with σ_eff, so k is the largest k that passes; a smaller σ_eff (a larger ε,
   more rows) never gives a smaller k, and as ε → ∞ the rule tends to its value at σ_eff = 0 — the one used
   without noise, where the sampling term alone bounds k (at most γ_m²·n/4 directions): the noise-free model is
   the limit of the private ones, so monotonicity holds up to and including ε = None by construction.
   Derivation: ``benchmarks/sound/design_rule.md``.
4. **The selection design** (``"selection"``, issue 37; cf. DPPL-Public, Wahdany et al., AAAI 2025): the receiver
   declares public M = :data:`CANDIDATES_PER_CLASS`·K candidates (two a class) — k-means centres of its own rows in its
   noise-free prototypes basis (σ = 0 in the rule above: the release noise does not act on the basis), never a raw row —
   and the sources release the Laplace-noised (K, M) table of counts of their rows by (label, nearest candidate) (ℓ1
   sensitivity 2 replace-one, 1 add/remove, whatever n, d and M: :func:`dpadapt.privacy.mechanisms.release_candidate_histogram`).
   The receiver reads the noisy table (post-processing, :data:`SELECTION_READOUT`): each class's prototype is the
   direction of its candidates weighted by its noisy counts floored at 0 (``"weighted"``); the one-to-one matching of
   classes to candidates (report-noisy-max read class by class; the design of requests that state no readout) is the
   other readout. ``design="auto"`` takes it for tiny sources (n/K below :data:`MEAN_ONLY_ROWS_PER_CLASS`) while
   n/(K·b_eff) < :data:`SELECTION_THRESHOLD` (b_eff the table's public noise scale; ``None``: never), by the rule
   written in ``benchmarks/sound/README.md``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from dpadapt.classstats.adapt import fit_basis
from dpadapt.privacy import accounting
from dpadapt.privacy.mechanisms import (CANDIDATE_HISTOGRAM_SENSITIVITY, CLASS_MOMENT_SENSITIVITY, CLASS_STATISTICS_SENSITIVITY,
                                      public_gaussian_matrix)
from dpadapt.sound.request import Request, SourceFacts
from dpadapt.sound.spaces import RowMap
from dpadapt.stream.dask_engine import on_cluster
from dpadapt.validation import issparse

DESIGNS = ("prototypes", "discriminant", "selection")
#: Below this within-cluster scatter ratio (data / Gaussian reference) the receiver's rows are clusters.
CLUSTER_RATIO = 0.6
#: γ_s and γ_m of the rules above, chosen on the development pairs by ``benchmarks/sound/design_rule.md``.
GAMMA_PROTOTYPES = 1.0
GAMMA_DISCRIMINANT = 2.0
#: The discriminant's public ridge λ = a·σ√k + f·n/k (σ√k: the noise's spectral size; n/k: a row's share of the
#: signal); a fixed a priori, f chosen with the γ's.
RIDGE_SCALE = 2.0
RIDGE_FLOOR = 1.0
#: The prototypes' floor: at least this many directions per class (a low fixed k for tiny sources).
DIRECTIONS_PER_CLASS = 1
#: Below this many source rows per class (n/K, public) the design is the prototypes whatever the gap ratio: sums
#: and counts only (Δ = 2 rather than √6), no second moment to estimate from a handful of rows. It reads n and K
#: only, never ε, so the design stays the same at every ε (the mean-only design for tiny sources).
MEAN_ONLY_ROWS_PER_CLASS = 50
#: The finish for plenty of data (:func:`finishes`): the discriminant takes the ridge of both errors
#: (:func:`sampling_ridge`) when the sources hold at least FINISH_ROWS_PER_CLASS rows a class (n/K, fixed a priori) and
#: n/(K·σ_eff) ≥ FINISH_THRESHOLD (``None``: never); the threshold is the lowest n/(K·σ_eff) of the large development
#: cells, chosen by the rule of ``benchmarks/sound/README.md``.
FINISH_ROWS_PER_CLASS = 500
FINISH_THRESHOLD: float | None = 94.7
#: The selection design's candidates per class (M = CANDIDATES_PER_CLASS·K) and how the receiver reads the noisy table
#: (:data:`READOUTS`, :func:`dpadapt.sound.receiver.selection`): two candidates a class, each class's prototype the
#: candidates weighted by its noisy counts, chosen with :data:`SELECTION_THRESHOLD` on the tiny development pairs by
#: the rule of ``benchmarks/sound/README.md`` (issue 37, item 2, second round; ``results/issue37/candidates/choice.txt``).
CANDIDATES_PER_CLASS = 2
READOUTS = ("matching", "weighted")
SELECTION_READOUT = "weighted"
#: ``design="auto"`` takes the selection design for tiny sources while n/(K·b_eff) is below this (``None``: never):
#: twice the largest q of the tiny development cells (62.8: ε = 8 on 157 rows), i.e. at every private ε there, chosen
#: jointly with the readout by the same rule.
SELECTION_THRESHOLD: float | None = 125.6
#: The largest basis a request asks for (with or without noise).
MAX_BASIS = 300
#: On a Dask cluster, the gap statistic's k-means runs on at most this many of the receiver's rows (public-seeded).
GAP_SAMPLE = 200_000
#: The public seed of the receiver's own randomness here (k-means starts, the Gaussian reference).
SEED = 20261126


class FeatureTypeWarning(UserWarning):
    """The declared feature type disagrees with what the receiver's rows look like."""


def is_counts(X) -> bool:
    """Whether every value is a non-negative whole number (counts)."""
    v = X.data if issparse(X) else np.asarray(X)
    return bool(v.size == 0 or (np.all(v >= 0) and np.all(v == np.floor(v))))


def choose_log1p(Xt, feature_type: str = "auto", *, counts: bool | None = None) -> bool:
    """``log1p`` for counts: read off the receiver's rows (``"auto"``), or the declaration (warned on disagreement);
    ``counts``: :func:`is_counts` of the rows when it was computed elsewhere (on a Dask cluster)."""
    counts = is_counts(Xt) if counts is None else bool(counts)
    if feature_type == "auto":
        return counts
    declared = feature_type == "counts"
    if declared != counts:
        warnings.warn(f"feature_type={feature_type!r} was declared, but your rows {'are' if counts else 'are not'} "
                      f"non-negative whole numbers (counts); the map uses {'log1p' if declared else 'no log1p'} as declared "
                      "(feature_type='auto' reads it from the rows)", FeatureTypeWarning, stacklevel=3)
    return declared


def cluster_ratio(Z: np.ndarray, K: int, random_state: int = SEED) -> float:
    """Within-cluster scatter of k-means (K clusters) on ``Z`` over that of a Gaussian with Z's covariance."""
    from sklearn.cluster import KMeans

    Zc = Z - Z.mean(axis=0)
    if Z.shape[0] <= K:
        return 1.0
    data = KMeans(K, n_init=5, random_state=random_state).fit(Zc).inertia_
    vals, vecs = np.linalg.eigh(np.cov(Zc, rowvar=False))
    ref = public_gaussian_matrix(Zc.shape, 1.0, random_state) @ (vecs * np.sqrt(np.clip(vals, 0.0, None))).T
    reference = KMeans(K, n_init=5, random_state=random_state).fit(ref).inertia_
    return float(data / reference) if reference > 0 else 1.0


def effective_noise(sources: tuple[SourceFacts, ...], statistics: str) -> float:
    """σ_eff = sqrt(Σ σ_i²) of the sources' releases (0 when none is private)."""
    sens = (CLASS_MOMENT_SENSITIVITY if statistics == "moments" else CLASS_STATISTICS_SENSITIVITY)
    var = 0.0
    for s in sources:
        if s.epsilon is not None:
            var += accounting.analytic_gaussian_sigma(s.epsilon, s.delta, sens[s.relation]) ** 2
    return math.sqrt(var)


def selection_noise(sources: tuple[SourceFacts, ...]) -> float:
    """b_eff = sqrt(Σ b_i²) of the sources' Laplace tables, b_i = Δ₁/ε_i (0 when none is private): a public scale."""
    var = 0.0
    for s in sources:
        if s.epsilon is not None:
            var += (CANDIDATE_HISTOGRAM_SENSITIVITY[s.relation] / s.epsilon) ** 2
    return math.sqrt(var)


def selects(n: float, K: int, scale: float) -> bool:
    """Whether ``design="auto"`` takes the selection design: tiny sources (n/K < MEAN_ONLY_ROWS_PER_CLASS) and
    n/(K·b_eff) < SELECTION_THRESHOLD — public n, K and noise scale only, never ε = None (b_eff = 0)."""
    if SELECTION_THRESHOLD is None or n / K >= MEAN_ONLY_ROWS_PER_CLASS or scale == 0:
        return False
    return n / (K * scale) < SELECTION_THRESHOLD


def candidates(Z: np.ndarray, M: int, random_state: int = SEED) -> np.ndarray:
    """M public candidates: k-means centres of the receiver's rows ``Z`` (public seed), on the unit sphere."""
    from sklearn.cluster import KMeans

    from dpadapt.stream.rows import normalise_rows

    M = min(M, Z.shape[0])
    return normalise_rows(KMeans(M, n_init=10, random_state=random_state).fit(Z).cluster_centers_)


def discriminant_ridge(sigma: float, n: float, k: int) -> float:
    """The public ridge λ = a·σ√k + f·n/k of the discriminant (module constants; public σ, n and k only)."""
    return float(RIDGE_SCALE * sigma * math.sqrt(k) + RIDGE_FLOOR * max(n, 1.0) / k)


def sampling_ridge(sigma: float, n: float, k: int) -> float:
    """The discriminant's ridge of both errors, λ = a·σ√k + 2√(n/k): the release noise's spectral size (as in
    :func:`discriminant_ridge`) and the Marchenko–Pastur size 2√(k/n)·n·m of the sampling error of the k × k scatter
    of n rows, m ≤ 1/k the mean eigenvalue of unit rows' covariance (public σ, n and k only)."""
    return float(RIDGE_SCALE * sigma * math.sqrt(k) + 2.0 * math.sqrt(max(n, 1.0) / k))


def finishes(design: str, n: float, K: int, sigma: float) -> bool:
    """Whether the discriminant takes the ridge of both errors (:func:`sampling_ridge`): public n, K and σ_eff only
    (the same for neighbouring datasets), and monotone in ε (σ_eff falls as ε grows; σ_eff = 0 without noise)."""
    if FINISH_THRESHOLD is None or design != "discriminant" or n / K < FINISH_ROWS_PER_CLASS:
        return False
    return sigma == 0 or n / (K * sigma) >= FINISH_THRESHOLD


def basis_size(spectrum: np.ndarray, *, design: str, sigma: float, n: float, K: int) -> int:
    """The largest k that passes the design's rule for the release noise ``sigma`` and the sampling error of
    ``n`` rows (module docstring), at least K for the prototypes; finite at ``sigma = 0``."""
    lam = np.asarray(spectrum, dtype=np.float64)
    ks = np.arange(1, lam.size + 1)
    share = np.maximum(lam / np.maximum(np.cumsum(lam), np.finfo(float).tiny), np.finfo(float).tiny)
    n = max(float(n), 1.0)
    if design == "prototypes":
        ok = (sigma * K / n) ** 2 + share * K / n <= GAMMA_PROTOTYPES * share
        floor = DIRECTIONS_PER_CLASS * K
    else:
        ok = 2.0 * np.sqrt(ks) * (sigma / (n * share) + 1.0 / math.sqrt(n)) <= GAMMA_DISCRIMINANT
        floor = 1
    passed = ks[ok & (np.cumsum(~ok) == 0)]  # the prefix that passes (both sides are monotone in k)
    k = int(passed.max()) if passed.size else 1
    return int(min(max(k, floor), lam.size))


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the receiver knows before the release: the public label set and the sources' facts."""

    classes: tuple
    sources: tuple[SourceFacts, ...]

    @property
    def n(self) -> float:
        return float(sum(s.n_source for s in self.sources))

    @property
    def private(self) -> bool:
        return any(s.epsilon is not None for s in self.sources)


def design(Xt, facts: Facts, *, feature_type: str = "auto", kind: str = "auto", client=None,
           label_column: str | None = "y", selection: bool = True) -> Request:
    """The receiver's request for ``facts`` from its rows ``Xt`` (dense or sparse, or on a Dask cluster: a
    ``dask.array``, a ``dask.dataframe`` or a Parquet dataset, whose ``label_column`` is not a feature,
    :func:`_summary_on_cluster`); ``kind`` fixes the post-processing (:data:`DESIGNS`) instead of the gap
    statistic (``"auto"``); ``selection=False`` keeps ``"auto"`` off the selection design (a second, Gaussian release
    will follow, whose exact budget split assumes a Gaussian first release)."""
    K = len(facts.classes)
    summarise = _summary_on_cluster if on_cluster(Xt) else _summary
    log1p, d, mean, components, spectrum, Z = summarise(Xt, K, feature_type, client=client, label_column=label_column)
    ratio = cluster_ratio(Z, K)
    if kind == "auto":
        tiny = facts.n / K < MEAN_ONLY_ROWS_PER_CLASS
        kind = "prototypes" if ratio < CLUSTER_RATIO or tiny else "discriminant"
        if selection and selects(facts.n, K, selection_noise(facts.sources)):
            kind = "selection"
    elif kind not in DESIGNS:
        raise ValueError(f"design must be 'auto' or one of {DESIGNS}, got {kind!r}")
    if kind == "selection":
        return _selection(Xt, facts, log1p, d, mean, components, spectrum, ratio)
    statistics = "sums" if kind == "prototypes" else "moments"
    sigma = effective_noise(facts.sources, statistics)
    quantities = {"design": kind, "cluster_ratio": ratio, "sigma": sigma, "n": facts.n, "K": K, "log1p": log1p,
                  "spectrum_head": spectrum[:10].tolist()}
    k = basis_size(spectrum, design=kind, sigma=sigma, n=facts.n, K=K)
    return Request(facts.classes, d, log1p, statistics, facts.sources, mean=mean, components=components[:, :k].copy(),
                   design={**quantities, "k_rule": k})


def _selection(Xt, facts: Facts, log1p: bool, d: int, mean, components, spectrum, ratio: float) -> Request:
    """The selection design's request: the noise-free prototypes basis and M k-means centres of the receiver's rows."""
    if on_cluster(Xt):
        raise ValueError("the selection design reads the receiver's rows in memory (its k-means candidates)")
    K = len(facts.classes)
    k = basis_size(spectrum, design="prototypes", sigma=0.0, n=facts.n, K=K)
    basis = components[:, :k].copy()
    C = candidates(RowMap(log1p, mean, basis)(Xt), CANDIDATES_PER_CLASS * K)
    if C.shape[0] < K:
        raise ValueError(f"the selection design needs at least {K} receiver rows (one candidate a class)")
    scale = selection_noise(facts.sources)
    quantities = {"design": "selection", "cluster_ratio": ratio, "sigma": scale, "n": facts.n, "K": K, "log1p": log1p,
                  "spectrum_head": spectrum[:10].tolist(), "k_rule": k, "candidates": int(C.shape[0]),
                  "readout": SELECTION_READOUT}
    return Request(facts.classes, d, log1p, "candidates", facts.sources, mean=mean, components=basis, design=quantities,
                   candidates=C)


def _top(n_t: int, d: int) -> int:
    top = min(MAX_BASIS, n_t - 1, d)
    if top < 1:
        raise ValueError("the receiver needs at least two rows to design a release")
    return top


def _summary(Xt, K: int, feature_type: str, **_) -> tuple:
    """(log1p, d, mean, top directions, the spectrum along them, Z) of in-memory rows: Z the rows in the top 2K
    directions (the gap statistic's input)."""
    log1p = choose_log1p(Xt, feature_type)
    M = RowMap(log1p).mapped(Xt)
    mean, components, spectrum = _spectrum(M, _top(*M.shape))
    kc = min(2 * K, components.shape[1])
    return log1p, M.shape[1], mean, components, spectrum, RowMap(False, mean, components[:, :kc])(M)


def _summary_on_cluster(Xt, K: int, feature_type: str, *, client=None, label_column: str | None = "y") -> tuple:
    """:func:`_summary` of a Dask collection, on the workers (:mod:`dpadapt.stream.dask_basis`): the map detection
    (one pass), the basis by Dask's randomized SVD, and Z for the gap statistic on at most :data:`GAP_SAMPLE` rows
    at public-seeded positions (all of them when there are no more: then equal to the in-memory Z)."""
    from dpadapt.stream import dask_basis

    X = dask_basis.feature_rows(Xt, label_column)
    log1p = choose_log1p(None, feature_type, counts=dask_basis.is_counts(X, client=client))
    M = dask_basis.mapped(X, RowMap(log1p).mapped)
    mean, components = dask_basis.principal_basis(M, _top(*M.shape), seed=SEED, client=client)
    kc = min(2 * K, components.shape[1])
    spectrum, Z = dask_basis.spectrum_and_sample(M, mean, components, RowMap(False, mean, components[:, :kc]), kc,
                                                 size=GAP_SAMPLE, seed=SEED, client=client)
    return log1p, int(X.shape[1]), mean, components, spectrum, Z


def _spectrum(M, top: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, top principal directions (d × top) and the variances λ_j of the mapped rows along them."""
    mean, components = fit_basis(M, top)
    P = np.asarray(M @ components) - mean @ components
    return mean, components, np.einsum("ij,ij->j", P, P) / M.shape[0]
