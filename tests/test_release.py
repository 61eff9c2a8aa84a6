"""Release files: round trip, rejection of damaged / foreign files, and the raw-row check."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np

from dpadapt.container import digest
import pytest

from dpadapt.privacy import Guarantee, gaussian_matrix_release
from dpadapt.release import FORMAT_VERSION, Release, ReleaseError, assert_no_raw_rows, raw_rows_in_release


@pytest.fixture
def release(rng):
    X = rng.normal(size=(20, 5))
    from dpadapt.privacy.mechanisms import NoiseSource

    out = gaussian_matrix_release(X, 2.0, 1.0, 1e-5, NoiseSource(), party="source")
    return Release(
        method="dpot",
        kind="source_projection",
        owner="source",
        arrays={"rows": out.value, "labels": rng.integers(0, 3, size=20)},
        guarantee=out.guarantee,
        params={"clip": 1.0, "dims": (5, 3), "scale": np.float32(0.5), "eps_inf": float("inf")},
    )


def test_round_trip(tmp_path, release):
    path = release.save(tmp_path / "r.npz")
    back = Release.load(path, expect_method="dpot", expect_kind="source_projection")
    assert back.method == "dpot" and back.kind == "source_projection" and back.owner == "source"
    assert back.release_id == release.release_id and back.created == release.created
    assert set(back.arrays) == {"rows", "labels"}
    np.testing.assert_array_equal(back["rows"], release["rows"])
    np.testing.assert_array_equal(back["labels"], release["labels"])
    assert back.guarantee == release.guarantee
    assert back.params == {"clip": 1.0, "dims": [5, 3], "scale": 0.5, "eps_inf": "inf"}
    assert back.digest() == release.digest()
    text = back.report()
    assert "dpot/source_projection" in text and "rows (20, 5)" in text and "Protected party : source" in text
    assert not list(tmp_path.glob("*.tmp-*"))  # atomic write leaves no temporary file


def test_missing_file(tmp_path):
    with pytest.raises(ReleaseError, match="no such file"):
        Release.load(tmp_path / "nope.npz")


def test_truncated_file(tmp_path, release):
    path = release.save(tmp_path / "r.npz")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ReleaseError, match="truncated"):
        Release.load(path)


def test_flipped_bytes(tmp_path, release):
    # flip bytes all over the file: each load must either fail with ReleaseError (never another
    # exception) or — when only zip bookkeeping was hit — return exactly the original content
    path = release.save(tmp_path / "r.npz")
    data = path.read_bytes()
    damaged = tmp_path / "d.npz"
    rejected = 0
    for i in range(0, len(data), 5):
        flipped = bytearray(data)
        flipped[i] ^= 0xFF
        damaged.write_bytes(bytes(flipped))
        try:
            back = Release.load(damaged)
        except ReleaseError:
            rejected += 1
            continue
        assert back.digest() == release.digest()
    assert rejected > 0.7 * len(range(0, len(data), 5))


def _rewrite(path, modify):
    """Re-zip a release after ``modify(arrays)``, keeping the original metadata (and its digest)."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    modify(arrays)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    path.write_bytes(buf.getvalue())


def test_tampered_array(tmp_path, release):
    path = release.save(tmp_path / "r.npz")

    def tamper(arrays):
        arrays["rows"] = arrays["rows"].copy()
        arrays["rows"][0, 0] += 1e-3

    _rewrite(path, tamper)
    with pytest.raises(ReleaseError, match="checksum mismatch"):
        Release.load(path)


def test_tampered_metadata(tmp_path, release):
    path = release.save(tmp_path / "r.npz")

    def inflate_privacy(arrays):
        meta = json.loads(arrays["__dpadapt_meta__"].tobytes())
        meta["guarantee"]["epsilon"] = 0.01  # claim a stronger guarantee than was computed
        arrays["__dpadapt_meta__"] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)

    _rewrite(path, inflate_privacy)
    with pytest.raises(ReleaseError, match="checksum mismatch"):
        Release.load(path)


def test_wrong_format_version(tmp_path, release):
    path = release.save(tmp_path / "r.npz")

    def bump(arrays):
        meta = json.loads(arrays["__dpadapt_meta__"].tobytes())
        meta["format_version"] = FORMAT_VERSION + 1  # as a newer dpadapt would write it (digest recomputed)
        meta["sha256"] = digest(meta, {k: v for k, v in arrays.items() if k != "__dpadapt_meta__"})
        arrays["__dpadapt_meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)

    _rewrite(path, bump)
    with pytest.raises(ReleaseError, match=f"format version {FORMAT_VERSION + 1} is not supported"):
        Release.load(path)


def test_foreign_npz(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, X=np.zeros((2, 2)))
    with pytest.raises(ReleaseError, match="not a dpadapt"):
        Release.load(path)
    txt = tmp_path / "notes.npz"
    txt.write_text("hello")
    with pytest.raises(ReleaseError):
        Release.load(txt)


def test_wrong_expected_method_or_kind(tmp_path, release):
    path = release.save(tmp_path / "r.npz")
    with pytest.raises(ReleaseError, match="expected 'dpswd'"):
        Release.load(path, expect_method="dpswd")
    with pytest.raises(ReleaseError, match="expected 'target_covariance'"):
        Release.load(path, expect_kind="target_covariance")


def test_constructor_checks(release):
    with pytest.raises(ValueError, match="owner"):
        Release("m", "k", "both", {}, release.guarantee)
    with pytest.raises(ValueError, match="protects 'source'"):
        Release("m", "k", "target", {}, release.guarantee)
    with pytest.raises(ValueError, match="may not start"):
        Release("m", "k", "source", {"__x": np.zeros(1)}, release.guarantee)
    with pytest.raises(TypeError, match="object"):
        Release("m", "k", "source", {"x": np.array([{}, 1], dtype=object)}, release.guarantee)
    with pytest.raises(TypeError, match="JSON"):
        Release("m", "k", "source", {}, release.guarantee, params={"f": object()}).save("/dev/null")


def test_assert_no_raw_rows(rng):
    # DeCAF-like rows: large norms, mostly zeros (the case where a naive distance test misses copies)
    X = np.abs(rng.normal(size=(50, 256))) * 20
    X[rng.random(X.shape) < 0.8] = 0
    X[3] = 0  # all-zero rows are ignored
    g = Guarantee.non_private("source")
    noisy = X + rng.normal(scale=0.5, size=X.shape)
    clean = Release("m", "k", "source", {"rows": noisy, "other": np.zeros((4, 7))}, g)
    assert_no_raw_rows(clean, X)
    leaked = noisy.copy()
    leaked[10] = X[17]
    leak64 = Release("m", "k", "source", {"rows": leaked}, g)
    assert raw_rows_in_release(leak64, X) == [("rows", 17)]
    with pytest.raises(AssertionError, match="raw row"):
        assert_no_raw_rows(leak64, X)
    # a raw row cast to float32, or a single row released as a 1-D array, is still a leak
    leak32 = Release("m", "k", "source", {"rows": leaked.astype(np.float32), "one": X[5]}, g)
    assert sorted(raw_rows_in_release(leak32, X)) == [("one", 5), ("rows", 17)]
    # sparse input is accepted
    import scipy.sparse as sp

    assert raw_rows_in_release(leak64, sp.csr_matrix(X)) == [("rows", 17)]


def test_release_zip_really_is_a_zip(tmp_path, release):
    path = release.save(tmp_path / "r.npz")
    with zipfile.ZipFile(path) as zf:
        assert "__dpadapt_meta__.npy" in zf.namelist()


def test_guarantee_details_with_numpy_scalars_round_trip(tmp_path):
    from dpadapt.privacy import accounting as A

    g = Guarantee.from_event(
        A.gaussian_event(2.0, 10), party="target", unit="record", relation="add_remove", delta=1e-5,
        theorem="t", details={"steps": np.int64(10), "clip": np.float32(0.5)},
    )
    r = Release("m", "k", "target", {"a": np.zeros(2)}, g)
    back = Release.load(r.save(tmp_path / "g.npz"))
    assert back.guarantee.details == {"steps": 10, "clip": 0.5}
    assert back.guarantee.epsilon == g.epsilon and back.digest() == r.digest()
