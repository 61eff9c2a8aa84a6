"""Streaming releases (issue 20): chunked sums equal the in-memory ones, sparse stays sparse, the
clipping holds per chunk (a neighbouring dataset moves the summed vector by at most Δ), readers agree."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from dpadapt import classstats
from dpadapt.classstats.adapt import fit_basis, project, refine_ot, row_map
from dpadapt.privacy.mechanisms import (
    CLASS_STATISTICS_SENSITIVITY,
    MOMENT_STATISTICS_SENSITIVITY,
    class_statistics,
    moment_statistics,
    random_streams,
    release_class_sums,
)
from dpadapt.stream import ClassSums, MomentSums, RowMap, SlicedCounts, accumulate, from_arrays, open_npy, open_parquet


def _data(rng, n=500, d=12, K=3):
    X = rng.poisson(2.0, size=(n, d)).astype(float)
    X[::7] *= 40.0  # rows far outside the unit ball before the map
    return X, rng.integers(0, K, n)


def _noise(seed):
    return random_streams(seed, reproducible_noise=True)[1]


def _reference_sums(Z, y, K):
    """The pre-issue-20 computation (np.add.at over one in-memory array of clipped rows)."""
    norms = np.linalg.norm(Z, axis=1, keepdims=True)
    Z = Z * np.minimum(1.0, 1.0 / np.maximum(norms, 1e-300))
    S = np.zeros((K, Z.shape[1]))
    np.add.at(S, y, Z)
    return S, np.bincount(y, minlength=K).astype(float)


@pytest.mark.parametrize("rows", [1, 7, 64, 10_000])
def test_chunked_class_sums_equal_in_memory(rng, rows):
    X, y = _data(rng)
    mean, comp = fit_basis(row_map(X[:200], True), 4)
    rm = RowMap(True, mean, comp)
    acc = accumulate(ClassSums((0, 1, 2), rm), from_arrays(X, y, rows=rows))
    S, c = _reference_sums(project(row_map(X, True), mean, comp), y, 3)
    assert acc.n_rows == X.shape[0]
    np.testing.assert_allclose(acc.sums, S, atol=1e-9)
    np.testing.assert_array_equal(acc.counts, c)


def test_chunked_release_draws_the_same_single_gaussian(rng):
    X, y = _data(rng)
    Z = project(row_map(X, True), None, None)
    whole = class_statistics(Z, y, 3, sigma=2.0, relation="replace_one", noise=_noise(5))
    acc = accumulate(ClassSums((0, 1, 2), RowMap(True)), from_arrays(X, y, rows=33))
    chunked = acc.release(sigma=2.0, relation="replace_one", noise=_noise(5))
    np.testing.assert_allclose(chunked.sums, whole.sums, atol=1e-9)
    np.testing.assert_allclose(chunked.counts, whole.counts, atol=1e-9)
    assert chunked.event == whole.event


def test_neighbour_moves_chunked_sums_at_most_delta():
    """Attack: D vs D' differ in one row with a huge value; the per-chunk clipping bounds the change.

    An accumulator that summed unclipped chunk rows would move by ~1e6 here."""
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(40, 5))
    y = rng.integers(0, 3, 40)
    Z2, y2 = Z.copy(), y.copy()
    Z2[17], y2[17] = 1e6 * np.ones(5), (y[17] + 1) % 3
    class Identity(RowMap):
        def __call__(self, X):
            return np.asarray(X, dtype=float)

    a = accumulate(ClassSums((0, 1, 2), Identity(False)), from_arrays(Z, y, rows=6))
    b = accumulate(ClassSums((0, 1, 2), Identity(False)), from_arrays(Z2, y2, rows=6))
    va = np.concatenate([a.sums.ravel(), a.counts])
    vb = np.concatenate([b.sums.ravel(), b.counts])
    assert np.linalg.norm(va - vb) <= CLASS_STATISTICS_SENSITIVITY["replace_one"] + 1e-12
    m1 = accumulate(MomentSums(Identity(False)), from_arrays(Z, None, rows=6))
    m2 = accumulate(MomentSums(Identity(False)), from_arrays(Z2, None, rows=6))
    iu = np.triu_indices(5)
    d = np.concatenate([[m1.count - m2.count], m1.total - m2.total, (m1.second - m2.second)[iu]])
    assert np.linalg.norm(d) <= MOMENT_STATISTICS_SENSITIVITY["replace_one"] + 1e-12


def test_moment_sums_equal_in_memory(rng):
    X, _ = _data(rng)
    acc = accumulate(MomentSums(RowMap(True)), from_arrays(X, None, rows=50))
    whole = moment_statistics(row_map(X, True), sigma=1.0, relation="add_remove", noise=_noise(3))
    chunked = acc.release(sigma=1.0, relation="add_remove", noise=_noise(3))
    np.testing.assert_allclose(chunked.second, whole.second, atol=1e-9)
    np.testing.assert_allclose(chunked.total, whole.total, atol=1e-9)


def test_sliced_counts_equal_in_memory(rng):
    from dpadapt.privacy.mechanisms import sliced_histogram

    F = rng.normal(size=(300, 6))
    y = rng.integers(0, 2, 300)
    U = rng.normal(size=(6, 4))
    edges = np.linspace(-3, 3, 9)
    acc = accumulate(SlicedCounts(U, edges, (0, 1)), from_arrays(F, y, rows=41))
    np.testing.assert_array_equal(acc.counts, sliced_histogram(F, U, edges, y, 2))


def test_sparse_row_map_stays_sparse_and_matches_dense(rng):
    X = sp.random(300, 50, density=0.05, format="csr", random_state=0, data_rvs=lambda k: rng.poisson(3, k) + 1.0)
    M = row_map(X, True)
    assert sp.issparse(M)
    np.testing.assert_allclose(M.toarray(), row_map(X.toarray(), True), atol=1e-12)
    mean, comp = fit_basis(M, 5)
    np.testing.assert_allclose(project(M, mean, comp), project(M.toarray(), mean, comp), atol=1e-12)
    y = rng.integers(0, 3, 300)
    a = accumulate(ClassSums((0, 1, 2), RowMap(True, mean, comp)), from_arrays(X, y, rows=64))
    b = accumulate(ClassSums((0, 1, 2), RowMap(True, mean, comp)), from_arrays(X.toarray(), y, rows=64))
    np.testing.assert_allclose(a.sums, b.sums, atol=1e-9)


def test_sparse_release_is_never_densified():
    """bow5000-shaped CSR (2e4 × 5000, 1 %): the release peaks below 3× its CSR size (dense would be 800 MB)."""
    g = np.random.default_rng(0)
    n, d, per_row = 20_000, 5000, 50
    cols = np.sort(g.integers(0, d, (n, per_row)), axis=1)
    X = sp.csr_matrix((g.integers(1, 6, n * per_row).astype(float), cols.ravel(), np.arange(0, n * per_row + 1, per_row)), shape=(n, d))
    y = g.integers(0, 2, n)
    csr_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    config = classstats.Config(epsilon=1.0, delta=1e-6, classes=(0, 1), k=0, feature_type="counts")
    the_plan = classstats.plan(config, {"n_source": X.shape[0], "n_features": X.shape[1], "k": 0})
    tracemalloc.start()
    try:
        rel = classstats.release(the_plan, X, y, random_streams(0)[1])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rel["sums"].shape == (2, 5000)
    assert peak <= 3 * csr_bytes, (peak, csr_bytes)


def test_readers_agree(tmp_path, rng):
    import pandas as pd

    X, y = _data(rng, n=230, d=5)
    np.save(tmp_path / "X.npy", X)
    pd.DataFrame({**{f"f{j}": X[:, j] for j in range(5)}, "label": y}).to_parquet(tmp_path / "d.parquet", row_group_size=50)
    ref = accumulate(ClassSums((0, 1, 2), RowMap(True)), from_arrays(X, y)).sums
    for source in (open_npy(tmp_path / "X.npy", y, rows=17), open_parquet(tmp_path / "d.parquet", "label", rows=40)):
        assert (source.n_rows, source.n_features) == X.shape
        np.testing.assert_allclose(accumulate(ClassSums((0, 1, 2), RowMap(True)), source).sums, ref, atol=1e-12)


def test_chunked_release_end_to_end_and_bad_chunks(tmp_path, rng):
    X, y = _data(rng, n=120, d=6)
    config = classstats.Config(epsilon=None, classes=(0, 1, 2), k=0, feature_type="counts")
    the_plan = classstats.plan(config, {"n_source": 120, "n_features": 6, "k": 0})
    np.save(tmp_path / "X.npy", X)
    a = classstats.release(the_plan, open_npy(tmp_path / "X.npy", y, rows=25))
    b = classstats.release(the_plan, X, y)
    np.testing.assert_allclose(a["sums"], b["sums"], atol=1e-12)
    X[100, 2] = np.nan
    np.save(tmp_path / "X.npy", X)
    with pytest.raises(ValueError, match="NaN"):
        classstats.release(the_plan, open_npy(tmp_path / "X.npy", y, rows=25))
    with pytest.raises(ValueError, match="plan is for 120"):
        classstats.release(the_plan, X[:50], y[:50])


def test_randomized_basis_matches_exact_subspace(rng, monkeypatch):
    import importlib

    adapt = importlib.import_module("dpadapt.classstats.adapt")
    low = rng.normal(size=(3000, 5)) @ rng.normal(size=(5, 80)) + 0.05 * rng.normal(size=(3000, 80))
    M = row_map(low, False)
    mean, exact = fit_basis(M, 5)
    monkeypatch.setattr(adapt, "EXACT_SVD_ENTRIES", 0)
    mean2, approx = fit_basis(M, 5)
    np.testing.assert_allclose(mean, mean2)
    assert np.linalg.svd(exact.T @ approx, compute_uv=False).min() > 1 - 1e-8  # same subspace


def test_refine_ot_converges_to_the_long_log_domain_run(rng):
    from scipy.special import logsumexp

    centers = row_map(rng.normal(size=(4, 6)), False)
    Z = row_map(centers[rng.integers(0, 4, 200)] + 0.5 * rng.normal(size=(200, 6)), False)
    prop = np.array([0.1, 0.2, 0.3, 0.4])
    logK = -(1.0 - Z @ centers.T) / 0.05
    f, g = np.zeros(200), np.zeros(4)
    for _ in range(1000):
        f = np.full(200, -np.log(200)) - logsumexp(logK + g[None, :], axis=1)
        g = np.log(prop) - logsumexp(logK + f[:, None], axis=0)
    ref = np.exp(logK + f[:, None] + g[None, :])
    np.testing.assert_allclose(refine_ot(Z, centers, prop), ref / ref.sum(axis=1, keepdims=True), atol=1e-6)


def test_release_class_sums_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="do not match"):
        release_class_sums(np.zeros((3, 2)), np.zeros(2), sigma=1.0, relation="replace_one", noise=random_streams(0)[1])


def test_dask_local_cluster_sums_equal_in_memory(tmp_path, rng):
    """Two worker processes sum the partitions (dask.array blocks and Parquet partitions); only the
    totals come back, equal to the single-machine sums to 1e-9; the release adds the noise once here."""
    pytest.importorskip("distributed")
    import dask.array as da
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    X, y = _data(rng, n=600, d=8)
    mean, comp = fit_basis(row_map(X[:300], True), 3)
    rm = RowMap(True, mean, comp)
    ref = accumulate(ClassSums((0, 1, 2), rm), from_arrays(X, y))
    frame = pd.DataFrame({**{f"f{j}": X[:, j] for j in range(8)}, "y": y})
    dd.from_pandas(frame, npartitions=4).to_parquet(tmp_path / "src")
    config = classstats.Config(epsilon=None, classes=(0, 1, 2), k=3, feature_type="counts")
    basis_rel = classstats.basis(X[:300], config)
    the_plan = classstats.plan(config, {"n_source": 600, "n_features": 8, "k": 3})
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, Client(cluster) as client:
        on_array = classstats.release(the_plan, da.from_array(X, chunks=(150, 4)), da.from_array(y, chunks=150),
                                      basis_release=basis_rel, client=client)
        on_parquet = classstats.release(the_plan, dd.read_parquet(tmp_path / "src"), basis_release=basis_rel, client=client)
    local = classstats.release(the_plan, X, y, basis_release=basis_rel)
    np.testing.assert_allclose(local["sums"], ref.sums, atol=1e-9)
    for rel in (on_array, on_parquet):
        np.testing.assert_allclose(rel["sums"], local["sums"], atol=1e-9)
        np.testing.assert_array_equal(rel["counts"], local["counts"])


def test_sparse_rows_with_nan_are_refused_before_any_noise():
    from dpadapt.privacy.mechanisms import NonFiniteError, class_sums

    Z = sp.csr_matrix(np.array([[0.5, 0.0], [np.nan, 1.0]]))
    with pytest.raises(NonFiniteError):
        class_sums(Z, np.array([0, 1]), 2)


def test_chunked_class_moment_sums_equal_in_memory_and_draw_one_gaussian(rng, monkeypatch):
    """The sound SSP release streamed: chunk sums equal the in-memory ones; one Gaussian, drawn once at the end."""
    from dpadapt.privacy import mechanisms
    from dpadapt.privacy.mechanisms import class_moment_sums, class_moment_statistics
    from dpadapt.stream import ClassMomentSums

    X, y = _data(rng)
    Z = project(row_map(X, True), None, None)
    S, c, M = class_moment_sums(Z, y, 3)
    acc = accumulate(ClassMomentSums((0, 1, 2), RowMap(True)), from_arrays(X, y, rows=33))
    assert acc.n_rows == X.shape[0]
    np.testing.assert_allclose(acc.sums, S, atol=1e-9)
    np.testing.assert_array_equal(acc.counts, c)
    np.testing.assert_allclose(acc.second, M, atol=1e-9)
    Zc = Z / np.maximum(1.0, np.linalg.norm(Z, axis=1, keepdims=True))
    np.testing.assert_allclose(M, Zc.T @ Zc, atol=1e-9)  # the rows were clipped to the unit ball
    whole = class_moment_statistics(Z, y, 3, sigma=2.0, relation="replace_one", noise=_noise(5))
    draws = []
    real = mechanisms.gaussian
    monkeypatch.setattr(mechanisms, "gaussian", lambda v, **kw: draws.append(np.size(v)) or real(v, **kw))
    chunked = acc.release(sigma=2.0, relation="replace_one", noise=_noise(5))
    assert draws == [3 * Z.shape[1] + 3 + Z.shape[1] * (Z.shape[1] + 1) // 2]  # ONE draw of the joint vector
    for a, b in ((chunked.sums, whole.sums), (chunked.counts, whole.counts), (chunked.second, whole.second)):
        np.testing.assert_allclose(a, b, atol=1e-9)
    assert chunked.event == whole.event
    np.testing.assert_array_equal(chunked.second, chunked.second.T)


def test_a_chunk_is_mapped_in_blocks_same_sums_and_bounded_temporaries(monkeypatch):
    """A large chunk is mapped in blocks of ``MAP_BYTES``: the sums equal those of one block, and the temporaries
    (mapped rows, their projection) stay a few blocks, not a few chunks (the whole chunk mapped at once took 3×)."""
    import tracemalloc

    from dpadapt.stream import sums

    rng = np.random.default_rng(0)
    n, d, K = 40_000, 64, 4
    X, y = rng.normal(size=(n, d)), rng.integers(0, K, n)
    components = np.linalg.qr(rng.normal(size=(d, d)))[0]
    row_map = sums.RowMap(False, rng.normal(size=d) / 20, components)
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    blocked = sums.ClassMomentSums(tuple(range(K)), row_map).add(X, y)
    extra = tracemalloc.get_traced_memory()[1] - before
    tracemalloc.stop()
    assert extra < 4 * sums.MAP_BYTES < X.nbytes, f"mapping a {X.nbytes / 1e6:.0f} MB chunk took {extra / 1e6:.0f} MB more"
    monkeypatch.setattr(sums, "MAP_BYTES", X.nbytes + 1)  # one block: the whole chunk at once
    whole = sums.ClassMomentSums(tuple(range(K)), row_map).add(X, y)
    assert blocked.n_rows == whole.n_rows == n
    for a, b in ((blocked.sums, whole.sums), (blocked.counts, whole.counts), (blocked.second, whole.second)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    monkeypatch.setattr(sums, "MAP_BYTES", 8 * d * 7)  # 7-row blocks: a label outside the set in a later block
    y_bad = y.copy()
    y_bad[-1] = K
    with pytest.raises(ValueError, match="not in the public label set"):
        sums.ClassSums(tuple(range(K)), row_map).add(X[:100], y_bad[-100:])
