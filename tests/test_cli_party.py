"""`dpadapt release/adapt/report/budget/demo`: the two-party command line, across processes.

Uses the test-only "noisy-mean" plugin (tests/_twoparty_plugin.py, loaded via $DPADAPT_PLUGINS).
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dpadapt.datasets.synthetic import make_shifted_blobs
from dpadapt.cli.main import main
from dpadapt.cli.methods import methods
from dpadapt.io import load_table, save_table
from dpadapt.privacy.ledger import Ledger, fingerprint
from dpadapt.release import Release, assert_no_raw_rows

TESTS = Path(__file__).parent
SRC = TESTS.parent / "src"
PLUGIN = "_twoparty_plugin"
HOOKS = "_twoparty_plugin,_hooks_plugin"  # plus the ledger's crash/hold test hooks


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), str(TESTS)]), DPADAPT_PLUGINS=PLUGIN)
    env.update(extra)
    return env


def _dpadapt(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpadapt.cli.main", *args], cwd=cwd, env=_env(**env), capture_output=True, text=True, check=False)


@pytest.fixture
def parties(tmp_path, monkeypatch):
    """Two party folders with their data files; in-process calls use the source's ledger."""
    monkeypatch.setenv("DPADAPT_PLUGINS", PLUGIN)
    src, tgt = tmp_path / "source", tmp_path / "target"
    src.mkdir()
    tgt.mkdir()
    Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(3), n_source=300, n_target=200)
    save_table(src / "source.npz", Xs, ys)
    save_table(tgt / "target.npz", Xt, yt)
    save_table(tgt / "narrow.npz", Xt[:, :5])
    monkeypatch.setenv("DPADAPT_LEDGER", str(src / "ledger.sqlite"))
    return src, tgt, Xs


def _set_budget(ledger: Path, data: Path, eps: float, party: str = "source") -> None:
    Ledger(ledger).set_budget(party, fingerprint(data), eps, 1e-5)


def _release(src: Path, eps: float = 4.0, out: str = "s.release", *extra: str) -> int:
    return main(["release", "noisy-mean", "--data", str(src / "source.npz"), "--epsilon", str(eps), "--delta", "1e-5",
                 "--out", str(src / out), "--seed", "1", *extra])


def test_demo_runs_two_processes_and_prints_accuracy_and_reports(tmp_path):
    done = _dpadapt(["demo", "--method", "noisy-mean", "--workdir", "demo"], tmp_path)  # relative, as in the README
    assert done.returncode == 0, done.stderr
    out = done.stdout
    accuracy = float(re.search(r"target accuracy of the adapted model .*: ([0-9.]+)", out).group(1))
    baseline = float(re.search(r"non-private source-only logistic regression: ([0-9.]+)", out).group(1))
    assert accuracy > 0.85 and accuracy > baseline + 0.1
    assert "What the model reveals about the source data" in out and "this party's own data were used" in out
    assert "refused: this release costs" in out
    source_ledger = Ledger(tmp_path / "demo" / "source" / "ledger.sqlite")
    assert [e.state for e in source_ledger.history()] == ["committed"]
    assert Ledger(tmp_path / "demo" / "target" / "ledger.sqlite").history() == []
    assert not (tmp_path / "demo" / "exchange" / "source-2.release").exists()


def test_release_report_adapt_and_return_leg(parties, capsys):
    src, tgt, Xs = parties
    _set_budget(src / "ledger.sqlite", src / "source.npz", 10.0)
    assert _release(src) == 0
    assert "wrote" in capsys.readouterr().out
    release = Release.load(src / "s.release")
    assert release.params["owner_n_features"] == Xs.shape[1]
    assert_no_raw_rows(release, Xs)
    assert main(["report", str(src / "s.release"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["type"] == "release" and report["guarantee"]["party"] == "source"
    assert report["guarantee"]["epsilon"] <= 4.0 and report["guarantee"]["valid"]

    target_ledger = tgt / "ledger.sqlite"
    _set_budget(target_ledger, tgt / "target.npz", 2.0, party="target")
    adapt = ["adapt", "noisy-mean", "--release", str(src / "s.release"), "--data", str(tgt / "target.npz"),
             "--out", str(tgt / "model.joblib"), "--ledger", str(target_ledger), "--return-mean",
             "--return-release", str(tgt / "back.release"), "--epsilon", "1", "--delta", "1e-5", "--seed", "2"]
    assert main(adapt) == 0
    assert "target_accuracy" in capsys.readouterr().out
    back = Release.load(tgt / "back.release")
    assert back.owner == "target" and back.guarantee.epsilon <= 1.0
    assert [e.kind for e in Ledger(target_ledger).history()] == ["target_mean"]
    assert main(["report", str(tgt / "model.joblib"), "--json"]) == 0
    model = json.loads(capsys.readouterr().out)
    assert model["type"] == "model" and model["guarantees"]["source"]["epsilon"] == report["guarantee"]["epsilon"]
    assert model["guarantees"]["target"]["epsilon"] == "inf"
    # the target's second return release does not fit its budget: refused, model kept, nothing released
    adapt2 = [a if a != str(tgt / "model.joblib") else str(tgt / "model2.joblib") for a in adapt]
    adapt2[adapt2.index(str(tgt / "back.release"))] = str(tgt / "back2.release")
    adapt2[adapt2.index("1")] = "1.9"
    assert main(adapt2) == 1
    assert "refused" in capsys.readouterr().err
    assert not (tgt / "back2.release").exists()


def test_budget_refusal_draws_no_noise_and_writes_nothing(parties, tmp_path, capsys, monkeypatch):
    src, _, _ = parties
    trace = tmp_path / "noise.log"
    monkeypatch.setenv("NOISY_MEAN_TRACE", str(trace))
    assert _release(src) == 1
    assert "no privacy budget set" in capsys.readouterr().err and not trace.exists()
    _set_budget(src / "ledger.sqlite", src / "source.npz", 5.0)  # two ε = 4 releases compose to ε ≈ 6 (RDP)
    assert _release(src) == 0
    assert trace.read_text().splitlines() == ["source noise"]
    assert _release(src, 4.0, "again.release") == 1
    err = capsys.readouterr().err
    assert "refused" in err and "left: about ε = 1" in err
    assert trace.read_text().splitlines() == ["source noise"]  # no second noise draw
    assert not (src / "again.release").exists()
    assert main(["budget", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)["budgets"][0]
    assert shown["spent"]["releases"] == 1 and shown["left_epsilon"] == pytest.approx(5.0 - shown["spent"]["epsilon"])


def test_adapt_rejects_tampered_truncated_and_wrong_dimension(parties, tmp_path, capsys):
    src, tgt, _ = parties
    _set_budget(src / "ledger.sqlite", src / "source.npz", 10.0)
    assert _release(src) == 0
    good = src / "s.release"

    def adapt(release: Path, data: str = "target.npz") -> str:
        out = tgt / f"m-{release.name}-{data}.joblib"
        code = main(["adapt", "noisy-mean", "--release", str(release), "--data", str(tgt / data), "--out", str(out)])
        err = capsys.readouterr().err
        assert code == 1 and not out.exists()
        return err

    truncated = tmp_path / "truncated.release"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    assert "truncated" in adapt(truncated)
    tampered = tmp_path / "tampered.release"
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(tampered, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename == "sums.npy":
                arr = np.load(__import__("io").BytesIO(data))
                buf = __import__("io").BytesIO()
                np.save(buf, arr * 0.5)  # a valid array, different values: only the digest can tell
                data = buf.getvalue()
            zout.writestr(item, data)
    assert "checksum mismatch" in adapt(tampered)
    assert "has 5 features but release" in adapt(good, "narrow.npz")


def test_data_files_csv_and_unsupported(parties, tmp_path, capsys):
    src, _, Xs = parties
    csv = src / "source.csv"
    ys = np.load(src / "source.npz")["y"]
    header = ",".join([f"f{i}" for i in range(Xs.shape[1])] + ["label"])
    np.savetxt(csv, np.column_stack([Xs, ys]), delimiter=",", header=header, comments="")
    Ledger(src / "ledger.sqlite").set_budget("source", "my-source", 10.0, 1e-5)
    args = ["release", "noisy-mean", "--data", str(csv), "--label-column", "label", "--epsilon", "2", "--delta", "1e-5",
            "--out", str(src / "csv.release"), "--dataset-id", "my-source"]
    assert main(args) == 0
    assert Release.load(src / "csv.release")["sums"].shape == (3, Xs.shape[1])
    txt = tmp_path / "data.txt"
    txt.write_text("1 2 3\n")
    args[3] = str(txt)
    assert main(args) == 1
    assert "unsupported data file type '.txt'" in capsys.readouterr().err


def test_two_processes_racing_on_one_budget_only_one_passes(parties):
    src, _, _ = parties
    _set_budget(src / "ledger.sqlite", src / "source.npz", 5.0)  # affords one ε = 4 release, not two
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "dpadapt.cli.main", "release", "noisy-mean", "--data", "source.npz", "--epsilon", "4",
             "--delta", "1e-5", "--out", f"race-{i}.release"],
            cwd=src, env=_env(DPADAPT_LEDGER=str(src / "ledger.sqlite"), DPADAPT_TEST_HOLD_RESERVE_S="1", DPADAPT_PLUGINS=HOOKS),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(2)
    ]
    results = [(p.wait(60), p.stderr.read()) for p in procs]
    assert sorted(code for code, _ in results) == [0, 1], results
    assert any("refused" in err for code, err in results if code == 1)
    assert len(list(src.glob("race-*.release"))) == 1
    assert [e.state for e in Ledger(src / "ledger.sqlite").history()] == ["committed"]


@pytest.mark.parametrize("then", ["kept", "moved", "deleted"])
@pytest.mark.parametrize("phase, written, state", [
    ("after_reserve", False, "aborted"),    # no noise drawn yet: provably nothing released, refunded
    ("after_publish", False, "committed"),  # the rename may have happened: charged
    ("tmp_written", False, "committed"),    # issue 19: a complete .tmp-PID copy exists: charged (was refunded)
    ("after_write", True, "committed"),     # written, not yet committed: charged
])
def test_a_crash_mid_release_never_refunds_what_may_have_left(parties, phase, written, state, then, tmp_path):
    """Crash at every step × the file kept, moved or deleted: the spend is never below what may have been released."""
    src, _, _ = parties
    ledger_path = src / "ledger.sqlite"
    _set_budget(ledger_path, src / "source.npz", 10.0)
    done = _dpadapt(["release", "noisy-mean", "--data", "source.npz", "--epsilon", "8", "--delta", "1e-5", "--out", "c.release"],
                    src, DPADAPT_LEDGER=str(ledger_path), DPADAPT_TEST_CRASH_AT=phase, DPADAPT_PLUGINS=HOOKS)
    assert done.returncode == 70, done.stderr
    assert (src / "c.release").exists() == written
    assert not list(src.glob("*.tmp-*")) or phase in ("after_publish", "tmp_written")
    if phase == "tmp_written":  # what a sync client would already have copied: a usable release
        (tmp,) = src.glob("c.release.tmp-*")
        copied = Release.load(tmp)
    if written and then == "moved":
        (src / "c.release").rename(tmp_path / "elsewhere.release")
    elif written and then == "deleted":
        (src / "c.release").unlink()
    ledger = Ledger(ledger_path)
    (entry,) = ledger.history()  # reading the ledger settles the dead process's reservation
    assert entry.state == state
    assert not list(src.glob("*.tmp-*"))  # an unfinished temporary file is removed
    spent = ledger.spent("source", fingerprint(src / "source.npz"))
    charged = state == "committed"
    assert spent.n_releases == int(charged) and spent.n_pending == 0
    if charged:
        assert spent.epsilon >= entry.guarantee.epsilon * (1 - 1e-9) > 7.9
    # a second ε = 8 release fits only if the first was provably never released
    again = _dpadapt(["release", "noisy-mean", "--data", "source.npz", "--epsilon", "8", "--delta", "1e-5", "--out", "d.release"],
                     src, DPADAPT_LEDGER=str(ledger_path))
    assert (again.returncode == 0) == (not charged), again.stderr
    if written and then == "kept":
        assert Release.load(src / "c.release").release_id == entry.release_id
    if phase == "tmp_written":
        assert copied.release_id == entry.release_id


@pytest.mark.parametrize("name", sorted(methods()))
def test_no_release_of_any_method_contains_raw_rows(name, parties):
    """Every registered method's release through the generic driver: no raw row of the owner's data,
    unless the release says it protects nothing (data declared public)."""
    src, tgt, _ = parties
    save_table(tgt / "unlabelled.npz", load_table(tgt / "target.npz").X)
    files = {"source": src / "source.npz", "target": tgt / "unlabelled.npz"}
    for party in ("source", "target"):
        for f in files.values():
            _set_budget(src / "ledger.sqlite", f, 50.0, party=party)
    example = methods()[name].example_release_args
    method_args = [str(a) for a in example(files)] if example else ["--data", str(files["source"])]
    out = src / f"{name}.release"
    try:
        code = main(["release", name, *method_args, "--epsilon", "4", "--delta", "1e-5", "--out", str(out), "--seed", "0"])
    except SystemExit:
        pytest.skip(f"method {name!r} needs arguments: give its MethodCommands an example_release_args")
    assert code == 0
    release = Release.load(out)
    owner_data = load_table(method_args[method_args.index("--data") + 1]).X
    if math.isinf(release.guarantee.epsilon):
        assert not release.guarantee.valid
    else:
        assert_no_raw_rows(release, owner_data)


def test_a_non_private_release_needs_declared_public_data(parties, capsys):
    src, _, _ = parties
    assert main(["release", "noisy-mean", "--data", str(src / "source.npz"), "--epsilon", "1", "--delta", "1e-5",
                 "--out", str(src / "raw.release"), "--in-the-clear"]) == 1
    assert "--declare-public" in capsys.readouterr().err and not (src / "raw.release").exists()
    assert main(["release", "noisy-mean", "--data", str(src / "source.npz"), "--epsilon", "1", "--delta", "1e-5",
                 "--out", str(src / "raw.release"), "--in-the-clear", "--declare-public"]) == 0
    assert Release.load(src / "raw.release").guarantee.epsilon == math.inf
    assert Ledger(src / "ledger.sqlite").history() == []  # nothing charged
