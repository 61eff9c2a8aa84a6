"""Attacks outside the noisy arrays: what decides whether a release happens, and what a release file says beside its
noise. Each test runs one attack (D vs D′) through the command line or the library; the generic comparison of whole
release files for every registered route is ``tests/test_attacks.py``."""

from __future__ import annotations

import numpy as np
import pytest

from dpadapt.cli.main import main
from dpadapt.io import save_table
from dpadapt.privacy.ledger import Ledger, fingerprint


def _request(folder, classes: str = "0,1", n: int = 120, d: int = 4, extra=()) -> str:
    rows = np.clip(np.random.default_rng(3).normal(size=(40, d)), -1, 1)
    save_table(folder / "receiver.npz", rows)
    out = folder / "request.release"
    assert main(["request", "--data", str(folder / "receiver.npz"), "--classes", classes, "--n-source", str(n),
                 "--epsilon", "2", "--delta", "1e-5", "--out", str(out), "--force", *extra]) == 0
    return str(out)


def _d_and_d_prime(folder, n: int = 120, d: int = 4) -> dict[str, str]:
    """D: labels 0 and 1 only; D′: record 0 relabelled 2 (a label outside the request's label set)."""
    rng = np.random.default_rng(5)
    X = np.clip(rng.normal(size=(n, d)), -1, 1)
    y = np.arange(n) % 2
    y_prime = y.copy()
    y_prime[0] = 2
    files = {}
    for name, labels in (("d", y), ("d_prime", y_prime)):
        save_table(folder / f"{name}.npz", X, labels)
        Ledger(folder / "ledger.sqlite").set_budget("source", fingerprint(folder / f"{name}.npz"), 100.0, 1e-3)
        files[name] = str(folder / f"{name}.npz")
    return files


def _release_codes(folder, request: str, files: dict, *extra: str) -> list[int]:
    return [main(["release", "sound", "--request", request, "--data", files[name], "--epsilon", "1", "--delta", "1e-5",
                  "--out", str(folder / f"{name}.release"), "--force", *extra]) for name in ("d", "d_prime")]


def test_the_request_does_not_choose_the_sources_label_set(tmp_path, monkeypatch, capsys):
    """Hole 1: a receiver asks for the label set (0, 1). Were the source's label set taken from the request, D (no
    label 2) would be released and D′ (one record labelled 2) refused: the receiver would learn with certainty that
    some record has label 2. Without its own declaration the source refuses both, before reading a row."""
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    files = _d_and_d_prime(tmp_path)
    request = _request(tmp_path, "0,1")
    capsys.readouterr()
    assert _release_codes(tmp_path, request, files) == [1, 1]
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and errors[0] == errors[1] and "--classes" in errors[0], errors
    # a source that declares the label set it holds, (0, 1, 2): the request for (0, 1) is refused for D and D′ alike
    assert _release_codes(tmp_path, request, files, "--classes", "0,1,2") == [1, 1]
    errors = capsys.readouterr().err.strip().splitlines()
    assert errors[0] == errors[1] and "label set" in errors[0]


def test_declared_classes_are_parsed_as_a_list_in_the_agreement_check(tmp_path, monkeypatch, capsys):
    """Hole 2: ``--classes 0,1`` is the list (0, 1) in every check (it was compared character by character, so a source
    that declared its label set could not release at all); a request for (0, 1) is then released from D."""
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    files = _d_and_d_prime(tmp_path)
    request = _request(tmp_path, "0,1")
    code = main(["release", "sound", "--request", request, "--data", files["d"], "--classes", "0,1", "--epsilon", "1",
                 "--delta", "1e-5", "--out", str(tmp_path / "d.release")])
    assert code == 0, capsys.readouterr().err
    assert main(["release", "sound", "--request", request, "--data", files["d"], "--classes", "1,0", "--epsilon", "1",
                 "--delta", "1e-5", "--out", str(tmp_path / "swapped.release")]) == 1  # another order: refused
    assert "1, 0" in capsys.readouterr().err


def test_agreement_class_names_parse_a_comma_separated_option():
    import argparse

    from dpadapt.cli.agreement import class_names

    assert class_names(None, argparse.Namespace(classes="0,1")) == [0, 1]
    assert class_names(None, argparse.Namespace(classes="a, b")) == ["a", "b"]


# --- hole 3: a patient-level release states no row count ---------------------------------------------------------


def _public_fields(path) -> dict:
    """Everything of a release file but its noisy values, its id and its time."""
    from dpadapt.release import Release

    rel = Release.load(path)
    return {"method": rel.method, "kind": rel.kind, "owner": rel.owner, "params": rel.params,
            "guarantee": rel.guarantee.to_dict(), "shapes": {k: (v.dtype.str, v.shape) for k, v in rel.arrays.items()}}


@pytest.mark.parametrize("method", ["sound", "dpot"])
def test_patient_level_release_files_do_not_tell_a_patients_row_count(method, tmp_path, monkeypatch, capsys):
    """Hole 3: D (300 patients, one row each) and D′ (patient 0 with 3 rows) under ``--rows-per-patient 3`` are
    neighbours of the patient-level relation: their release files agree in every field but the noise (the bounded
    row count, 300 vs 302, was published as ``n_source``)."""
    import csv

    from test_hospitals import export, schema_text

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    (tmp_path / "schema.toml").write_text(schema_text())
    export(tmp_path / "d.csv", 300, 0, "SRC")
    rows = list(csv.reader(open(tmp_path / "d.csv", newline="")))
    with open(tmp_path / "d_prime.csv", "w", newline="") as fh:
        csv.writer(fh).writerows(rows + [[rows[1][0], *r[1:]] for r in rows[5:7]])  # patient 0 gets two more rows
    export(tmp_path / "target.csv", 100, 5, "TGT", labelled=False)
    S = ["--schema", "schema.toml"]
    assert main(["request", "--data", "target.csv", *S, "--n-source", "300", "--epsilon", "2", "--delta", "1e-5",
                 "--design", "prototypes" if method == "dpot" else "auto", "--out", "other.release"]) == 0
    extra = ["--request", "other.release"]
    for name in ("d", "d_prime"):
        Ledger(tmp_path / "ledger.sqlite").set_budget("source", fingerprint(tmp_path / f"{name}.csv"), 100.0, 0.5)
        assert main(["release", method, "--data", f"{name}.csv", *S, *extra, "--epsilon", "2", "--delta", "1e-5",
                     "--rows-per-patient", "3", "--out", f"{name}.release"]) == 0, capsys.readouterr().err
        # the per-row ε search plans many trial ε; only the executed plan's mismatch with the request is said
        assert capsys.readouterr().err.count("designed for") <= 1
    d, d_prime = _public_fields("d.release"), _public_fields("d_prime.release")
    assert d == d_prime
    assert d["guarantee"]["unit"] == "patient" and "n_source" not in d["params"]
    # δ between 1/302 and 1/300: compared with the 3 × 300 rows the patients may have, not with the 300 vs 302 rows
    # they have — the same answer for D and D′ (a refusal, δ ≥ 1/900)
    codes = [main(["release", method, "--data", f"{name}.csv", *S, *extra, "--epsilon", "2", "--delta", "0.00332",
                   "--rows-per-patient", "3", "--out", f"{name}-delta.release"]) for name in ("d", "d_prime")]
    assert codes == [1, 1], capsys.readouterr().err


# --- hole 4: a received file's declared sizes are checked before anything is inflated or parsed ------------------

MB = 1024**2


def _zip(path, members: dict[str, bytes], compress: bool = False) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _npy(shape, dtype="<f8", payload: bytes = b"") -> bytes:
    import io

    from numpy.lib import format as npy

    buf = io.BytesIO()
    npy.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buf.getvalue() + payload


def _bomb(path) -> None:
    """A 50 MB member that declares 4 GB inflated (the 32-bit size field of its directory entry patched)."""
    import struct

    _zip(path, {"__dpadapt_meta__.npy": _npy((2,), "|u1", b"{}"), "sums.npy": _npy((6_000_000,), "<f8",
                                                                               np.random.default_rng(0).bytes(48_000_000))})
    raw = bytearray(path.read_bytes())
    pos = 0
    while True:  # patch the uncompressed size (offset 24) of the member's central directory entry
        pos = raw.find(b"PK\x01\x02", pos)
        name_len = struct.unpack("<H", raw[pos + 28:pos + 30])[0]
        if raw[pos + 46:pos + 46 + name_len] == b"sums.npy":
            raw[pos + 24:pos + 28] = struct.pack("<I", 0xFFFF0000)
            break
        pos += 4
    path.write_bytes(bytes(raw))


HOSTILE = {
    "zip bomb": _bomb,
    "50 MB header": lambda p: _zip(p, {"__dpadapt_meta__.npy": _npy((50 * MB,), "|u1", b"[" * (50 * MB))}),
    "array header lies": lambda p: _zip(p, {"__dpadapt_meta__.npy": _npy((2,), "|u1", b"{}"),
                                            "sums.npy": _npy((10**12,), "<f8", b"\0" * (50 * MB))}),
    "50 MB of honest floats": lambda p: _zip(p, {"__dpadapt_meta__.npy": _npy((2,), "|u1", b"{}"),
                                                 "mean.npy": _npy((50 * MB // 8,), "<f8", b"\0" * (50 * MB))}),
    "not a zip": lambda p: p.write_bytes(b"\0" * (50 * MB)),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_50mb_hostile_request_is_refused_fast_in_little_memory(kind, tmp_path, monkeypatch, capsys):
    """Hole 4: a 50 MB hostile request given to ``dpadapt release sound`` is refused in one line, in under a second
    and with under 100 MB of extra memory (peak traced allocation), before anything is inflated or parsed."""
    import time
    import tracemalloc

    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    files = _d_and_d_prime(tmp_path)
    HOSTILE[kind](tmp_path / "hostile.release")
    assert (tmp_path / "hostile.release").stat().st_size >= 45 * MB
    argv = ["release", "sound", "--request", str(tmp_path / "hostile.release"), "--data", files["d"], "--classes", "0,1",
            "--epsilon", "1", "--delta", "1e-5", "--out", str(tmp_path / "out.release")]
    # a first refusal, of a 16 kB request, imports what the command needs (not measured: the refusal is)
    _zip(tmp_path / "small.release", {"__dpadapt_meta__.npy": _npy((2,), "|u1", b"{}"),
                                      "mean.npy": _npy((2048,), "<f8", bytes(16384))})
    assert main([*argv[:2], "--request", str(tmp_path / "small.release"), *argv[4:]]) == 1
    capsys.readouterr()
    tracemalloc.start()
    start = time.perf_counter()
    try:
        code = main(argv)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    err = capsys.readouterr().err.strip()
    assert code == 1 and err.count("\n") == 0 and "Traceback" not in err, err
    assert elapsed < 1.0 and peak < 100 * MB, (kind, elapsed, peak / MB)
    assert not (tmp_path / "out.release").exists()


@pytest.mark.parametrize("kind", ["zip bomb", "50 MB header", "array header lies", "not a zip"])
def test_a_50mb_hostile_release_is_refused_by_the_loader(kind, tmp_path):
    """The same files given as a release (any receiver's ``Release.load``): a one-line ReleaseError, fast."""
    import time

    from dpadapt.release import Release, ReleaseError

    HOSTILE[kind](tmp_path / "hostile.release")
    start = time.perf_counter()
    with pytest.raises(ReleaseError) as exc:
        Release.load(tmp_path / "hostile.release")
    assert time.perf_counter() - start < 1.0 and "\n" not in str(exc.value)


def test_a_real_zip_bomb_is_refused_before_it_is_inflated(tmp_path):
    """64 MB of zeros deflate to ~64 kB: refused from the declared ratio, without inflating the member."""
    import time

    from dpadapt.release import Release, ReleaseError

    _zip(tmp_path / "bomb.release", {"__dpadapt_meta__.npy": _npy((2,), "|u1", b"{}"),
                                     "sums.npy": _npy((8 * MB,), "<f8", bytes(64 * MB))}, compress=True)
    assert (tmp_path / "bomb.release").stat().st_size < MB
    start = time.perf_counter()
    with pytest.raises(ReleaseError, match="zip bomb"):
        Release.load(tmp_path / "bomb.release")
    assert time.perf_counter() - start < 0.5


def test_a_deeply_nested_header_or_schema_is_refused_in_one_line(tmp_path):
    """A JSON header or a TOML/JSON schema nested 100 000 deep: one line, never RecursionError."""
    import json

    from dpadapt.release import Release, ReleaseError
    from dpadapt.tables import load_schema

    depth = 100_000
    _zip(tmp_path / "deep.release", {"__dpadapt_meta__.npy": _npy((2 * depth,), "|u1", b"[" * depth + b"]" * depth)})
    with pytest.raises(ReleaseError, match="nested deeper"):
        Release.load(tmp_path / "deep.release")
    shallow = {"format": "dpadapt-release"}
    for _ in range(200):
        shallow = {"a": shallow}
    text = json.dumps(shallow).encode()
    _zip(tmp_path / "deep2.release", {"__dpadapt_meta__.npy": _npy((len(text),), "|u1", text)})
    with pytest.raises(ReleaseError, match="nested deeper"):
        Release.load(tmp_path / "deep2.release")
    (tmp_path / "deep.toml").write_text("x = " + "[" * depth + "]" * depth + "\n")
    (tmp_path / "deep.json").write_text("[" * depth + "]" * depth)
    for name in ("deep.toml", "deep.json"):
        with pytest.raises(ValueError) as exc:
            load_schema(tmp_path / name)
        assert "nested" in str(exc.value) and "\n" not in str(exc.value)


# --- hole 5: a valid guarantee only with noise from the vetted samplers --------------------------------------------


@pytest.mark.parametrize("algorithm", ["frank_wolfe", "mirror_descent", "single_stage"])
@pytest.mark.parametrize("mode", ["sound", "paper"])
def test_valid_discrepancy_guarantees_draw_no_float_noise(algorithm, mode, monkeypatch):
    """Hole 5: every discrepancy guarantee that is marked valid (paper mode included) draws its noise from the vetted
    samplers of ``privacy/mechanisms.py`` (the lattice discrete samplers), never from numpy's float sampler — the
    floating-point attack the sound releases are protected from."""
    import warnings

    from dpadapt import routes
    from dpadapt.discrepancy import DiscrepancyRegressor
    from dpadapt.privacy import mechanisms

    def float_sampler(noise):
        raise AssertionError("noise drawn from numpy's float sampler")

    monkeypatch.setattr(mechanisms, "_noise_generator", float_sampler)
    data = routes.regression(0)
    est = DiscrepancyRegressor(epsilon=1.0, delta=1e-5, algorithm=algorithm, K=10, privacy_mode=mode, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit_domains(data["Xs"], data["ys"], data["Xt"], data["yt"])
    assert all(g.valid for g in est.guarantees_.values()), [g.reasons for g in est.guarantees_.values()]
    assert "float" not in est.guarantees_["target"].theorem


# --- hole 6: add/remove requests from the command line -------------------------------------------------------------


@pytest.mark.parametrize("design", [[], ["--n-design", "100"]])
def test_add_remove_request_from_the_cli_and_release_files_independent_of_n(design, tmp_path, monkeypatch, capsys):
    """Hole 6: ``dpadapt request --relation add_remove`` designs for a public size (``--n-source`` read as the public
    estimate, or ``--n-design``); the source releases under add/remove, and D vs D minus record 0 give release files
    identical in every public field (n is not stated)."""
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    files = _d_and_d_prime(tmp_path)
    rng = np.random.default_rng(5)
    X = np.clip(rng.normal(size=(120, 4)), -1, 1)
    save_table(tmp_path / "d.npz", X, np.arange(120) % 2)
    save_table(tmp_path / "d_minus.npz", X[1:], (np.arange(120) % 2)[1:])
    Ledger(tmp_path / "ledger.sqlite").set_budget("source", fingerprint(tmp_path / "d_minus.npz"), 100.0, 1e-3)
    files["d_prime"] = str(tmp_path / "d_minus.npz")
    request = _request(tmp_path, "0,1", extra=["--relation", "add_remove", *design])
    assert _release_codes(tmp_path, request, files, "--classes", "0,1", "--relation", "add_remove") == [0, 0], \
        capsys.readouterr().err
    d, d_minus = _public_fields(tmp_path / "d.release"), _public_fields(tmp_path / "d_prime.release")
    assert d == d_minus and d["guarantee"]["relation"] == "add_remove" and "n_source" not in d["params"]


def test_request_with_unequal_sources_under_add_remove_needs_n_design(tmp_path, monkeypatch, capsys):
    save_table(tmp_path / "receiver.npz", np.random.default_rng(3).normal(size=(40, 4)))
    base = ["request", "--data", str(tmp_path / "receiver.npz"), "--classes", "0,1", "--n-source", "100", "--n-source",
            "200", "--epsilon", "2", "--delta", "1e-5", "--relation", "add_remove", "--out", str(tmp_path / "r.release")]
    capsys.readouterr()
    assert main(base) == 1 and "--n-design" in capsys.readouterr().err
    assert main([*base, "--n-design", "150"]) == 0
