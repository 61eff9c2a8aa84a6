"""The public per-row map of the sound release: every row into the unit ball, whatever its values.

A row ``x`` (dense or sparse, any finite values) is mapped by

1. ``log1p`` (when the request says so): ``sign(x)·log1p(|x|)``, the usual ``log1p`` of non-negative
   counts, defined for every finite value so that no source row can make the map fail;
2. ℓ2 normalisation: ``x / ‖x‖`` (a zero row stays zero);
3. in the ``"basis"`` space, the receiver's basis: ``(x − mean) C`` re-normalised to the unit sphere
   (``C`` has orthonormal columns and ‖mean‖ ≤ 1, checked by :func:`dpadapt.validation.check_basis`).

Each step acts on one row alone and is fixed before any source row is read (the receiver's request),
so for the protected source the map is public and the sensitivity of sums of mapped rows is that of
unit-ball rows (the mechanisms clip again: :func:`dpadapt.privacy.mechanisms.class_moment_sums`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpadapt.stream.rows import UNIT, normalise_rows, scale_csr_rows
from dpadapt.validation import issparse


def signed_log1p(X):
    """``sign(x)·log1p(|x|)`` element-wise (dense → new float64 array; sparse → new CSR, zeros stay zero)."""
    if issparse(X):
        import scipy.sparse as sp

        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()
        X.data = np.sign(X.data) * np.log1p(np.abs(X.data))
        return X
    X = np.asarray(X, dtype=np.float64)
    return np.sign(X) * np.log1p(np.abs(X))


def unit_rows(X):
    """Rows scaled to unit ℓ2 norm (dense: :data:`~dpadapt.stream.rows.UNIT`, just under 1, so that the mechanisms'
    clip copies nothing; zero rows stay zero); sparse input stays sparse (CSR)."""
    if issparse(X):
        import scipy.sparse as sp

        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sum_duplicates()  # a column stored twice counts once in the norm
        X = scale_csr_rows(X)
        X.eliminate_zeros()
        return X
    return normalise_rows(np.asarray(X, dtype=np.float64), UNIT)


@dataclasses.dataclass(frozen=True)
class RowMap:
    """The request's per-row map: (signed) ``log1p``, ℓ2-normalise, then the basis (``mean``, ``components``)."""

    log1p: bool
    mean: np.ndarray | None = None
    components: np.ndarray | None = None

    @property
    def k(self) -> int | None:
        """Dimension of the working space (``None``: the feature space itself)."""
        return None if self.components is None else int(self.components.shape[1])

    def mapped(self, X):
        """Steps 1–2: the normalised rows before the basis (sparse stays sparse)."""
        return unit_rows(signed_log1p(X) if self.log1p else X)

    def __call__(self, X):
        """Every row of ``X`` in the working space, in the unit ball (n × k dense, or n × d as given)."""
        M = self.mapped(X)
        if self.components is None:
            return M
        Z = np.asarray(M @ self.components)
        Z -= self.mean @ self.components
        return normalise_rows(Z, UNIT)
