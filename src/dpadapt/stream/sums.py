"""Exact sums of the sound releases, accumulated chunk by chunk; the noise is drawn once at the end.

The sound releases (class statistics, moments, class moments, sliced histograms) are sums of a
per-row map, so they can be computed in one pass over any number of chunks — or per partition on a
cluster and added — in memory O(chunk × d + K × k) (a chunk is mapped in blocks of :data:`MAP_BYTES`). Each accumulator applies the *public* per-row
map to a chunk (:func:`dpadapt.stream.rows.row_map`, :func:`~dpadapt.stream.rows.project`)
and adds the exact sums from :mod:`dpadapt.privacy.mechanisms` (:func:`class_sums`,
:func:`moment_sums`, :func:`class_moment_sums`, :func:`sliced_histogram`), which clip every row of
every chunk to the unit ball: the total is therefore a sum of unit-ball rows and the single Gaussian
of :func:`release_class_sums` / :func:`release_moment_sums` / :func:`release_class_moment_sums` /
:func:`release_sliced_counts` has the sensitivity those functions state (Δ does not depend on how the rows were split into chunks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import numpy as np

from dpadapt.privacy import mechanisms
from dpadapt.stream.rows import project, row_map


def label_indices(ys, classes: tuple) -> np.ndarray:
    """Positions of the labels in the public label set; a label outside it is an error."""
    ys = np.asarray(ys)
    cls = np.asarray(classes)
    if ys.dtype.kind in "iu" and cls.dtype.kind in "iu" and np.array_equal(cls, np.arange(cls.size)):
        if ys.size and (ys.min() < 0 or ys.max() >= cls.size):  # labels are already the indices 0..K-1
            bad = ys[(ys < 0) | (ys >= cls.size)]
            raise ValueError(f"label(s) {sorted(set(bad.tolist()))[:5]} are not in the public label set classes={list(classes)}")
        return ys.astype(np.int64, copy=False)
    order = np.argsort(cls, kind="stable")
    pos = np.searchsorted(cls[order], ys)
    pos = np.clip(pos, 0, len(cls) - 1)
    idx = order[pos]
    bad = cls[idx] != ys
    if np.any(bad):
        raise ValueError(f"label(s) {sorted(set(ys[bad].tolist()))[:5]} are not in the public label set classes={list(classes)}")
    return idx.astype(np.int64)


@dataclasses.dataclass
class RowMap:
    """The public per-row map of the class-statistics design: (log1p), ℓ2-normalise, (project on a basis, re-normalise)."""

    log1p: bool
    mean: np.ndarray | None = None
    components: np.ndarray | None = None

    def __call__(self, X):
        M = row_map(X, self.log1p)
        if self.components is None and not hasattr(M, "tocsr"):
            return M  # already ℓ2-normalised: no basis, nothing to re-normalise
        return project(M, self.mean, self.components)

    @property
    def dim(self) -> int | None:
        return None if self.components is None else int(self.components.shape[1])


#: Rows are mapped in blocks of about this many bytes of features, so that a chunk's temporaries (the mapped rows,
#: their projection on the basis) are a few MB whatever a reader's chunk or a cluster's partition holds.
MAP_BYTES = 4 << 20


def _row_blocks(X, y, min_rows: int = 1):
    """``(X_block, y_block)`` of at most :data:`MAP_BYTES` of features each, or ``min_rows`` rows where that is more
    (one, possibly empty, block for an empty chunk)."""
    n = X.shape[0]
    step = max(1, min_rows, MAP_BYTES // (8 * max(1, X.shape[1])))
    if n <= step:
        yield X, y
        return
    for a in range(0, n, step):
        yield X[a:a + step], None if y is None else y[a:a + step]


def _moment_rows(row_map: RowMap, X) -> int:
    """Rows a block of a second-moment accumulator takes: the width k of the mapped rows (one row mapped), so that
    each block's ZᵀZ is a full-rank product of at least k rows. Fewer made a wide release (1e5 × 1024) pay 1.3× its
    numpy floor in small matrix products. A block's k × d features are then no more than the map's own basis (d × k)
    or, in the feature space (k = d), than the k × k moment the accumulator holds."""
    return int(row_map(X[:1]).shape[1]) if X.shape[0] else 1


def _plus(total: np.ndarray | None, part: np.ndarray) -> np.ndarray:
    """``total + part``, where ``None`` is the empty sum."""
    return part if total is None else total + part


def _required_labels(y, classes: tuple) -> np.ndarray:
    if y is None:
        raise ValueError("class statistics need labels")
    return label_indices(y, classes)


@dataclasses.dataclass
class ClassSums:
    """Per-class sums (K, k) and counts (K,) of mapped, unit-ball rows over the chunks added so far."""

    classes: tuple
    row_map: RowMap
    sums: np.ndarray | None = None
    counts: np.ndarray | None = None
    n_rows: int = 0

    def add(self, X, y) -> ClassSums:
        """Map one chunk and add its exact class sums (rows clipped in :func:`mechanisms.class_sums`)."""
        for Xb, yb in _row_blocks(X, y):
            s, c = mechanisms.class_sums(self.row_map(Xb), _required_labels(yb, self.classes), len(self.classes))
            self._add(s, c, Xb.shape[0])
        return self

    def _add(self, s: np.ndarray, c: np.ndarray, n: int) -> ClassSums:
        self.sums, self.counts = _plus(self.sums, s), _plus(self.counts, c)
        self.n_rows += int(n)
        return self

    def merge(self, other: ClassSums) -> ClassSums:
        """The sums of two disjoint parts of the data (e.g. two partitions)."""
        return self._add(other.sums, other.counts, other.n_rows) if other.sums is not None else self

    def release(self, *, sigma: float, relation, noise) -> mechanisms.ClassStatistics:
        """ONE Gaussian on the totals (:func:`mechanisms.release_class_sums`)."""
        if self.sums is None:
            raise ValueError("no rows were read")
        return mechanisms.release_class_sums(self.sums, self.counts, sigma=sigma, relation=relation, noise=noise)


@dataclasses.dataclass
class MomentSums:
    """Count, sum (k,) and second moment (k, k) of mapped, unit-ball rows over the chunks added so far."""

    row_map: RowMap
    count: float = 0.0
    total: np.ndarray | None = None
    second: np.ndarray | None = None

    def add(self, X, y=None) -> MomentSums:
        for Xb, _ in _row_blocks(X, None, _moment_rows(self.row_map, X)):
            n, t, s = mechanisms.moment_sums(self.row_map(Xb))
            self.count += n
            self.total, self.second = _plus(self.total, t), _plus(self.second, s)
        return self

    def release(self, *, sigma: float, relation, noise) -> mechanisms.MomentStatistics:
        if self.total is None:
            raise ValueError("no rows were read")
        return mechanisms.release_moment_sums(self.count, self.total, self.second, sigma=sigma, relation=relation, noise=noise)


@dataclasses.dataclass
class ClassMomentSums:
    """Per-class sums (K, k), counts (K,) and pooled second moment (k, k) of mapped, unit-ball rows over the chunks.

    The streamed form of the sound SSP release (:func:`mechanisms.class_moment_statistics`);
    ``row_map`` is the public per-row map into the release's space.
    """

    classes: tuple
    row_map: Callable
    sums: np.ndarray | None = None
    counts: np.ndarray | None = None
    second: np.ndarray | None = None
    n_rows: int = 0

    def add(self, X, y) -> ClassMomentSums:
        """Map one chunk and add its exact sums (rows checked finite and clipped in :func:`mechanisms.class_moment_sums`)."""
        for Xb, yb in _row_blocks(X, y, _moment_rows(self.row_map, X)):
            s, c, m = mechanisms.class_moment_sums(self.row_map(Xb), _required_labels(yb, self.classes), len(self.classes))
            self._add(s, c, m, Xb.shape[0])
        return self

    def _add(self, s: np.ndarray, c: np.ndarray, m: np.ndarray, n: int) -> ClassMomentSums:
        self.sums, self.counts, self.second = _plus(self.sums, s), _plus(self.counts, c), _plus(self.second, m)
        self.n_rows += int(n)
        return self

    def merge(self, other: ClassMomentSums) -> ClassMomentSums:
        """The sums of two disjoint parts of the data (e.g. two partitions)."""
        return self._add(other.sums, other.counts, other.second, other.n_rows) if other.sums is not None else self

    def release(self, *, sigma: float, relation, noise) -> mechanisms.ClassMomentStatistics:
        """ONE Gaussian on the totals (:func:`mechanisms.release_class_moment_sums`)."""
        if self.sums is None:
            raise ValueError("no rows were read")
        return mechanisms.release_class_moment_sums(self.sums, self.counts, self.second, sigma=sigma,
                                                    relation=relation, noise=noise)


@dataclasses.dataclass
class CandidateCounts:
    """Counts (K, M) of rows by (label, nearest public candidate) over the chunks: each row mapped by ``row_map`` goes
    to the candidate of largest inner product (the nearest on the unit sphere; ties to the lowest index) — a public
    per-row map, so every row adds one count to one cell whatever its values (non-finite rows are refused)."""

    classes: tuple
    row_map: Callable
    candidates: np.ndarray
    counts: np.ndarray | None = None
    n_rows: int = 0

    def add(self, X, y) -> CandidateCounts:
        for Xb, yb in _row_blocks(X, y):
            Z = np.asarray(self.row_map(Xb), dtype=np.float64)
            if not np.all(np.isfinite(Z)):
                raise mechanisms.NonFiniteError("a source row is not finite after the request's map; refused")
            nearest = np.argmax(Z @ np.asarray(self.candidates, dtype=np.float64).T, axis=1) if Z.shape[0] else \
                np.zeros(0, dtype=np.int64)
            c = mechanisms.score_histogram(nearest, _required_labels(yb, self.classes), len(self.classes),
                                           self.candidates.shape[0])
            self.counts, self.n_rows = _plus(self.counts, c), self.n_rows + int(Xb.shape[0])
        return self

    def merge(self, other: CandidateCounts) -> CandidateCounts:
        """The counts of two disjoint parts of the data (e.g. two partitions)."""
        if other.counts is not None:
            self.counts, self.n_rows = _plus(self.counts, other.counts), self.n_rows + other.n_rows
        return self

    def release(self, *, epsilon: float, relation, noise) -> mechanisms.Noised:
        """ONE Laplace release of the table (:func:`mechanisms.release_candidate_histogram`)."""
        if self.counts is None:
            raise ValueError("no rows were read")
        return mechanisms.release_candidate_histogram(self.counts, epsilon=epsilon, relation=relation, noise=noise)


@dataclasses.dataclass
class SlicedCounts:
    """Histogram counts of the projections ``F U`` in public bins (per class with ``classes``), over chunks.

    ``F`` are rows the caller has already mapped into the public feature space (e.g. a public
    extractor's clipped output); each row adds one count per direction whichever chunk it is in.
    """

    U: np.ndarray
    edges: np.ndarray
    classes: tuple | None = None
    counts: np.ndarray | None = None

    def add(self, F, y=None) -> SlicedCounts:
        labels = None if self.classes is None else label_indices(y, self.classes)
        c = mechanisms.sliced_histogram(F, self.U, self.edges, labels, None if self.classes is None else len(self.classes))
        self.counts = _plus(self.counts, c)
        return self

    def release(self, *, sigma: float, noise) -> mechanisms.Noised:
        if self.counts is None:
            raise ValueError("no rows were read")
        return mechanisms.release_sliced_counts(self.counts, sigma=sigma, noise=noise)


def accumulate(acc, chunks: Iterable):
    """Feed every ``(X_chunk, y_chunk)`` of ``chunks`` to the accumulator ``acc``; returns ``acc``."""
    for X, y in chunks:
        acc.add(X, y)
    return acc
