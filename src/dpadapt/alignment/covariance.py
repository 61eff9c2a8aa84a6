"""Private second-moment matrices on feature subspaces, and their PSD repair (PRIMA phases 1–2).

Privacy statement (spec 04, soundness notes 1–3). Rows are clipped to ℓ2 norm ≤ 1 (a public,
per-record operation). For a partition S_1..S_m of the features, the released object is the
vector of the upper triangles (diagonal included) of all blocks Ĉ^i = (1/n) X[:, S_i]ᵀ X[:, S_i].
Those entries are a subset of the entries of (1/n) XᵀX, so replacing one row a by b changes the
whole vector by at most ‖aaᵀ − bbᵀ‖_F / n = sqrt(‖a‖⁴ + ‖b‖⁴ − 2(aᵀb)²) / n ≤ √2 / n. One
Gaussian mechanism on that vector (analytic calibration, Balle & Wang 2018, Thm. 8) is therefore
(ε, δ)-DP for *all* m blocks together — no "parallel composition" over feature subspaces is
needed (nor valid: every record is in every subspace). The noise is symmetric: each block's
upper triangle gets i.i.d. noise and is mirrored (Dwork, Talwar, Thakurta, Zhang 2014).

PSD repair (eigenvalue clipping or the published shrinking with bisection) is post-processing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from dpadapt.configs.prima import PSD_REPAIRS
from dpadapt.privacy.families.prima import joint_block_sensitivity
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import NoiseSource, clip_rows, gaussian
from dpadapt.validation import check_delta, check_epsilon, check_positive

Partition = list[np.ndarray]


# --- rows and partitions -----------------------------------------------------------------------


def clip_rows_any(X, max_norm: float = 1.0):
    """Scale rows with ℓ2 norm above ``max_norm`` down to it; dense or CSR (per-record, public bound).

    :func:`dpadapt.privacy.mechanisms.clip_rows`: overflow-free (a finite row whose norm overflows float64
    is clipped, never turned into NaN), a non-finite entry refused."""
    return clip_rows(X, max_norm)


def random_partition(n_features: int, subspace_size: int, rng: np.random.Generator) -> Partition:
    """Data-independent partition of ``range(n_features)`` into ⌈d/p⌉ random subsets of near-equal size.

    Uses only the public dimension and the generator, so releasing it costs no privacy (RSE).
    """
    if n_features < 1:
        raise ValueError("n_features must be ≥ 1")
    if subspace_size < 1:
        raise ValueError(f"subspace_size must be ≥ 1, got {subspace_size}")
    m = math.ceil(n_features / min(subspace_size, n_features))
    perm = rng.permutation(n_features)
    return [np.sort(part) for part in np.array_split(perm, m)]


def full_partition(n_features: int) -> Partition:
    """One block holding every feature (the "Basic" ablation)."""
    return [np.arange(n_features)]


def check_partition(partition: Sequence[np.ndarray], n_features: int) -> Partition:
    """Every feature exactly once, no empty block."""
    parts = [np.asarray(p, dtype=np.int64) for p in partition]
    if not parts or any(p.size == 0 for p in parts):
        raise ValueError("a partition needs at least one block and no empty blocks")
    allidx = np.concatenate(parts)
    if allidx.size != n_features or not np.array_equal(np.sort(allidx), np.arange(n_features)):
        raise ValueError(f"the blocks must cover each of the {n_features} features exactly once")
    return parts


def forward_selection(
    X,
    epsilon: float,
    delta: float,
    rng: np.random.Generator,
    max_subspace_size: int | None = None,
) -> Partition:
    """The published forward selection (paper mode only — it reads the raw private rows).

    Grows each subspace with uniformly drawn remaining features while
    J(S) = R(S)/‖X‖_F² + sqrt(|S|·ln(1/δ))/(n·ε) decreases: the relative column-subset
    reconstruction error (the paper's R is unnormalised, which would make the noise term
    irrelevant; spec 04, soundness note 10) plus the paper's own noise-error term G(S). The
    feature that made J increase is returned to the pool unless the subspace would be empty.
    The partition depends on the private data and is released without noise: NOT
    differentially private.
    """
    dense = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
    n, d = dense.shape
    cap = d if max_subspace_size is None else max_subspace_size
    total = float((dense**2).sum()) or 1.0
    noise_unit = math.log(1.0 / delta) / (n * epsilon) ** 2
    pool = list(rng.permutation(d))
    parts: Partition = []
    while pool:
        chosen: list[int] = []
        Q = np.zeros((n, 0))
        captured = 0.0
        prev = math.inf
        while pool and len(chosen) < cap:
            f = pool.pop()
            col = dense[:, f]
            resid = col - Q @ (Q.T @ col)
            norm = np.linalg.norm(resid)
            gain = 0.0
            q_new = None
            if norm > 1e-10 * max(1.0, np.linalg.norm(col)):
                q_new = resid / norm
                gain = float(((q_new @ dense) ** 2).sum())
            j = (1.0 - (captured + gain) / total) + math.sqrt((len(chosen) + 1) * noise_unit)
            if j > prev and chosen:
                pool.append(f)
                break
            prev = j
            chosen.append(f)
            captured += gain
            if q_new is not None:
                Q = np.column_stack([Q, q_new])
        parts.append(np.sort(np.asarray(chosen, dtype=np.int64)))
    return parts


# --- block second moments ------------------------------------------------------------------


def block_second_moments(X, partition: Partition) -> list[np.ndarray]:
    """Ĉ^i = (1/n) X[:, S_i]ᵀ X[:, S_i] for every block (dense or CSR input)."""
    n = X.shape[0]
    out = []
    for part in partition:
        B = X[:, part]
        if sp.issparse(B):
            out.append(np.asarray((B.T @ B).toarray(), dtype=np.float64) / n)
        else:
            out.append(B.T @ B / n)
    return out


def pack_upper(blocks: Sequence[np.ndarray]) -> np.ndarray:
    """Concatenated upper triangles (diagonal included) of square blocks."""
    return np.concatenate([b[np.triu_indices(b.shape[0])] for b in blocks])


def unpack_upper(vector: np.ndarray, sizes: Sequence[int]) -> list[np.ndarray]:
    """Inverse of :func:`pack_upper`: symmetric blocks of the given sizes."""
    blocks, start = [], 0
    for p in sizes:
        k = p * (p + 1) // 2
        iu = np.triu_indices(p)
        B = np.zeros((p, p))
        B[iu] = vector[start : start + k]
        B = B + np.triu(B, 1).T
        blocks.append(B)
        start += k
    if start != vector.size:
        raise ValueError(f"vector of length {vector.size} does not match block sizes {list(sizes)}")
    return blocks


def release_block_second_moments(
    X,
    partition: Partition,
    sigma: float,
    noise: NoiseSource,
    *,
    row_norm: float = 1.0,
    sensitivity: float | None = None,
    enforce_norm: bool = True,
) -> list[np.ndarray]:
    """Noisy symmetric blocks of (1/n) XᵀX, all released as ONE Gaussian of the plan's σ.

    ``X`` must already be clipped to ``row_norm`` (checked). Replace-one relation, n public,
    Δ = √2·row_norm²/n (module docstring); ``sensitivity`` (from the plan) must equal it. The noise
    is drawn by :func:`dpadapt.privacy.mechanisms.gaussian` from the secret ``noise`` stream.
    ``enforce_norm=False`` (paper mode only) uses the published Δ = ``sensitivity`` without
    enforcing any row bound; its guarantee is marked invalid by the plan.
    """
    n = X.shape[0]
    if enforce_norm:
        _check_clipped(X, row_norm)
        sens = joint_block_sensitivity(n, row_norm, "replace_one")
        if sensitivity is not None and not math.isclose(sensitivity, sens, rel_tol=1e-12):
            raise ValueError("the plan's sensitivity does not match the data's size")
    else:
        sens = float(sensitivity)
    exact = block_second_moments(X, partition)
    out = gaussian(pack_upper(exact), sigma=sigma, sensitivity=sens, noise=noise)
    return unpack_upper(out.value, [len(p) for p in partition])


def noisy_sum_second_moments(
    X, partition: Partition, noise_multiplier: float, noise: NoiseSource, row_norm: float = 1.0
) -> tuple[list[np.ndarray], float]:
    """Blocks of (XᵀX + E)/n with E Gaussian of std ``noise_multiplier``·row_norm² per packed entry.

    For the *source* party of the heads protocol (replace-one, n public as in its DP-SGD, q = B/n; composed
    with DP-SGD by dp-accounting): replacing one row moves the packed blocks of the sum by at most
    ‖aaᵀ − bbᵀ‖_F ≤ √2·row_norm² (:func:`joint_block_sensitivity`), so this is one Gaussian event of multiplier
    ``noise_multiplier``/√2, drawn by :func:`dpadapt.privacy.mechanisms.gaussian`. Returns (noisy blocks,
    per-entry σ on the normalised scale).
    """
    _check_clipped(X, row_norm)
    n = X.shape[0]
    exact = pack_upper(block_second_moments(X, partition))
    sigma = noise_multiplier * row_norm**2 / n
    out = gaussian(exact, sigma=sigma, sensitivity=joint_block_sensitivity(n, row_norm, "replace_one"), noise=noise)
    return unpack_upper(out.value, [len(p) for p in partition]), sigma


def _check_clipped(X, row_norm: float) -> None:
    if sp.issparse(X):
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    else:
        norms = np.linalg.norm(X, axis=1)
    if norms.size and norms.max() > row_norm * (1 + 1e-9):
        raise ValueError(f"rows must be clipped to norm {row_norm} before release (max norm {norms.max():.4g})")


# --- PSD repair (post-processing) -------------------------------------------------------------



def eig_clip(C: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """Frobenius projection onto {A ⪰ floor·I}: clip eigenvalues below ``floor``.

    Non-expansive: for every PSD T (with λ_min(T) ≥ floor), ‖eig_clip(C) − T‖_F ≤ ‖C − T‖_F.
    """
    C = _symmetric(C)
    w, V = np.linalg.eigh(C)
    return (V * np.maximum(w, floor)) @ V.T


def shrink_to_psd(
    C: np.ndarray, target: np.ndarray | None = None, tol: float = 1e-8, max_iter: int = 60
) -> tuple[np.ndarray, float]:
    """The published shrinking: Ω(α) = αΣ + (1−α)C̃ with the smallest α ∈ [0, 1] making Ω PSD.

    Bisection on the concave f(α) = λ_min(Ω(α)), keeping the right end-point (so the result is
    PSD) until the bracket is below ``tol``. Σ defaults to τI with τ = tr(C̃)/p (floored at a
    tiny positive value) reduced if needed so that ‖Σ‖_F < ‖C̃‖_F (spec 04, phase 2).
    Returns (Ω(α*), α*); α* = 0 when C̃ is already PSD.
    """
    C = _symmetric(C)
    p = C.shape[0]
    if np.linalg.eigvalsh(C)[0] >= 0:
        return C, 0.0
    if target is None:
        fro = np.linalg.norm(C)
        tau = max(np.trace(C) / p, 1e-12 * max(fro, 1e-300))
        tau = min(tau, 0.99 * fro / math.sqrt(p))
        target = tau * np.eye(p)
    target = _symmetric(target)
    if np.linalg.eigvalsh(target)[0] < 0:
        raise ValueError("the shrinking target Σ must be PSD")

    def f(a: float) -> float:
        return float(np.linalg.eigvalsh(a * target + (1 - a) * C)[0])

    lo, hi = 0.0, 1.0
    for _ in range(max_iter):
        if hi - lo <= tol:
            break
        mid = 0.5 * (lo + hi)
        if f(mid) >= 0:
            hi = mid
        else:
            lo = mid
    return hi * target + (1 - hi) * C, hi


def psd_repair(C: np.ndarray, method: str = "eig_clip") -> np.ndarray:
    """Repair one noisy block: ``"eig_clip"`` (default), ``"shrink"`` (paper) or ``"none"``."""
    if method == "eig_clip":
        return eig_clip(C)
    if method == "shrink":
        return shrink_to_psd(C)[0]
    if method == "none":
        return _symmetric(C)
    raise ValueError(f"psd_repair must be one of {PSD_REPAIRS}, got {method!r}")


def _symmetric(C: np.ndarray) -> np.ndarray:
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1]:
        raise ValueError(f"expected a square matrix, got shape {C.shape}")
    return 0.5 * (C + C.T)


def noise_spectral_scale(p: int, sigma_entry: float) -> float:
    """≈ expected spectral norm of a p×p symmetric matrix with N(0, σ²) entries (2√p·σ)."""
    return 2.0 * math.sqrt(p) * sigma_entry


__all__ = [
    "PSD_REPAIRS",
    "block_second_moments",
    "check_partition",
    "clip_rows_any",
    "eig_clip",
    "forward_selection",
    "full_partition",
    "joint_block_sensitivity",
    "noise_spectral_scale",
    "noisy_sum_second_moments",
    "pack_upper",
    "psd_repair",
    "random_partition",
    "release_block_second_moments",
    "shrink_to_psd",
    "unpack_upper",
]
