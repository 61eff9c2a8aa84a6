"""The receiver's principal basis (mean + top-k directions) of a chunked source, in a fixed number of passes.

Block Krylov iteration with full reorthogonalisation (Musco & Musco, NeurIPS 2015, "Randomized block
Krylov methods for stronger and faster approximate SVD") on the centred Gram matrix
``A = Σ (m − μ)(m − μ)ᵀ = MᵀM − n μμᵀ`` of the mapped rows ``m``, run so that applying ``A`` to a
block is ONE pass over the rows (every chunk ``C`` adds ``Cᵀ(C W)``):

1. pass 1 — ``A W₀`` for an orthonormalised public Gaussian test block ``W₀`` (d × ℓ, ℓ = k +
   oversample), and the mean μ (``A W = Σ Cᵀ(C W) − n μ (μᵀ W)``);
2. passes 2..P — the next block ``W_i`` is ``A W_{i−1}`` orthogonalised against every earlier block
   (twice, for stability), then ``A W_i``;
3. Rayleigh–Ritz on the Krylov space ``Q = [W₀ … W_{P−1}]`` (orthonormal, P·ℓ columns): the top-k
   eigenvectors of ``Qᵀ(AQ)``, mapped back by ``Q`` — ``AQ`` is what the passes computed, no extra pass.

The chunks are mapped by ``row_map`` on every pass (public and per row: the same map each time), so
a file larger than memory takes P passes and memory O(chunk × d + d × P·ℓ). ``A`` is never formed.
The number of passes is fixed in advance (:data:`BASIS_PASSES`, chosen by the error test in
``benchmarks/perf/basis_error.py`` on the development data, see ``benchmarks/perf/README.md``);
``tests/test_stream_basis.py`` checks the basis against an exact SVD.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dpadapt.stream.readers import ChunkedSource

#: Passes over the rows (one power step each); see the module docstring for the error test behind it.
BASIS_PASSES = 4
#: Extra directions of the test matrix (ℓ = k + oversample).
OVERSAMPLE = 10


def _gram_times(source: ChunkedSource, row_map: Callable | None, W: np.ndarray, with_mean: bool):
    """``(Σ Cᵀ(C W), Σ rows, n)`` over the mapped chunks of ``source``."""
    Y = np.zeros((source.n_features, W.shape[1]))
    total = np.zeros(source.n_features) if with_mean else None
    n = 0
    for X, _ in source:
        M = row_map(X) if row_map is not None else X
        MW = np.asarray(M @ W)
        Y += np.asarray(M.T @ MW)
        if with_mean:
            total += np.asarray(M.sum(axis=0)).ravel()
        n += M.shape[0]
    return Y, total, n


def principal_basis(source: ChunkedSource, k: int, row_map: Callable | None = None, *, passes: int | None = None,
                    oversample: int = OVERSAMPLE) -> tuple[np.ndarray, np.ndarray]:
    """Mean (d,) and top-``k`` principal directions (d × k, orthonormal columns) of the mapped rows of ``source``.

    ``row_map`` maps a chunk to the rows the basis is of (dense or CSR; the identity when ``None``).
    The test matrix is public and fixed (seed 0, from :func:`dpadapt.privacy.mechanisms.public_gaussian_matrix`):
    the same rows give the same basis.
    """
    from dpadapt.privacy.mechanisms import public_gaussian_matrix

    passes = BASIS_PASSES if passes is None else int(passes)
    if passes < 2:
        raise ValueError(f"the basis needs at least 2 passes (one power step and the Rayleigh-Ritz step), got {passes}")
    d = source.n_features
    k = int(min(k, source.n_rows - 1, d))
    if k < 1:
        raise ValueError("a basis needs at least two rows")
    ell = min(k + oversample, d)
    W, _ = np.linalg.qr(public_gaussian_matrix((d, ell), 1.0, seed=0))
    blocks, images, mean = [], [], None
    for step in range(passes):
        Y, total, n = _gram_times(source, row_map, W, with_mean=step == 0)
        if step == 0:
            if n != source.n_rows:
                raise ValueError(f"{source.name}: {n} rows were read, {source.n_rows} expected")
            mean = total / n
        blocks.append(W)
        images.append(Y - n * np.outer(mean, mean @ W))
        room = d - sum(b.shape[1] for b in blocks)
        if step == passes - 1 or room <= 0:
            break
        W = _next_block(images[-1], blocks, min(ell, room))
        if W.shape[1] == 0:
            break  # the Krylov space is invariant: it holds every direction the rows have
    Q, AQ = np.hstack(blocks), np.hstack(images)
    H = Q.T @ AQ
    values, vectors = np.linalg.eigh((H + H.T) / 2.0)
    top = np.argsort(values)[::-1][:k]
    return mean, _signs(Q @ vectors[:, top])  # orthonormal: Q is, and the rotation is orthogonal


def _next_block(image: np.ndarray, blocks: list[np.ndarray], width: int) -> np.ndarray:
    """``image`` orthogonalised against the Krylov space so far (block Gram-Schmidt, twice), orthonormalised;
    only the directions that are new beyond rounding (pivoted QR, |R_ii| > 1e-10 of the image's scale)."""
    from scipy.linalg import qr

    V = image[:, :width]
    scale = max(float(np.abs(V).max()), np.finfo(float).tiny)
    for _ in range(2):
        for B in blocks:
            V = V - B @ (B.T @ V)
    Q, R, _ = qr(V, mode="economic", pivoting=True)
    keep = int(np.sum(np.abs(np.diag(R)) > 1e-10 * scale))
    return Q[:, :keep]


def _signs(components: np.ndarray) -> np.ndarray:
    """Each direction with its largest-magnitude entry positive (a deterministic sign, as an SVD's is not)."""
    flip = np.sign(components[np.argmax(np.abs(components), axis=0), np.arange(components.shape[1])])
    return components * np.where(flip == 0, 1.0, flip)

