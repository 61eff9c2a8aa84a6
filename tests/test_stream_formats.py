"""Every data path reads through :mod:`dpadapt.stream` (issue 30): each format, chunk by chunk, gives the
release the in-memory arrays give; the memory of a streamed release does not grow with the file; the
CLI reads ``.npy`` (labels from ``--label-file``) and streams its releases.

The in-memory references are read by other means (numpy, pandas) so that a reader bug cannot hide
in both sides. The full-size memory benchmark (1e6 × 64, every format) is
``benchmarks/perf/stream_memory.py``.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from dpadapt import sound
from dpadapt.io import load_table, save_table
from dpadapt.privacy.mechanisms import random_streams
from dpadapt.stream import materialize, open_schema_table, open_source

FORMATS = ("npz", "npz-csr", "npz-plain", "npy", "csv", "parquet")


def _data(rng, n=3000, d=6, K=3):
    y = rng.integers(0, K, n)
    X = np.round(rng.normal(size=(n, d)) + y[:, None], 4)
    return X, y


def _write(tmp_path, fmt: str, X, y):
    """The table in ``fmt``, and the labels file for .npy."""
    import pandas as pd

    if fmt == "npz":
        return save_table(tmp_path / "d.npz", X, y), None
    if fmt == "npz-csr":
        return save_table(tmp_path / "d.npz", sp.csr_matrix(np.where(np.abs(X) > 1.5, X, 0.0)), y), None
    if fmt == "npz-plain":  # np.savez: stored, not compressed
        np.savez(tmp_path / "d.npz", X=X, y=y)
        return tmp_path / "d.npz", None
    if fmt == "npy":
        np.save(tmp_path / "d.npy", X)
        np.save(tmp_path / "y.npy", y)
        return tmp_path / "d.npy", tmp_path / "y.npy"
    frame = pd.DataFrame({**{f"f{j}": X[:, j] for j in range(X.shape[1])}, "y": y})
    if fmt == "csv":
        frame.to_csv(tmp_path / "d.csv", index=False)
        return tmp_path / "d.csv", None
    frame.to_parquet(tmp_path / "d.parquet", row_group_size=500)
    return tmp_path / "d.parquet", None


def _reference(path, fmt: str, labels):
    """The same table read whole without dpadapt's readers."""
    import pandas as pd

    if fmt.startswith("npz"):
        with np.load(path) as z:
            X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"])) if "data" in z else z["X"]
            return X, z["y"]
    if fmt == "npy":
        return np.load(path), np.load(labels)
    frame = pd.read_csv(path, float_precision="round_trip") if fmt == "csv" else pd.read_parquet(path)
    return frame.drop(columns="y").to_numpy(dtype=float), frame["y"].to_numpy()


def _plan(n: int, d: int, epsilon=None):
    """A receiver's request for a source of n rows (its own d-feature rows drawn here) and the source's plan."""
    config = sound.Config(epsilon=epsilon, classes=(0, 1, 2))
    req = sound.request(np.random.default_rng(0).normal(size=(300, d)), config, n)
    return sound.plan(config, {"request": req, "n_source": n}), req


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_streamed_release_equals_the_in_memory_one(tmp_path, rng, fmt):
    X, y = _data(rng)
    path, labels = _write(tmp_path, fmt, X, y)
    source = open_source(path, labels=labels, rows=700)
    assert (source.n_rows, source.n_features, source.labelled) == (3000, 6, True)
    sizes = [chunk.shape[0] for chunk, _ in source]
    assert len(sizes) >= 5 and max(sizes) <= 700 and sum(sizes) == 3000  # chunk by chunk
    Xr, yr = _reference(path, fmt, labels)
    exact, req = _plan(3000, 6)
    a, b = sound.release(exact, req, source), sound.release(exact, req, Xr, yr)
    assert set(a.arrays) == set(b.arrays) >= {"sums", "counts"}
    for name in a.arrays:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-12, atol=1e-12)
    private, req = _plan(3000, 6, epsilon=8.0)  # the same noise on the same sums: the same release
    noisy = [sound.release(private, req, s, t, random_streams(3, reproducible_noise=True)[1]) for s, t in ((source, None), (Xr, yr))]
    for name in noisy[0].arrays:
        np.testing.assert_allclose(noisy[0][name], noisy[1][name], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_table_reads_every_format_through_the_stream(tmp_path, rng, fmt):
    X, y = _data(rng, n=500)
    path, labels = _write(tmp_path, fmt, X, y)
    table = load_table(path, labels=labels)
    Xr, yr = _reference(path, fmt, labels)
    dense = table.X.toarray() if sp.issparse(table.X) else table.X
    np.testing.assert_array_equal(dense, Xr.toarray() if sp.issparse(Xr) else Xr)
    np.testing.assert_array_equal(table.y, yr)


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_schema_table_streams_the_rows_read_table_maps(tmp_path, rng, suffix):
    from dpadapt.tables import read_table, schema_from_dict

    X, y = _data(rng, n=2000)
    path, _ = _write(tmp_path, suffix, X, y)
    schema = schema_from_dict({"label": {"column": "y", "classes": ["0", "1", "2"]},
                               "columns": [{"name": f"f{j}", "type": "numeric", "range": [-6, 6]} for j in range(6)]})
    source = open_schema_table(path, schema, rows=300)
    assert (source.n_rows, source.n_features) == (2000, 6)
    Xs, ys = materialize(source)
    whole = read_table(path, schema)
    np.testing.assert_array_equal(Xs, whole.X)
    np.testing.assert_array_equal(ys, whole.y)
    plan, req = _plan(2000, 6)
    a, b = sound.release(plan, req, source), sound.release(plan, req, whole.X, whole.y)
    for name in a.arrays:
        np.testing.assert_allclose(a[name], b[name], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt", ["npz", "csv", "npy"])
def test_the_memory_of_a_streamed_release_does_not_grow_with_the_file(tmp_path, rng, fmt):
    """Traced peak of the release on n and 4n rows, 500-row chunks: a reader that held the file would grow 4×."""
    peaks = []
    for n in (4000, 16000):
        X, y = _data(rng, n=n, d=40)
        sub = tmp_path / str(n)
        sub.mkdir()
        path, labels = _write(sub, fmt, X, y)
        del X, y
        source = open_source(path, labels=labels, rows=500)
        plan, req = _plan(n, 40)
        tracemalloc.start()
        sound.release(plan, req, source)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_a_bad_file_is_one_line_and_a_miscounted_csv_is_refused(tmp_path):
    bad = tmp_path / "b.csv"
    bad.write_text("a,b,y\n1,2,0\n\n3,4,1\n")
    with pytest.raises(ValueError, match="line 3: blank line"):
        materialize(open_source(bad))
    text = tmp_path / "t.csv"
    text.write_text("a,b,y\n1,x,0\n")
    with pytest.raises(ValueError, match="column 'b' is not numeric"):
        materialize(open_source(text))
    np.savez(tmp_path / "obj.npz", X=np.array([[object()]], dtype=object))
    with pytest.raises(ValueError, match="pickle"):
        open_source(tmp_path / "obj.npz")
    np.save(tmp_path / "x.npy", np.zeros((3, 2)))
    np.save(tmp_path / "y.npy", np.zeros(4))
    with pytest.raises(ValueError, match="4 labels for 3 rows"):
        open_source(tmp_path / "x.npy", labels=tmp_path / "y.npy")
    with pytest.raises(ValueError, match="separate labels are for .npy"):
        open_source(bad, labels=tmp_path / "y.npy")


def test_the_cli_releases_from_every_format(tmp_path, rng, monkeypatch):
    from dpadapt.cli.main import main

    monkeypatch.chdir(tmp_path)
    X, y = _data(rng, n=1500)
    assert main(["budget", "set", "--party", "source", "--dataset-id", "d", "--epsilon", "100", "--delta", "1e-3",
                 "--ledger", "l.sqlite"]) == 0
    config = sound.Config(epsilon=8.0, delta=1e-6, classes=(0, 1, 2))
    sound.request(X[:300], config, 1500).save(tmp_path / "request.release")  # the receiver's, made on its own rows
    for fmt in FORMATS:
        sub = tmp_path / fmt
        sub.mkdir()
        path, labels = _write(sub, fmt, X, y)
        argv = ["release", "sound", "--request", "request.release", "--data", str(path), "--classes", "0,1,2", "--epsilon", "8",
                "--delta", "1e-6", "--out", str(sub / "r.release"), "--ledger", "l.sqlite", "--dataset-id", "d"]
        assert main(argv + (["--label-file", str(labels)] if labels else [])) == 0, fmt
    assert main(["release", "sound", "--request", "request.release", "--data", str(tmp_path / "npy" / "d.npy"),
                 "--classes", "0,1,2", "--epsilon", "8", "--delta", "1e-6", "--out", "x.release", "--ledger", "l.sqlite",
                 "--dataset-id", "d"]) == 1  # .npy without --label-file: no labels, refused in one line
