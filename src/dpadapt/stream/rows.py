"""The public per-record maps under every sound release: row norms, ℓ2 normalisation, the per-row map, the projection.

Both designs (the class-statistics release and the receiver-designed sound release) map each source
row by a public per-record map before summing; the maps live here, below both, so that
:mod:`dpadapt.stream.sums` and :mod:`dpadapt.sound.spaces` share them without importing a method package.

* :func:`row_norms`, :func:`overflowing_rows` — ℓ2 row norms, dense or CSR, with the overflow-free
  factors of a finite row whose squared norm overflows float64;
* :func:`scale_csr_rows`, :func:`normalise_rows` — rows scaled to a given norm (zero rows stay zero);
* :func:`row_map` — the class-statistics map (``log1p`` of non-negative counts if asked, ℓ2 normalisation);
* :func:`project` — mapped rows on a basis (mean + orthonormal columns), re-normalised.

A dense mapped row is scaled to :data:`UNIT` (just under 1) rather than 1, so that the mechanisms' clip
(:func:`dpadapt.privacy.mechanisms.class_moment_sums` and the other exact sums) finds every row inside
the float64 unit ball and copies nothing; the clip still runs, and it is what the sensitivity rests on.
"""

from __future__ import annotations

import numpy as np

from dpadapt.validation import issparse


def row_norms(X) -> np.ndarray:
    """ℓ2 norm of every row of a dense array or a CSR matrix (sparse: from the stored values only); ``inf`` for a
    finite row whose squared norm overflows float64 (:func:`overflowing_rows` scales those)."""
    with np.errstate(over="ignore"):
        if issparse(X):
            X = X.tocsr()
            return np.sqrt(np.bincount(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr)), X.data**2, minlength=X.shape[0]))
        return np.sqrt(np.einsum("ij,ij->i", X, X))


def overflowing_rows(X, norms: np.ndarray, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose computed norm overflowed (``inf`` in ``norms``) and their factors ``scale/‖x‖``, formed
    overflow-free as (scale/m)/‖x/m‖ with m the row's largest |entry| — never m·‖x/m‖ — so that such a row is
    normalised like any other instead of being zeroed. Empty arrays when no row overflowed (the usual case)."""
    rows = np.flatnonzero(np.isinf(norms))
    if rows.size == 0:
        return rows, np.zeros(0)
    B = X[rows]
    B = B.toarray() if issparse(B) else np.asarray(B, dtype=np.float64)
    peak = np.max(np.abs(B), axis=1)
    B = B / peak[:, None]
    return rows, (scale / peak) / np.sqrt(np.einsum("ij,ij->i", B, B))


def scale_csr_rows(X, scale: float = 1.0):
    """A float64 CSR ``X`` with every row scaled to norm ``scale`` in place (zero rows stay zero)."""
    norms = row_norms(X)
    factor = np.divide(scale, norms, out=np.zeros_like(norms), where=norms > 0)
    rows, big = overflowing_rows(X, norms, scale)
    factor[rows] = big
    X.data *= np.repeat(factor, np.diff(X.indptr))
    return X


#: The norm a dense mapped row is scaled to: 1 − 2⁻⁴⁰, so that its norm computed again in float64 stays
#: under the mechanism's clipping threshold (1 − (d + 16)·2⁻⁵², for d up to ~3 000) and nothing is copied
#: to clip it (the clip must still run: it is what the sensitivity rests on).
UNIT = 1.0 - 2.0**-40


def row_map(X, log1p: bool):
    """The public per-row map: ``log1p`` of non-negative counts (if asked), then ℓ2-normalise each row.

    A per-record operation: each mapped row has norm 1 (:data:`UNIT` for dense rows; 0 for an all-zero
    row), whatever the data.
    Dense input gives a new float64 array (one copy); sparse input stays sparse (a float64 CSR
    matrix: ``log1p`` and the row norms act on the stored values, log1p(0) = 0 keeps zeros zero).
    """
    if issparse(X):
        import scipy.sparse as sp

        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        if log1p:
            if X.data.size and X.data.min() < 0:
                raise ValueError("log1p is a map for non-negative count features; got negative values")
            np.log1p(X.data, out=X.data)
        X = scale_csr_rows(X)
        X.eliminate_zeros()
        return X
    X = np.asarray(X, dtype=np.float64)
    if log1p:
        if np.any(X < 0):
            raise ValueError("log1p is a map for non-negative count features; got negative values")
        X = np.log1p(X)
    return normalise_rows(X, UNIT)


def project(M, mean: np.ndarray | None, components: np.ndarray | None):
    """Mapped rows in the basis, re-normalised to norm :data:`UNIT` (identity basis when ``components`` is None).

    ``(M − mean) C`` is computed as ``M C − mean C`` (no centred copy of ``M``); sparse ``M`` gives a
    dense n × k result, or stays sparse without a basis.
    """
    if components is None:
        if issparse(M):
            import scipy.sparse as sp

            return scale_csr_rows(sp.csr_matrix(M, dtype=np.float64, copy=True))
        return normalise_rows(M, UNIT)
    Z = np.asarray(M @ components)
    Z -= mean @ components
    return normalise_rows(Z, UNIT)


def normalise_rows(P: np.ndarray, scale: float = 1.0) -> np.ndarray:
    """Rows scaled to ℓ2 norm ``scale`` (zero rows stay zero; a row whose norm overflows too: :func:`overflowing_rows`).

    A new float64 array: one pass for the norms, one product by the per-row factors."""
    P = np.asarray(P, dtype=np.float64)
    norms = row_norms(P)
    factor = np.divide(scale, norms, out=np.zeros_like(norms), where=norms > 0)
    rows, big = overflowing_rows(P, norms, scale)
    factor[rows] = big
    return P * factor[:, None]
