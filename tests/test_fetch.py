"""Fetchers, offline: conversions on tiny synthetic originals, checksums, cache, end-to-end via file://."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import sys

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from dpadapt.cli.main import main
from dpadapt.datasets import fetch as F
from dpadapt.datasets import load_domain, load_pair


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_office_mat_conversion(tmp_path, rng):
    feas = rng.random((6, 5)) * 80
    labels = np.array([[1], [2], [10], [3], [1], [5]], dtype=np.uint8)
    scipy.io.savemat(tmp_path / "dslr.mat", {"feas": feas, "labels": labels})
    out = F.convert_office_mat(tmp_path / "dslr.mat", "feas")
    assert out["X"].dtype == np.float32 and out["y"].dtype == np.int64
    np.testing.assert_array_equal(out["X"], feas.astype(np.float32))  # unchanged: no scaling
    np.testing.assert_array_equal(out["y"], [0, 1, 9, 2, 0, 4])  # 1..10 → 0..9
    # GoogLeNet stores labels as a 1 × n row
    scipy.io.savemat(tmp_path / "g.mat", {"fts": feas.astype(np.float32), "labels": labels.T.astype(np.int64)})
    np.testing.assert_array_equal(F.convert_office_mat(tmp_path / "g.mat", "fts")["y"], [0, 1, 9, 2, 0, 4])
    scipy.io.savemat(tmp_path / "bad.mat", {"fts": feas, "labels": np.zeros((6, 1))})
    with pytest.raises(ValueError, match="1..10"):
        F.convert_office_mat(tmp_path / "bad.mat", "fts")


def test_msda_mat_conversion(tmp_path, rng):
    fts = rng.random((4, 3))
    fts /= fts.sum(axis=1, keepdims=True)
    scipy.io.savemat(tmp_path / "books_400.mat", {"fts": fts, "labels": np.array([[1], [1], [0], [0]], dtype=np.uint8)})
    out = F.convert_msda_mat(tmp_path / "books_400.mat")
    np.testing.assert_allclose(out["X"], fts.astype(np.float32))
    np.testing.assert_array_equal(out["y"], [1, 1, 0, 0])


def test_bow_svmlight_conversion(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    train = sp.csr_matrix(np.array([[0, 2, 0, 1], [3, 0, 0, 0], [0, 0, 1, 1]], dtype=float))
    test = sp.csr_matrix(np.array([[1, 0, 0, 0], [0, 0, 0, 5]], dtype=float))
    dump_svmlight_file(train, np.array([1, -1, 1]), str(tmp_path / "b_train.svmlight"), zero_based=True)
    dump_svmlight_file(test, np.array([-1, 1]), str(tmp_path / "b_test.svmlight"), zero_based=True)
    out = F.convert_bow_svmlight(tmp_path / "b_train.svmlight", tmp_path / "b_test.svmlight", n_features=4)
    X = sp.csr_matrix((out["data"], out["indices"], out["indptr"]), shape=tuple(out["shape"]))
    np.testing.assert_array_equal(X.toarray(), np.vstack([train.toarray(), test.toarray()]))
    assert out["data"].dtype == np.float32 and out["indices"].dtype == np.int32 and out["indptr"].dtype == np.int64
    np.testing.assert_array_equal(out["y"], [1, 0, 1, 0, 1])
    np.testing.assert_array_equal(out["split"], [0, 0, 0, 1, 1])
    assert X.has_sorted_indices


def _write_idx(path, arr: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    with gzip.open(path, "wb") as fh:
        fh.write(header + arr.astype(np.uint8).tobytes())


def test_read_idx(tmp_path, rng):
    imgs = rng.integers(0, 256, size=(3, 28, 28))
    _write_idx(tmp_path / "i.gz", imgs)
    np.testing.assert_array_equal(F.read_idx(tmp_path / "i.gz"), imgs)
    (tmp_path / "junk").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="idx"):
        F.read_idx(tmp_path / "junk")
    with gzip.open(tmp_path / "short.gz", "wb") as fh:
        fh.write(bytes([0, 0, 8, 1]) + (10).to_bytes(4, "big") + b"\x00" * 3)
    with pytest.raises(ValueError, match="announces 10"):
        F.read_idx(tmp_path / "short.gz")


def test_mnist_conversion(tmp_path, rng):
    pytest.importorskip("PIL")
    from PIL import Image

    sprites = []
    train = rng.integers(0, 256, size=(5, 784)).astype(np.uint8)
    for i, block in enumerate((train[:3], train[3:])):
        Image.fromarray(block, mode="L").save(tmp_path / f"s{i}.png")
        sprites.append(tmp_path / f"s{i}.png")
    test = rng.integers(0, 256, size=(2, 28, 28))
    _write_idx(tmp_path / "tl.gz", np.array([3, 1, 4, 1, 5]))
    _write_idx(tmp_path / "ti.gz", test)
    _write_idx(tmp_path / "tel.gz", np.array([9, 2]))
    out = F.convert_mnist(sprites, tmp_path / "tl.gz", tmp_path / "ti.gz", tmp_path / "tel.gz")
    np.testing.assert_allclose(out["X_train"], train / 255.0, rtol=1e-6)
    np.testing.assert_allclose(out["X_test"], test.reshape(2, 784) / 255.0, rtol=1e-6)
    assert out["X"].shape == (7, 784) and out["X"].dtype == np.float32
    np.testing.assert_array_equal(out["y"], [3, 1, 4, 1, 5, 9, 2])
    # a sprite stored transposed (one image per column) is read the same way
    Image.fromarray(train[:3].T.copy(), mode="L").save(tmp_path / "t.png")
    np.testing.assert_array_equal(F.read_sprite(tmp_path / "t.png"), train[:3])


def test_h5_readers_need_h5py(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "h5py", None)  # simulate h5py not installed
    with pytest.raises(ImportError, match="pip install h5py"):
        F.convert_usps_h5(tmp_path / "usps.h5")
    with pytest.raises(ImportError, match="pip install h5py"):
        F.convert_jda_mat(tmp_path / "MNIST_vs_USPS.mat")


def test_usps_h5_conversion(tmp_path, rng):
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "usps.h5", "w") as f:
        for name, n in (("train", 4), ("test", 2)):
            g = f.create_group(name)
            g["data"] = rng.random((n, 256)).astype(np.float32)
            g["target"] = np.arange(n)
    out = F.convert_usps_h5(tmp_path / "usps.h5")
    assert out["X"].shape == (6, 256) and out["X_train"].shape == (4, 256)
    np.testing.assert_array_equal(out["y"], [0, 1, 2, 3, 0, 1])


def test_download_checksum_and_cache(tmp_path):
    original = tmp_path / "remote" / "file.bin"
    original.parent.mkdir()
    original.write_bytes(b"some public data")
    url = original.as_uri()
    dest = tmp_path / "cache" / "file.bin"
    with pytest.raises(F.FetchError, match="checksum mismatch"):
        F.download(url, "0" * 64, dest)
    assert not dest.exists() and not list(dest.parent.glob("*.part"))  # nothing kept
    got = F.download(url, _sha(original), dest)
    assert got.read_bytes() == b"some public data"
    original.unlink()  # cached: no second download
    assert F.download(url, _sha(got), dest) == dest
    with pytest.raises(F.FetchError, match="could not download"):
        F.download(url, "1" * 64, tmp_path / "cache" / "other.bin")


def test_cache_dir_resolution(monkeypatch, tmp_path):
    assert F.cache_dir(tmp_path) == tmp_path
    monkeypatch.setenv("DPADAPT_CACHE", str(tmp_path / "c"))
    assert F.cache_dir() == tmp_path / "c"
    monkeypatch.delenv("DPADAPT_CACHE")
    assert "dpadapt" in str(F.cache_dir())


def test_sources_match_manifest_layout():
    assert F.DECAF6["webcam"].url == (
        "https://raw.githubusercontent.com/jindongwang/transferlearning/de0cd293cd4cc0e2f027a1cc58493ba4df07d6a8/"
        "code/traditional/TCA/data/webcam.mat"
    )
    assert len(F.MNIST_SPRITES) == 20 and F.MNIST_SPRITES[19].path.endswith("mnist_batch_19.png")
    assert F.MSDA400["electronics"].path.endswith("elec_400.mat")
    every = [*F.SURF.values(), *F.DECAF6.values(), *F.GOOGLENET.values(), *F.BOW5000_SOURCES.values(),
             *F.MSDA400.values(), *F.MNIST_IDX.values(), *F.MNIST_SPRITES, F.USPS, F.JDA]
    assert all(len(s.sha256) == 64 and len(s.commit) == 40 for s in every)
    assert len({s.sha256 for s in every}) == len(every)
    from dpadapt.datasets import DATASETS

    assert set(F.RECIPES) == set(DATASETS)


@pytest.fixture
def offline_decaf(tmp_path, rng, monkeypatch):
    """Serve synthetic DeCAF6 originals from a file:// 'GitHub' and point the sources at them."""
    remote = tmp_path / "github"
    monkeypatch.setattr(F, "RAW_URL", remote.as_uri() + "/{repo}/{commit}/{path}")
    for domain, n in (("dslr", 7), ("webcam", 9)):
        src = F.DECAF6[domain]
        path = remote / src.repo / src.commit / src.path
        path.parent.mkdir(parents=True, exist_ok=True)
        scipy.io.savemat(path, {"feas": rng.random((n, 12)), "labels": (np.arange(n) % 10 + 1)[:, None].astype(np.uint8)})
        monkeypatch.setitem(F.DECAF6, domain, dataclasses.replace(src, sha256=_sha(path)))
    monkeypatch.setitem(F.RECIPES, "office_caltech10/decaf6", F._office(F.DECAF6, "feas"))
    return tmp_path


def test_fetch_end_to_end_offline(offline_decaf):
    root, cache = offline_decaf / "data", offline_decaf / "cache"
    paths = F.fetch("decaf6", root, cache=cache)
    assert [p.name for p in paths] == ["dslr.npz", "webcam.npz"]
    assert len(list(cache.iterdir())) == 2
    pair = load_pair("decaf6", "D", "W", root=root)
    assert pair.Xs.shape == (7, 12) and pair.Xt.shape == (9, 12)
    np.testing.assert_array_equal(pair.ys, np.arange(7) % 10)
    # existing files are kept; only asked-for domains are fetched
    assert F.fetch("decaf6", root, domains=["webcam"], cache=cache) == [root / "office_caltech10/decaf6/webcam.npz"]
    with pytest.raises(KeyError, match="no domain"):
        F.fetch("decaf6", root, domains=["amazon"], cache=cache)


def test_fetch_cli(offline_decaf, capsys):
    root = offline_decaf / "cli-data"
    assert main(["datasets", "fetch", "decaf6", "--root", str(root), "--cache", str(offline_decaf / "c"), "--domains", "dslr"]) == 0
    assert "dslr.npz" in capsys.readouterr().out
    assert load_domain("decaf6", "dslr", root).X.shape == (7, 12)


def test_fetch_cli_checksum_mismatch(offline_decaf, monkeypatch, capsys):
    monkeypatch.setitem(F.DECAF6, "dslr", dataclasses.replace(F.DECAF6["dslr"], sha256="f" * 64))
    monkeypatch.setitem(F.RECIPES, "office_caltech10/decaf6", F._office(F.DECAF6, "feas"))
    rc = main(["datasets", "fetch", "decaf6", "--root", str(offline_decaf / "d"), "--cache", str(offline_decaf / "c2")])
    assert rc == 1
    assert "checksum mismatch" in capsys.readouterr().err
    assert not (offline_decaf / "d" / "office_caltech10" / "decaf6" / "dslr.npz").exists()


def test_a_failed_fetch_leaves_no_empty_folders(tmp_path, monkeypatch):
    from dpadapt.datasets import fetch as fetch_module
    from dpadapt.datasets.catalog import dataset_info

    info = dataset_info("mnist_usps")

    def broken(domain, cache):
        raise fetch_module.FetchError("could not download https://example.invalid/x: no network")

    monkeypatch.setitem(fetch_module.RECIPES, info.name, broken)
    with pytest.raises(fetch_module.FetchError):
        fetch_module.fetch("mnist_usps", tmp_path / "data" / "root", cache=tmp_path / "cache" / "dl")
    assert list(tmp_path.iterdir()) == []
