"""Every CLI command over a corpus of bad inputs: one-line error, exit status ≠ 0, nothing written.

Uses the test-only "noisy-mean" plugin (tests/_twoparty_plugin.py) through ``$DPADAPT_PLUGINS``.
"""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

from dpadapt.datasets.synthetic import make_shifted_blobs
from dpadapt.cli.main import main
from dpadapt.io import save_table
from dpadapt.privacy.ledger import Ledger, fingerprint

PLUGIN = "_twoparty_plugin"


class _Evil:
    def __reduce__(self):
        return (os.mkdir, (os.environ["DPADAPT_TEST_PWNED"],))


@pytest.fixture
def corpus(tmp_path_factory, monkeypatch):
    """Good files (a data pair, a release, a model) and bad ones, in one folder."""
    d = tmp_path_factory.mktemp("corpus")
    monkeypatch.setenv("DPADAPT_PLUGINS", PLUGIN)
    monkeypatch.setenv("DPADAPT_LEDGER", str(d / "ledger.sqlite"))
    monkeypatch.setenv("DPADAPT_TEST_PWNED", str(d / "PWNED"))
    monkeypatch.chdir(d)
    Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(3), n_source=120, n_target=80)
    save_table(d / "source.npz", Xs, ys)
    save_table(d / "target.npz", Xt, yt)
    Ledger(d / "ledger.sqlite").set_budget("source", fingerprint(d / "source.npz"), 20.0, 1e-5)
    assert main(["release", "noisy-mean", "--data", "source.npz", "--epsilon", "4", "--delta", "1e-5", "--out", "good.release"]) == 0
    assert main(["adapt", "noisy-mean", "--release", "good.release", "--data", "target.npz", "--out", "good.model"]) == 0
    bad = {
        "missing": d / "missing.npz",
        "empty": d / "empty.npz",
        "empty_archive": d / "noarrays.npz",
        "truncated_release": d / "truncated.release",
        "truncated_npz": d / "truncated.npz",
        "foreign_npz": d / "foreign.npz",
        "text": d / "notes.npz",
        "pickle": d / "evil.npz",
        "nan": d / "nan.npz",
        "one_d": d / "oned.npz",
        "three_d": d / "threed.npz",
        "string_labels": d / "strings.csv",
        "wide": d / "wide.npz",
        "folder": d / "afolder.npz",
    }
    bad["empty"].write_bytes(b"")
    np.savez(bad["empty_archive"])
    data = (d / "good.release").read_bytes()
    bad["truncated_release"].write_bytes(data[: len(data) // 2])
    data = (d / "source.npz").read_bytes()
    bad["truncated_npz"].write_bytes(data[: len(data) // 2])
    np.savez(bad["foreign_npz"], Z=np.zeros(3))
    bad["text"].write_text("hello\n")
    bad["pickle"].write_bytes(pickle.dumps(_Evil()))
    np.savez(bad["nan"], X=np.full((5, 2), np.nan), y=np.zeros(5, dtype=int))
    np.savez(bad["one_d"], X=np.zeros(5), y=np.zeros(5, dtype=int))
    np.savez(bad["three_d"], X=np.zeros((5, 2, 2)), y=np.zeros(5, dtype=int))
    bad["string_labels"].write_text("a,b,y\n1,2,cat\n3,4,dog\n")
    save_table(bad["wide"], np.zeros((10, Xs.shape[1] + 3)), np.zeros(10, dtype=int))
    bad["folder"].mkdir()
    (d / "PWNED").exists() and (d / "PWNED").rmdir()
    return d, bad


def _snapshot(d):
    return {p.relative_to(d): p.stat().st_mtime_ns for p in d.rglob("*") if not p.name.startswith("ledger.sqlite")}


def _cases(bad):
    files = list(bad.values())
    out = "out.file"
    for path in files:
        f = str(path)
        yield ["release", "noisy-mean", "--data", f, "--epsilon", "1", "--delta", "1e-5", "--out", out]
        yield ["adapt", "noisy-mean", "--release", f, "--data", "target.npz", "--out", out]
        yield ["adapt", "noisy-mean", "--release", "good.release", "--data", f, "--out", out]
        yield ["report", f]
        yield ["report", f, "--json"]
        yield ["predict", "--model", f, "--data", "target.npz"]
        yield ["predict", "--model", "good.model", "--data", f, "--out", out]
        yield ["score", "--model", f, "--data", "target.npz"]
        yield ["score", "--model", "good.model", "--data", f]
        if path != bad["wide"]:  # a valid data file of another width: a budget for it is fine
            yield ["budget", "set", "--party", "source", "--data", f, "--epsilon", "1", "--delta", "1e-5"]
        yield ["report", "good.release", "--trust", f]
        yield ["release", "noisy-mean", "--data", "source.npz", "--epsilon", "1", "--delta", "1e-5", "--out", out, "--sign", f]
        yield ["slices", "--data", f, "--min-steps", "1", "--epochs", "1", "--out", out]
        yield ["release", "dpswd-marginals", "--map", f, "--data", "target.npz", "--epsilon", "1", "--delta", "1e-5", "--out", out]
    for eps in ("nan", "inf", "-1", "0", "1e308", "3000"):
        yield ["release", "noisy-mean", "--data", "source.npz", f"--epsilon={eps}", "--delta", "1e-5", "--out", out]
        if eps in ("nan", "inf", "-1", "0"):  # a large finite budget is the owner's choice
            yield ["budget", "set", "--party", "source", "--data", "source.npz", f"--epsilon={eps}", "--delta", "1e-5"]
        if eps in ("nan", "inf", "-1", "0"):  # a huge finite ε is computed soundly (RDP; PLD skipped)
            yield ["account", f"--epsilon={eps}", "--steps", "10", "--delta", "1e-5"]
    for delta in ("nan", "0", "1", "2", "-1e-5", "0.5"):
        yield ["release", "noisy-mean", "--data", "source.npz", "--epsilon", "1", f"--delta={delta}", "--out", out]
        yield ["budget", "set", "--party", "source", "--data", "source.npz", "--epsilon", "1", f"--delta={delta}"]
        if delta != "0.5":  # δ = 0.5 is a legitimate (if useless) accounting question
            yield ["account", "--sigma", "1", "--steps", "10", f"--delta={delta}"]
    yield ["account", "--sigma", "0", "--steps", "10", "--delta", "1e-5"]
    yield ["account", "--sigma", "1", "--steps", "0", "--delta", "1e-5"]
    yield ["release", "noisy-mean", "--data", "source.npz", "--epsilon", "1", "--delta", "1e-5", "--out", "nofolder/x.release"]
    yield ["release", "noisy-mean", "--data", "source.npz", "--epsilon", "1", "--delta", "1e-5", "--out", "good.release"]
    yield ["release", "noisy-mean", "--data", "source.npz", "--epsilon", "1", "--delta", "1e-5", "--out", "afolder.npz", "--force"]
    yield ["adapt", "noisy-mean", "--release", "good.release", "--data", "target.npz", "--out", "good.model"]
    yield ["adapt", "noisy-mean", "--data", "target.npz", "--out", out]
    yield ["keys", "new", "--out", "good.model"]
    yield ["bench", "no-such-suite"]
    yield ["datasets", "info", "no-such-dataset"]
    yield ["budget", "show", "--ledger", "good.release"]


def test_every_command_on_bad_input_fails_in_one_line_and_writes_nothing(corpus, capsys):
    d, bad = corpus
    before = _snapshot(d)
    for args in _cases(bad):
        code = main(args)
        err = capsys.readouterr().err.strip()
        assert code != 0, args
        assert err and "Traceback" not in err and len(err.splitlines()) == 1, (args, err)
        assert _snapshot(d) == before, (args, set(_snapshot(d)) ^ set(before))
        assert not (d / "PWNED").exists(), args


def test_a_read_only_ledger_is_shown_but_never_written(corpus, capsys, monkeypatch):
    from dpadapt.privacy import ledger as ledger_module

    d, _ = corpus
    monkeypatch.setattr(ledger_module.Ledger, "_read_only_reason", lambda self: "the ledger file is read-only")
    assert main(["budget", "show"]) == 0
    out = capsys.readouterr().out
    assert "budget : ε = 20" in out and "spent" in out
    assert main(["budget", "history"]) == 0
    capsys.readouterr()
    before = _snapshot(d)
    for args in (["budget", "set", "--party", "source", "--data", "source.npz", "--epsilon", "1", "--delta", "1e-5"],
                 ["release", "noisy-mean", "--data", "source.npz", "--epsilon", "1", "--delta", "1e-5", "--out", "x.release"]):
        assert main(args) == 1
        err = capsys.readouterr().err.strip()
        assert "read-only" in err and len(err.splitlines()) == 1
        assert _snapshot(d) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
def test_a_read_only_ledger_file_on_disk(corpus, capsys):
    d, _ = corpus
    os.chmod(d / "ledger.sqlite", 0o444)
    try:
        assert main(["budget", "show"]) == 0
        assert main(["budget", "set", "--party", "source", "--dataset-id", "x", "--epsilon", "1", "--delta", "1e-5"]) == 1
        assert "read-only" in capsys.readouterr().err
    finally:
        os.chmod(d / "ledger.sqlite", 0o644)
