"""Dataset loaders: the real benchmarks (``data_root``) and a synthetic data root (always runs)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from dpadapt.datasets import (
    DATASETS,
    available_datasets,
    dataset_info,
    find_data_root,
    load_domain,
    load_pair,
    parse_task,
    resize_images,
)

#: (n_rows, n_features) per domain, from each folder's MANIFEST.md.
MANIFEST_SHAPES = {
    "office_caltech10/surf": {"amazon": (958, 800), "caltech": (1123, 800), "dslr": (157, 800), "webcam": (295, 800)},
    "office_caltech10/decaf6": {"dslr": (157, 4096), "webcam": (295, 4096)},
    "office_caltech10/googlenet1024": {"amazon": (958, 1024), "dslr": (157, 1024), "webcam": (295, 1024)},
    "amazon_reviews/bow5000": {"books": (6465, 5000), "dvd": (5586, 5000), "electronics": (7681, 5000), "kitchen": (7945, 5000)},
    "amazon_reviews/msda400": {"books": (2000, 400), "dvd": (1999, 400), "electronics": (1998, 400), "kitchen": (1999, 400)},
    "mnist_usps": {"mnist": (70000, 784), "usps": (9298, 256)},
    "mnist_usps/jda_protocol": {"mnist": (2000, 256), "usps": (1800, 256)},
}
BOW_TEST_ROWS = {"books": 4465, "dvd": 3586, "electronics": 5681, "kitchen": 5945}


# --- real data ------------------------------------------------------------------------------------


def test_every_available_dataset_loads_with_manifest_shapes(data_root):
    present = available_datasets(data_root)
    assert set(present) == set(MANIFEST_SHAPES)  # everything in shared/data is listed
    for name, domains in present.items():
        assert set(domains) == set(MANIFEST_SHAPES[name]), name
        for domain in domains:
            d = load_domain(name, domain, data_root)
            assert d.X.shape == MANIFEST_SHAPES[name][domain], (name, domain)
            assert d.y.shape == (d.X.shape[0],) and d.y.dtype == np.int64
            assert d.y.min() == 0 and d.y.max() == DATASETS[name].n_classes - 1


def test_webcam_decaf6(data_root):
    d = load_domain("decaf6", "W", data_root)
    assert d.X.shape == (295, 4096) and d.name == "webcam"
    assert np.unique(d.y).size == 10
    assert np.bincount(d.y).tolist() == [29, 21, 31, 27, 27, 30, 43, 30, 27, 30]
    norms = np.linalg.norm(d.X, axis=1)
    assert norms.min() > 100  # unnormalised DeCAF6 (MANIFEST: row norms ~180-300)


def test_bow5000_split_protocol(data_root):
    pair = load_pair("bow5000", "KT", "DV", root=data_root)
    assert sp.issparse(pair.Xs) and pair.Xs.shape == (2000, 5000)
    assert pair.Xt.shape == (2000, 5000)
    assert pair.Xt_test.shape == (BOW_TEST_ROWS["dvd"], 5000)
    assert np.bincount(pair.ys).tolist() == [1000, 1000]
    assert pair.name == "kitchen->dvd" and pair.n_classes == 2
    for domain, n_test in BOW_TEST_ROWS.items():
        assert load_domain("bow5000", domain, data_root, split="test").X.shape[0] == n_test
    # counts are integral
    assert np.all(pair.Xs.data == np.round(pair.Xs.data))


def test_office_transductive_protocol(data_root):
    pair = load_pair("decaf6", "D", "W", root=data_root)
    assert pair.Xs.shape == (157, 4096) and pair.Xt.shape == (295, 4096)
    assert pair.Xt_test is pair.Xt
    with pytest.raises(ValueError, match="no train/test split"):
        load_pair("decaf6", "D", "W", root=data_root, protocol="split")
    with pytest.raises(ValueError, match="different domains"):
        load_pair("decaf6", "dslr", "D", root=data_root)


def test_usps_resize_to_28(data_root):
    d = load_domain("digits", "usps", data_root, split="train", resize=28)
    assert d.X.shape == (7291, 784) and d.X.dtype == np.float32
    assert 0.0 <= d.X.min() and d.X.max() <= 1.0
    test = load_domain("digits", "usps", data_root, split="test")
    assert test.X.shape == (2007, 256)
    pair = load_pair("digits", "usps", "mnist", root=data_root, resize=28)
    assert pair.Xs.shape == (7291, 784) and pair.Xt.shape == (60000, 784) and pair.Xt_test.shape == (10000, 784)


def test_to_skada(data_root):
    pair = load_pair("decaf6", "W", "D", root=data_root)
    X, y, dom = pair.to_skada()
    assert X.shape == (295 + 157, 4096)
    assert (dom[:295] == 1).all() and (dom[295:] == -2).all()
    assert (y[295:] == -1).all() and (y[:295] == pair.ys).all()


# --- synthetic data root (no shared data needed) --------------------------------------------------


@pytest.fixture
def fake_root(tmp_path, rng):
    """A data root laid out like shared/data with tiny random files."""
    office = tmp_path / "office_caltech10" / "decaf6"
    office.mkdir(parents=True)
    for dom, n in (("dslr", 12), ("webcam", 15)):
        np.savez(office / f"{dom}.npz", X=rng.random((n, 6)).astype(np.float32), y=np.arange(n) % 10)
    amazon = tmp_path / "amazon_reviews" / "bow5000"
    amazon.mkdir(parents=True)
    for dom in ("books", "kitchen"):
        X = sp.random(9, 20, density=0.3, format="csr", random_state=1, dtype=np.float32)
        np.savez(
            amazon / f"{dom}.npz", data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape),
            y=np.arange(9) % 2, split=np.array([0] * 4 + [1] * 5, dtype=np.int8),
        )
    digits = tmp_path / "mnist_usps"
    digits.mkdir()
    Xu = rng.random((10, 16)).astype(np.float32)
    np.savez(digits / "usps.npz", X=Xu, y=np.arange(10), X_train=Xu[:6], y_train=np.arange(6), X_test=Xu[6:], y_test=np.arange(6, 10))
    return tmp_path


def test_fake_root_listing_and_loading(fake_root):
    present = available_datasets(fake_root)
    assert present == {
        "office_caltech10/decaf6": ("dslr", "webcam"),
        "amazon_reviews/bow5000": ("books", "kitchen"),
        "mnist_usps": ("usps",),
    }
    d = load_domain("decaf6", "D", fake_root)
    assert d.X.shape == (12, 6) and d.dataset == "office_caltech10/decaf6"
    pair = load_pair("bow5000", "B", "K", root=fake_root)
    assert sp.issparse(pair.Xs) and pair.Xs.shape == (4, 20) and pair.Xt_test.shape == (5, 20)
    dense = pair.dense()
    assert isinstance(dense.Xs, np.ndarray) and dense.Xs.dtype == np.float64
    np.testing.assert_allclose(dense.Xs, pair.Xs.toarray())
    X, y, dom = pair.to_skada()
    assert sp.issparse(X) and X.shape == (8, 20) and (dom == np.array([1] * 4 + [-2] * 4)).all()
    u = load_domain("digits", "usps", fake_root, split="train", resize=8)
    assert u.X.shape == (6, 64)
    with pytest.raises(ValueError, match="no 'train' split"):
        load_domain("decaf6", "dslr", fake_root, split="train")
    with pytest.raises(FileNotFoundError, match="not found"):
        load_domain("surf", "amazon", fake_root)
    with pytest.raises(KeyError, match="no domain"):
        load_domain("decaf6", "amazonas", fake_root)


def test_data_root_from_environment(fake_root, monkeypatch, tmp_path):
    monkeypatch.setenv("DPADAPT_DATA", str(fake_root))
    assert find_data_root() == fake_root
    assert load_domain("decaf6", "webcam").X.shape == (15, 6)
    monkeypatch.setenv("DPADAPT_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="DPADAPT_DATA"):
        find_data_root()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_data_root(tmp_path / "nowhere")


def test_data_root_not_found(monkeypatch, tmp_path):
    monkeypatch.delenv("DPADAPT_DATA", raising=False)
    monkeypatch.chdir(tmp_path)
    import dpadapt.datasets.catalog as catalog

    monkeypatch.setattr(catalog, "_candidate_roots", lambda: [tmp_path / "shared" / "data"])
    assert find_data_root(required=False) is None
    assert available_datasets() == {}
    with pytest.raises(FileNotFoundError, match="datasets fetch"):
        find_data_root()


def test_dataset_info_aliases():
    assert dataset_info("decaf6").name == "office_caltech10/decaf6"
    assert dataset_info("amazon_reviews/bow5000").n_classes == 2
    assert dataset_info("digits-jda").file("usps") == "usps_1800.npz"
    with pytest.raises(KeyError, match="unknown dataset"):
        dataset_info("imagenet")


@pytest.mark.parametrize(
    "task, expected",
    [("D->W", ("D", "W")), ("dslr→webcam", ("dslr", "webcam")), ("KT:DV", ("KT", "DV")), ("A > C", ("A", "C"))],
)
def test_parse_task(task, expected):
    assert parse_task(task) == expected


def test_parse_task_rejects():
    with pytest.raises(ValueError, match="SOURCE->TARGET"):
        parse_task("DW")


def test_resize_images():
    X = np.zeros((2, 16), dtype=np.float32)
    X[:, 5] = 1.0
    out = resize_images(X, 8)
    assert out.shape == (2, 64) and out.max() <= 1.0 and out.sum() > 0
    assert resize_images(X, 4) is X
    with pytest.raises(ValueError, match="square"):
        resize_images(np.zeros((1, 15)), 4)
