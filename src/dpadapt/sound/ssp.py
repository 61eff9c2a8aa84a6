"""The receiver's LDA from released class moments (sufficient-statistics perturbation; post-processing).

From noisy per-class sums S_c, counts c_c and the pooled second moment M = Σxxᵀ of the source's rows
(:func:`dpadapt.privacy.mechanisms.class_moment_statistics`), the receiver forms the class means
μ_c = S_c / c_c, the within-class scatter W = M − Σ_c S_c S_cᵀ / c_c (projected onto the PSD cone:
noise can make it indefinite), and the shared covariance as a shrinkage towards the scaled identity,
Σ = [(1 − α)W + α·m·I] / n with m = tr(W)/k and α = λ / (λ + m), i.e. Σ = m/(λ + m)·(W + λI)/n. The
ridge λ is set from PUBLIC facts only: λ = ``ridge_scale``·σ·√k + ``ridge_floor``·n/k (σ√k is the
scale of the noise's spectral norm, Wigner; n/k the average eigenvalue of M for unit rows). Shrinking
towards m·I rather than adding λI keeps the covariance's scale, so that as the noise grows the
classifier tends to the Gaussian nearest-class-mean rule with its class prior (not to "always the
largest class"). The classifier is Fisher's LDA, score_c(x) = xᵀΣ⁻¹μ_c − ½μ_cᵀΣ⁻¹μ_c + log π_c.

The same release also gives the ridge (least-squares) classifier on the class indicators, score(x) =
xᵀ(M + λI)⁻¹Sᵀ with M's PSD part (:func:`ridge_from_moments`; selection round 3). Nothing here touches
private data.
"""

from __future__ import annotations

import numpy as np


def ridge(sigma: float, n: float, k: int, *, ridge_scale: float, ridge_floor: float) -> float:
    """The public ridge λ = ridge_scale·σ·√k + ridge_floor·n/k (n: the public source size)."""
    return float(ridge_scale * sigma * np.sqrt(k) + ridge_floor * max(n, 1.0) / k)


def _psd_eigh(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of the symmetric part of ``A``, negative eigenvalues (noise) set to 0."""
    vals, vecs = np.linalg.eigh((A + A.T) / 2.0)
    return np.clip(vals, 0.0, None), vecs


def within_spectrum(sums: np.ndarray, counts: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Class means, clipped counts and the eigen-decomposition (PSD part) of the within-class scatter."""
    sums = np.asarray(sums, dtype=np.float64)
    c = np.maximum(np.asarray(counts, dtype=np.float64), 1.0)
    return sums / c[:, None], c, *_psd_eigh(np.asarray(second, dtype=np.float64) - (sums.T / c) @ sums)


def lda_from_spectrum(means: np.ndarray, c: np.ndarray, vals: np.ndarray, vecs: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) of the shrunk LDA from :func:`within_spectrum`'s output and the public ridge ``lam``."""
    n = float(c.sum())
    m = max(float(vals.mean()), np.finfo(float).tiny)
    inv = (vecs / ((vals + lam) / n * (m / (lam + m)))) @ vecs.T
    W = means @ inv
    b = -0.5 * np.sum(W * means, axis=1) + np.log(c / n)
    return W, b


def lda_from_moments(sums: np.ndarray, counts: np.ndarray, second: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(W, b): linear class scores ``Z @ W.T + b`` of the shrunk LDA of the (noisy) moments."""
    return lda_from_spectrum(*within_spectrum(sums, counts, second), lam)


def second_spectrum(second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of the (noisy) second moment M, PSD part (noise can make it indefinite)."""
    return _psd_eigh(np.asarray(second, dtype=np.float64))


def ridge_from_spectrum(sums: np.ndarray, vals: np.ndarray, vecs: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(W, b) of the ridge classifier: W = S(M + λI)⁻¹ from :func:`second_spectrum`'s output, b = 0."""
    lam = max(float(lam), np.finfo(float).eps * max(float(vals.max(initial=0.0)), 1.0))  # λ > 0: M may be singular
    W = ((np.asarray(sums, dtype=np.float64) @ vecs) / (vals + lam)) @ vecs.T
    return W, np.zeros(W.shape[0])


def ridge_from_moments(sums: np.ndarray, second: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(W, b): linear class scores ``Z @ W.T + b`` of the ridge classifier of the (noisy) moments."""
    return ridge_from_spectrum(sums, *second_spectrum(second), lam)
