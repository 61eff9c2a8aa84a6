"""Every CLI command over a corpus of bad inputs: one-line error, exit status ≠ 0, nothing written, nothing spent.

Table-driven: bad files × the commands that read them (the plain readers), bad tables × the commands that
read a table through a schema (CSV / Parquet readers), bad schemas × the same commands, mismatched
schemas × the commands that check a file against the data, and single cases (ε, δ, the issue-29
"smaller" list). Uses the test-only "noisy-mean" plugin (tests/_twoparty_plugin.py) through
``$DPADAPT_PLUGINS``.
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
    _hospital_files(d)
    (d / "PWNED").exists() and (d / "PWNED").rmdir()
    return d, bad


def _hospital_files(d):
    """A schema, CSV exports of both parties, a sound release and model read through it, a dpot release of a prototypes request."""
    from test_hospitals import export, schema_text

    (d / "schema.toml").write_text(schema_text())
    (d / "swapped.toml").write_text(schema_text(classes=("disease", "healthy")))
    (d / "wide.toml").write_text(schema_text(chol_range=(0, 600)))
    export(d / "source.csv", 150, 0, "SRC")
    export(d / "target.csv", 80, 1, "TGT", labelled=False)
    export(d / "target_labelled.csv", 80, 1, "TGT")
    S = ["--schema", "schema.toml"]
    Ledger(d / "ledger.sqlite").set_budget("source", fingerprint(d / "source.csv"), 20.0, 1e-5)
    assert main(["request", "--data", "target.csv", *S, "--n-source", "150", "--epsilon", "2", "--delta", "1e-5",
                 "--out", "req.release"]) == 0
    assert main(["release", "sound", "--request", "req.release", "--data", "source.csv", *S, "--epsilon", "2",
                 "--delta", "1e-5", "--out", "good-sound.release"]) == 0
    assert main(["adapt", "sound", "--release", "good-sound.release", "--own-release", "req.release", "--data",
                 "target.csv", *S, "--out", "good-sound.model"]) == 0
    assert main(["request", "--data", "target.csv", *S, "--n-source", "150", "--epsilon", "1", "--delta", "1e-5",
                 "--design", "prototypes", "--out", "dpot-req.release"]) == 0
    assert main(["release", "dpot", "--request", "dpot-req.release", "--data", "source.csv", *S, "--epsilon", "1",
                 "--delta", "1e-5", "--out", "dpot.release"]) == 0
    tables = {
        "no-header": "TGT-1,50,200,1\n",
        "dup-header": "patient_id,age,age,cp\nP,1,1,1\n",
        "ragged": "patient_id,age,chol,cp\nA,50,200,1\nB,50,200\n",
        "blank-line": "patient_id,age,chol,cp\nA,50,200,1\n\nB,51,201,2\n",
        "not-a-number": "patient_id,age,chol,cp\nA,fifty,200,1\n",
        "decimal-comma": "patient_id,age,chol,cp\nA,\"50,5\",200,1\n",
        "unknown-category": "patient_id,age,chol,cp\nA,50,200,9\n",
        "unknown-label": "patient_id,age,chol,cp,diagnosis\nA,50,200,1,sick\n",
        "missing-no-impute": "patient_id,age,chol,cp\nA,,200,1\n",
        "infinite": "patient_id,age,chol,cp\nA,inf,200,1\n",
        "undeclared-column": "patient_id,age,chol,cp,extra\nA,50,200,1,x\n",
        "header-only": "patient_id,age,chol,cp\n",
        "empty": "",
        "unclosed-quote": "patient_id,age,chol,cp\nA,\"50,200,1\n" + "x" * (5 << 20) + "\n",
        "overlong-first-line": "p" * (2 << 20),
    }
    for name, text in tables.items():
        (d / f"t-{name}.csv").write_text(text)
    (d / "t-not-utf8.csv").write_bytes(b"patient_id,age,chol,cp\nA,\xff\xfe,200,1\n")
    (d / "t-junk.parquet").write_bytes(b"PAR1 not really")
    (d / "t-unsupported.xlsx").write_bytes(b"PK")
    import pandas as pd

    pd.DataFrame({"patient_id": ["A"], "age": [50.0], "cp": [1]}).to_parquet(d / "t-missing-column.parquet")
    pd.DataFrame({"patient_id": ["A", "B"], "age": [50.0, None], "chol": [200.0, 210.0], "cp": [1, 2]}).to_parquet(
        d / "t-nan.parquet")
    schemas = {
        "syntax": "[table\n",
        "unknown-key": schema_text().replace("[id]", "[id]\nshape = 1"),
        "no-range": schema_text().replace("range = [18, 100]", "range = []"),
        "impute-outside": schema_text().replace("impute = 200", "impute = 900"),
        "missing-without-impute": schema_text().replace("impute = 200\n", ""),
        "code-is-category": schema_text().replace("impute = 4", "impute = 4\nmissing = [4]"),
        "decimal-with-comma": schema_text().replace('delimiter = ","', 'delimiter = ","\ndecimal = ","'),
        "label-not-in-names": schema_text().replace("header = true", 'header = false\nnames = ["patient_id", "age", "chol", "cp"]'),
        "one-class": schema_text().replace('classes = ["healthy", "disease"]', 'classes = ["healthy"]'),
    }
    for name, text in schemas.items():
        (d / f"s-{name}.toml").write_text(text)
    (d / "s-a-folder.toml").mkdir()


def _snapshot(d):
    return {p.relative_to(d): p.stat().st_mtime_ns for p in d.rglob("*") if not p.name.startswith("ledger.sqlite")}


def _spent(d):
    """Everything the ledger records (releases, their states, budgets): a refused command changes none of it."""
    ledger = Ledger(d / "ledger.sqlite")
    return ([(e.release_id, e.state, e.party, e.dataset_id) for e in ledger.history()],
            ledger.spent("source", fingerprint(d / "source.csv")).epsilon, ledger.budget("source", fingerprint(d / "source.csv")))


#: Commands that read a party's table through ``--schema``: ``{table}``, ``{schema}`` are filled in.
TABLE_COMMANDS = {
    "release-sound": "release sound --request req.release --data {table} --schema {schema} --epsilon 1 --delta 1e-5 --out out.file",
    "release-dpot": "release dpot --request dpot-req.release --data {table} --schema {schema} --epsilon 1 --delta 1e-5 "
                    "--out out.file",
    "release-group": "release sound --request req.release --data {table} --schema {schema} --epsilon 1 --delta 1e-5 "
                     "--rows-per-patient 2 --out out.file",
    "adapt": "adapt sound --release good-sound.release --own-release req.release --data {table} --schema {schema} --out out.file",
    "request": "request --data {table} --schema {schema} --n-source 150 --out out.file",
    "predict": "predict --model good-sound.model --data {table} --schema {schema} --out out.file --proba",
    "score": "score --model good-sound.model --data {table} --schema {schema} --bootstrap 10",
    "report": "report good-sound.model --html out.html --data {table} --schema {schema} --bootstrap 10",
    "budget": "budget set --party source --data {table} --schema {schema} --epsilon 1 --delta 1e-5",
}
#: Bad tables (CSV / Parquet readers), each read through the good schema by every table command.
BAD_TABLES = ["no-header", "dup-header", "ragged", "blank-line", "not-a-number", "decimal-comma", "unknown-category",
              "unknown-label", "missing-no-impute", "infinite", "undeclared-column", "header-only", "empty",
              "unclosed-quote", "overlong-first-line", "not-utf8", "junk.parquet", "missing-column.parquet",
              "nan.parquet", "unsupported.xlsx", "absent"]
#: Bad schemas, each given with a good table to every table command and to `schema check`.
BAD_SCHEMAS = ["syntax", "unknown-key", "no-range", "impute-outside", "missing-without-impute", "code-is-category",
               "decimal-with-comma", "label-not-in-names", "one-class", "a-folder", "absent"]
#: Valid schemas whose map differs from the one the release / model was made with.
MISMATCHED_SCHEMAS = ["swapped.toml", "wide.toml"]


def _table(name: str) -> str:
    return name if name == "absent" else (f"t-{name}" if "." in name else f"t-{name}.csv")


def _table_cases():
    for command, template in TABLE_COMMANDS.items():
        good = "target_labelled.csv" if command in ("score", "report") else (
            "source.csv" if command.startswith("release") or command == "budget" else "target.csv")
        for name in BAD_TABLES:
            yield f"{command}/table:{name}", template.format(table=_table(name), schema="schema.toml").split()
        for name in BAD_SCHEMAS:
            yield f"{command}/schema:{name}", template.format(table=good, schema=f"s-{name}.toml").split()
        if command in ("adapt", "predict", "score", "report"):  # the file's schema against the data's
            for name in MISMATCHED_SCHEMAS:
                yield f"{command}/mismatch:{name}", template.format(table=good, schema=name).split()
    for name in BAD_SCHEMAS:
        if name not in ("no-range",):  # single-problem schemas: `schema check` lists each problem on its own line
            yield f"schema-check/{name}", ["schema", "check", f"s-{name}.toml"]
    for name in ("overlong-first-line", "junk.parquet", "absent", "empty"):
        yield f"schema-draft/{name}", ["schema", "draft", "--header-of", _table(name), "--out", "out.toml"]


def _smaller_cases():
    """Issue 29's "smaller" list: each a one-line message saying what happened and what to do."""
    yield "own-release-missing", ["adapt", "dpot", "--release", "dpot.release", "--data", "target.csv",
                                  "--schema", "schema.toml", "--out", "out.file"]
    yield "out-is-a-folder", ["adapt", "sound", "--release", "good-sound.release", "--own-release", "req.release", "--data", "target.csv",
                              "--schema", "schema.toml", "--out", "afolder.npz"]
    yield "out-is-a-folder-force", ["adapt", "sound", "--release", "good-sound.release", "--own-release", "req.release", "--data", "target.csv",
                                    "--schema", "schema.toml", "--out", "afolder.npz", "--force"]
    yield "epsilon-1e308", ["release", "sound", "--request", "req.release", "--data", "source.csv", "--schema",
                            "schema.toml", "--epsilon", "1e308", "--delta", "1e-5", "--out", "out.file"]
    yield "bench-seeds-0", ["bench", "source-only", "--quick", "--seeds", "0", "--no-progress"]
    yield "trust-own-unsigned-model", ["score", "--model", "good-sound.model", "--data", "target_labelled.csv",
                                       "--schema", "schema.toml", "--trust", "keys/dpadapt_ed25519.pub"]
    yield "predict-proba-npz-no-schema", ["predict", "--model", "good-sound.model", "--data", "target.npz", "--proba"]
    yield "report-data-without-html", ["report", "good-sound.model", "--data", "target.csv", "--schema", "schema.toml"]
    yield "score-threshold", ["score", "--model", "good-sound.model", "--data", "target_labelled.csv", "--schema",
                              "schema.toml", "--threshold", "1.5"]
    yield "score-unlabelled", ["score", "--model", "good-sound.model", "--data", "target.csv", "--schema", "schema.toml"]
    yield "rows-per-patient-without-ids", ["release", "noisy-mean", "--data", "source.npz", "--epsilon", "1",
                                           "--delta", "1e-5", "--rows-per-patient", "2", "--out", "out.file"]
    yield "rows-per-patient-zero", ["release", "sound", "--request", "req.release", "--data", "source.csv", "--schema",
                                    "schema.toml", "--epsilon", "1", "--delta", "1e-5", "--rows-per-patient", "0",
                                    "--out", "out.file"]


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


def _check_refused(d, args, capsys, before, spent):
    code = main(args)
    captured = capsys.readouterr()
    err = "\n".join(line for line in captured.err.strip().splitlines() if not line.startswith("note: "))
    assert code != 0, args
    assert err and "Traceback" not in err and len(err.splitlines()) == 1, (args, err)
    assert err.startswith("dpadapt "), (args, err)
    assert _snapshot(d) == before, (args, set(_snapshot(d)) ^ set(before))
    assert _spent(d) == spent, args
    assert not (d / "PWNED").exists(), args
    return err


def test_every_command_on_bad_input_fails_in_one_line_and_writes_nothing(corpus, capsys):
    d, bad = corpus
    before, spent = _snapshot(d), _spent(d)
    for args in _cases(bad):
        _check_refused(d, args, capsys, before, spent)


def test_every_table_reader_and_schema_on_every_command(corpus, capsys):
    """Bad tables (CSV, Parquet), bad and mismatched schemas, through every command that reads a table."""
    d, _ = corpus
    before, spent = _snapshot(d), _spent(d)
    seen = 0
    for case, args in _table_cases():
        err = _check_refused(d, args, capsys, before, spent)
        if "/mismatch:" in case:
            assert "class order differs" in err or "column chol: range [100, 600]" in err, (case, err)
        seen += 1
    assert seen > 250


def test_the_smaller_messages_say_what_to_do(corpus, capsys):
    d, _ = corpus
    assert main(["keys", "new", "--out", "keys"]) == 0
    capsys.readouterr()
    before, spent = _snapshot(d), _spent(d)
    expected = {
        "own-release-missing": "add --own-release REQUEST",
        "out-is-a-folder": "is a folder; give a file name",
        "out-is-a-folder-force": "is a folder; give a file name",
        "epsilon-1e308": "If the data are public, release them without noise with --declare-public",
        "bench-seeds-0": "--seeds 0: give at least 1",
        "trust-own-unsigned-model": "A file you wrote yourself (your own model): drop --trust",
        "predict-proba-npz-no-schema": "the model maps rows through a declared schema and your data does not",
        "report-data-without-html": "--data is for the HTML page: add --html OUT",
        "score-threshold": "the threshold must be in (0, 1)",
        "score-unlabelled": "scoring needs labels",
        "rows-per-patient-without-ids": "--rows-per-patient needs the patients' IDs",
        "rows-per-patient-zero": "--rows-per-patient must be ≥ 1",
    }
    for case, args in _smaller_cases():
        err = _check_refused(d, args, capsys, before, spent)
        assert expected[case] in err, (case, err)


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
