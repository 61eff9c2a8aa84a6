"""Public working spaces of the sound designs: a per-row map fixed before any private row is read.

* ``"features"`` — the mapped row itself (``log1p`` for counts, then ℓ2-normalised; or, for a table
  whose columns a declared schema already scaled to [-1, 1], divided by √d so that it lies in the unit
  ball without losing its scale: ``norm="box"``);
* ``"pca"`` — the unprotected receiver's mean and top-k principal directions (its disclosure, see
  :func:`dpadapt.classstats.basis`), rows re-normalised;
* ``"random"`` — a public Gaussian (Johnson–Lindenstrauss) projection to k dimensions from a released
  seed, rows re-normalised.

Every map sends each row into the unit ball whatever the data; the mechanism clips again.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpadapt.classstats.adapt import normalise_rows, project, row_map
from dpadapt.privacy.mechanisms import public_gaussian_matrix

SPACES = ("features", "pca", "random")
NORMS = ("l2", "box")


def mapped_rows(X, *, log1p: bool, norm: str) -> np.ndarray:
    """The per-row map before the space: ``row_map`` (``norm="l2"``) or box rows / √d (``norm="box"``).

    ``"box"`` needs every value in [-1, 1] (what a declared table schema produces); a value outside is an
    error, never silently clipped, so the bound the sensitivity rests on is checked in float64.
    """
    if norm == "l2":
        return row_map(X, log1p)
    if norm != "box":
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    if np.any(np.abs(X) > 1.0):
        raise ValueError("norm='box' needs features scaled to [-1, 1] (a declared table schema); got values outside")
    return X / np.sqrt(X.shape[1])


def random_basis(n_features: int, k: int, seed: int) -> np.ndarray:
    """The public JL matrix (d × k, entries N(0, 1/k)) regenerated from its released seed."""
    return public_gaussian_matrix((n_features, k), 1.0 / np.sqrt(k), seed)


def to_space(M: np.ndarray, space: str, *, mean=None, components=None, seed: int | None = None, k: int = 0) -> np.ndarray:
    """Mapped rows ``M`` in the working space (unit ball)."""
    if space == "features":
        return M
    if space == "pca":
        return project(M, mean, components)
    if space == "random":
        return normalise_rows(M @ random_basis(M.shape[1], k, int(seed)))
    raise ValueError(f"space must be one of {SPACES}, got {space!r}")
