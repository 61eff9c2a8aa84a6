"""Reading and writing a party's data file."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpadapt.io import load_table, save_table


def test_npz_dense_round_trip(tmp_path, rng):
    X, y = rng.normal(size=(7, 3)), rng.integers(0, 2, size=7)
    t = load_table(save_table(tmp_path / "d.npz", X, y))
    np.testing.assert_array_equal(t.X, X)
    np.testing.assert_array_equal(t.y, y)
    assert t.path == tmp_path / "d.npz"


def test_npz_csr_round_trip_and_unlabelled(tmp_path):
    X = sp.random(10, 6, density=0.3, format="csr", random_state=1)
    t = load_table(save_table(tmp_path / "s.npz", X))
    assert sp.issparse(t.X) and t.X.shape == (10, 6)
    assert (t.X != X).nnz == 0
    assert t.y is None
    # labels of −1 mean "unlabelled"
    t = load_table(save_table(tmp_path / "u.npz", X, -np.ones(10, dtype=int)))
    assert t.y is None


def test_npz_without_features(tmp_path):
    np.savez(tmp_path / "bad.npz", Z=np.zeros(3))
    with pytest.raises(ValueError, match="needs an array 'X'"):
        load_table(tmp_path / "bad.npz")
    np.savez(tmp_path / "short.npz", X=np.zeros((3, 2)), y=np.zeros(2))
    with pytest.raises(ValueError, match="2 labels for 3 rows"):
        load_table(tmp_path / "short.npz")


def test_csv_with_label_column(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("a,y,b\n1.0,0,2.0\n3.0,1,4.0\n5.5,1,-1\n")
    t = load_table(path)
    np.testing.assert_array_equal(t.X, [[1.0, 2.0], [3.0, 4.0], [5.5, -1.0]])
    np.testing.assert_array_equal(t.y, [0, 1, 1])
    assert t.y.dtype == np.int64
    t = load_table(path, label_column="b")
    np.testing.assert_array_equal(t.y, [2, 4, -1])
    assert t.X.shape == (3, 2)


def test_csv_without_label_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("f1,f2,f3\n1,2,3\n4,5,6\n")
    t = load_table(path)
    assert t.y is None
    np.testing.assert_array_equal(t.X, [[1, 2, 3], [4, 5, 6]])
    single = tmp_path / "one.csv"
    single.write_text("f1,f2\n1,2\n")
    assert load_table(single).X.shape == (1, 2)


def test_csv_errors(tmp_path):
    only_label = tmp_path / "y.csv"
    only_label.write_text("y\n0\n1\n")
    with pytest.raises(ValueError, match="no feature columns"):
        load_table(only_label)
    ragged = tmp_path / "r.csv"
    ragged.write_text("a,b,c\n1,2\n3,4\n")
    with pytest.raises(ValueError, match="header has 3 columns"):
        load_table(ragged)


def test_unsupported_extension_and_missing(tmp_path):
    path = tmp_path / "d.xlsx"
    path.write_text("x")
    with pytest.raises(ValueError, match="unsupported data file type '.xlsx'"):
        load_table(path)
    with pytest.raises(FileNotFoundError, match="no such data file"):
        load_table(tmp_path / "missing.csv")


def test_bad_files_get_one_clear_error(tmp_path):
    np.savez(tmp_path / "empty.npz")
    with pytest.raises(ValueError, match="empty"):
        load_table(tmp_path / "empty.npz")
    (tmp_path / "labels.csv").write_text("a,b,y\n1,2,cat\n3,4,dog\n")
    with pytest.raises(ValueError, match="not integers.*'cat'.*public label set"):
        load_table(tmp_path / "labels.csv")
    np.savez(tmp_path / "nan.npz", X=np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="NaN"):
        load_table(tmp_path / "nan.npz")
    (tmp_path / "pickle.npz").write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(ValueError, match="not an .npz archive"):
        load_table(tmp_path / "pickle.npz")


def test_real_valued_labels_are_kept_for_regression(tmp_path):
    (tmp_path / "r.csv").write_text("a,y\n1,0.5\n2,1.25\n")
    np.testing.assert_array_equal(load_table(tmp_path / "r.csv").y, [0.5, 1.25])
    (tmp_path / "c.csv").write_text("a,y\n1,0\n2,1\n")
    assert load_table(tmp_path / "c.csv").y.dtype == np.int64
