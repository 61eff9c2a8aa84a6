"""Files a party can trust: no pickle ever loaded, signatures, forged and re-signed releases, models.

Uses the test-only "noisy-mean" plugin (tests/_twoparty_plugin.py) through ``$DPADAPT_PLUGINS``.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import stat
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dpadapt import keys, modelio
from dpadapt.datasets.synthetic import make_shifted_blobs
from dpadapt.cli.main import main
from dpadapt.container import digest
from dpadapt.io import save_table
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.ledger import Ledger, fingerprint
from dpadapt.release import Release, ReleaseError

PLUGIN = "_twoparty_plugin"
MARKER_ENV = "DPADAPT_TEST_PWNED"


class Evil:
    """Unpickling this creates the folder named in $DPADAPT_TEST_PWNED (a visible side effect)."""

    def __reduce__(self):
        return (os.mkdir, (os.environ[MARKER_ENV],))


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("DPADAPT_PLUGINS", PLUGIN)
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv(MARKER_ENV, str(tmp_path / "PWNED"))
    Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(3), n_source=200, n_target=150)
    save_table(tmp_path / "source.npz", Xs, ys)
    save_table(tmp_path / "target.npz", Xt, yt)
    Ledger(tmp_path / "ledger.sqlite").set_budget("source", fingerprint(tmp_path / "source.npz"), 100.0, 1e-5)
    return tmp_path


def _malicious_files(where: Path) -> list[Path]:
    """A pickle with a side effect under every extension, a joblib dump, and an npz holding a pickled object array."""
    import joblib

    files = []
    for name in ("evil.release", "evil.joblib", "evil.npz", "evil.pkl", "evil", "evil.model"):
        (where / name).write_bytes(pickle.dumps(Evil()))
        files.append(where / name)
    joblib.dump({"format": "dpadapt-model", "model": Evil()}, where / "dumped.joblib")
    files.append(where / "dumped.joblib")
    buf = io.BytesIO()
    np.savez(buf, __dpadapt_meta__=np.frombuffer(b'{"format": "dpadapt-release"}', dtype=np.uint8),
             X=np.array([Evil()], dtype=object))
    (where / "objects.npz").write_bytes(buf.getvalue())
    files.append(where / "objects.npz")
    return files


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_malicious_pickle_never_runs_under_any_name_in_any_command(world, capsys):
    marker = Path(os.environ[MARKER_ENV])
    # sanity: the payload does run when unpickled
    pickle.loads(pickle.dumps(Evil()))
    assert marker.is_dir()
    marker.rmdir()
    for f in _malicious_files(world):
        out = world / "out.model"
        commands = [
            ["report", str(f)],
            ["report", str(f), "--json"],
            ["adapt", "noisy-mean", "--release", str(f), "--data", str(world / "target.npz"), "--out", str(out)],
            ["predict", "--model", str(f), "--data", str(world / "target.npz")],
            ["score", "--model", str(f), "--data", str(world / "target.npz")],
            ["release", "noisy-mean", "--data", str(f), "--epsilon", "1", "--delta", "1e-5", "--out", str(world / "x.release")],
        ]
        for args in commands:
            assert main(args) != 0, (f.name, args)
            _one_line_error(capsys)
            assert not marker.exists(), f"{f.name} ran code in {args[0]}"
            assert not out.exists() and not (world / "x.release").exists()


def _release_and_model(world, capsys, sign: Path | None = None) -> tuple[Path, Path]:
    extra = ["--sign", str(sign)] if sign else []
    assert main(["release", "noisy-mean", "--data", str(world / "source.npz"), "--epsilon", "8", "--delta", "1e-5",
                 "--out", str(world / "s.release"), "--seed", "1", *extra]) == 0
    assert main(["adapt", "noisy-mean", "--release", str(world / "s.release"), "--data", str(world / "target.npz"),
                 "--out", str(world / "m.model"), "--seed", "2", *extra]) == 0
    capsys.readouterr()
    return world / "s.release", world / "m.model"


def test_keys_new_writes_a_private_key_only_its_owner_can_read(tmp_path, capsys):
    assert main(["keys", "new", "--out", str(tmp_path / "k")]) == 0
    private, public = tmp_path / "k" / keys.PRIVATE_NAME, tmp_path / "k" / keys.PUBLIC_NAME
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert public.read_text().startswith("dpadapt-ed25519 ")
    assert main(["keys", "new", "--out", str(tmp_path / "k")]) == 1  # never overwrites silently
    assert "exists" in _one_line_error(capsys)


def _forge(path: Path, out: Path, strip_signature: bool, resign_with=None) -> None:
    """Change ε 8 → 0.5 and zero every array, then recompute the digest (what any attacker can do)."""
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(arrays.pop("__dpadapt_meta__").tobytes())
    meta["guarantee"]["epsilon"] = 0.5
    arrays = {k: np.zeros_like(v) for k, v in arrays.items()}
    if strip_signature:
        meta.pop("signature", None)
    meta["sha256"] = digest(meta, arrays)
    if resign_with is not None:
        meta["signature"] = keys.sign(resign_with, b"dpadapt-container-v1\x00" + meta["sha256"].encode())
    buf = io.BytesIO()
    np.savez(buf, __dpadapt_meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    out.write_bytes(buf.getvalue())


def test_a_forged_release_is_rejected_with_a_trusted_key_and_unauthenticated_without(world, capsys):
    main(["keys", "new", "--out", str(world / "alice")])
    main(["keys", "new", "--out", str(world / "mallory")])
    alice_private, alice_public = world / "alice" / keys.PRIVATE_NAME, world / "alice" / keys.PUBLIC_NAME
    release, model = _release_and_model(world, capsys, sign=alice_private)
    trust = ["--trust", str(alice_public)]
    target = ["--data", str(world / "target.npz")]

    # genuine: accepted under --trust, and says so
    assert main(["report", str(release), *trust]) == 0
    assert "authenticated: signed by trusted key" in capsys.readouterr().out
    assert main(["score", "--model", str(model), *target, *trust]) == 0
    assert float(capsys.readouterr().out.split()[1]) > 0.8

    # forged, signature kept: the signature no longer matches → refused with or without --trust
    _forge(release, world / "kept.release", strip_signature=False)
    for extra in ([], trust):
        assert main(["report", str(world / "kept.release"), *extra]) == 1
        assert "forged or modified" in _one_line_error(capsys)

    # forged, signature stripped (digest recomputed): refused under --trust, "unauthenticated" without
    _forge(release, world / "stripped.release", strip_signature=True)
    assert main(["report", str(world / "stripped.release"), *trust]) == 1
    assert "not signed" in _one_line_error(capsys)
    assert main(["adapt", "noisy-mean", "--release", str(world / "stripped.release"), *target,
                 "--out", str(world / "f.model"), *trust]) == 1
    assert "not signed" in _one_line_error(capsys) and not (world / "f.model").exists()
    assert main(["report", str(world / "stripped.release")]) == 0
    assert "unauthenticated" in capsys.readouterr().out

    # forged and re-signed with another key: refused under --trust, reported as that key without
    _forge(release, world / "resigned.release", strip_signature=True,
           resign_with=keys.load_private_key(world / "mallory" / keys.PRIVATE_NAME))
    assert main(["adapt", "noisy-mean", "--release", str(world / "resigned.release"), *target,
                 "--out", str(world / "f.model"), *trust]) == 1
    assert "not one of the trusted keys" in _one_line_error(capsys)
    assert main(["report", str(world / "resigned.release")]) == 0
    assert "not checked against a trusted key" in capsys.readouterr().out
    with pytest.raises(ReleaseError, match="not one of the trusted keys"):
        Release.load(world / "resigned.release", trusted=[keys.load_public_key(alice_public)])

    # a model file signed by nobody is refused under --trust
    modelio.save_model(world / "plain.model", modelio.LinearPredictor(np.zeros(2)), {})
    assert main(["predict", "--model", str(world / "plain.model"), *target, *trust]) == 1
    assert "not signed" in _one_line_error(capsys)


def test_predict_and_score_read_a_small_model_that_holds_only_what_predicts(world, capsys):
    release, model = _release_and_model(world, capsys)
    assert model.stat().st_size < 20_000
    assert zipfile.is_zipfile(model)
    assert main(["predict", "--model", str(model), "--data", str(world / "target.npz")]) == 0
    labels = capsys.readouterr().out.split()
    assert len(labels) == 150 and set(labels) <= {"0", "1", "2"}
    assert main(["predict", "--model", str(model), "--data", str(world / "target.npz"), "--out", str(world / "p.csv")]) == 0
    assert (world / "p.csv").read_text().split() == labels
    assert main(["score", "--model", str(model), "--data", str(world / "target.npz")]) == 0
    assert float(capsys.readouterr().out.split()[1]) > 0.8
    save_table(world / "narrow.npz", np.zeros((4, 2)))
    assert main(["predict", "--model", str(model), "--data", str(world / "narrow.npz")]) == 1
    assert "the data have 2 features, the model was trained on" in _one_line_error(capsys)


def test_sklearn_heads_round_trip_without_pickle(tmp_path):
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    g = {"source": Guarantee.non_private("source", "test")}
    for head in (make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
                 make_pipeline("passthrough", MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0))):
        head.fit(X, y)
        path = modelio.save_model(tmp_path / "h.model", head, g, {"method": "test"})
        loaded = modelio.load_model(path)
        np.testing.assert_array_equal(loaded.predict(X), head.predict(X))
        np.testing.assert_allclose(loaded.predict_proba(X), head.predict_proba(X))
        assert loaded.score(X, y) == pytest.approx(head.score(X, y))
        assert loaded.guarantees["source"].to_dict() == g["source"].to_dict()
    with pytest.raises(TypeError, match="register a kind"):
        modelio.save_model(tmp_path / "x.model", object(), g)
    assert not (tmp_path / "x.model").exists()


def test_a_dann_network_round_trips_as_arrays_and_an_architecture_name(tmp_path):
    from dpadapt.deep import DANN

    rng = np.random.default_rng(1)
    Xs, Xt = rng.normal(size=(60, 5)), rng.normal(size=(40, 5)) + 0.5
    ys = (Xs[:, 0] > 0).astype(int)
    model = DANN(hidden=(8,), epochs=2, batch_size=16, random_state=0).fit_domains(Xs, ys, Xt)
    path = modelio.save_model(tmp_path / "dann.model", model, {})
    loaded = modelio.load_model(path)
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    np.testing.assert_allclose(loaded.predict_proba(Xt), model.predict_proba(Xt), atol=1e-6)
    with np.load(path, allow_pickle=False) as npz:
        header = json.loads(npz["__dpadapt_meta__"].tobytes())
    assert header["model"]["architecture"] == "dann-mlp"
    assert not any("domain_head" in k for k in header["model"]["state"])  # only what predicts


def test_the_library_drops_dp_accounting_log_noise_but_not_other_absl_logs(caplog):
    import absl.logging
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    from dpadapt.bench.suites import dpda, dpot, dpswd, prima  # noqa: F401 - importing a suite must not mute absl
    from dpadapt.privacy import accounting

    accounting.epsilon(accounting.gaussian_event(3.0), 1e-5)  # the library's first accountant (dp-accounting loads then)
    logger = absl.logging.get_absl_logger()
    with caplog.at_level("WARNING"):
        rdp._compute_log_a_frac(0.9, 1.0, 5000.5)  # (q, σ, α): does not converge, dp-accounting warns
        absl.logging.warning("a user's own absl warning")
    messages = [r.getMessage() for r in caplog.records]
    assert not any("_compute_log_a_frac" in m for m in messages)
    assert "a user's own absl warning" in messages
    logger.removeFilter(accounting._drop_dp_accounting_records)  # control: without the filter it shows
    try:
        caplog.clear()
        with caplog.at_level("WARNING"):
            rdp._compute_log_a_frac(0.9, 1.0, 6000.5)  # other arguments (results may be cached)
        assert any("_compute_log_a_frac" in r.getMessage() for r in caplog.records)
    finally:
        logger.addFilter(accounting._drop_dp_accounting_records)
