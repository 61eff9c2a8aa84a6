"""Issue 38's bad-input corpus: every command and reader, one case a line, each message checked for what and where.

Plain tables (no schema) with a header: the sound route (request → release → adapt) and the model
commands (predict, score, report) over CSV, Parquet and ``.npz`` (with and without ``feature_names``)
inputs, plus ``budget set`` and the test-only "noisy-mean" plugin on headerless ``.npz``.
Each bad case must exit ≠ 0 with ONE line on stderr that names the file and the offending column, row
or value (the expected fragments below), write nothing and spend nothing. Columns in another order
are mapped by name (the same predictions as the file in the model's order), never read by position.
Calls are in-process (:func:`dpadapt.cli.main.main`) to keep the corpus fast.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dpadapt.cli.main import main
from dpadapt.io import save_table
from dpadapt.privacy.ledger import Ledger, fingerprint

COLUMNS = ["age", "chol", "bp", "hr"]


def _frame(n: int, seed: int, shift: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, len(COLUMNS))) + 1.5 * y[:, None] * np.array([1.0, -1.0, 0.5, 0.0]) + shift
    return pd.DataFrame(X, columns=COLUMNS).assign(y=y)


def _write(d, name: str, frame: pd.DataFrame) -> str:
    path = d / name
    if name.endswith(".csv"):
        frame.to_csv(path, index=False)
    elif name.endswith(".parquet"):
        frame.to_parquet(path)
    else:
        features = frame.drop(columns=["y"]) if "y" in frame else frame
        save_table(path, features.to_numpy(), frame["y"].to_numpy() if "y" in frame else None,
                   feature_names=list(features.columns))
    return name


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = tmp_path_factory.mktemp("corpus38")
    mp = pytest.MonkeyPatch()
    mp.setenv("DPADAPT_PLUGINS", "_twoparty_plugin")
    mp.setenv("DPADAPT_LEDGER", str(d / "ledger.sqlite"))
    mp.chdir(d)
    source, target = _frame(300, 1), _frame(200, 2, shift=0.3)
    _write(d, "source.csv", source)
    _write(d, "target.csv", target)
    _write(d, "target_unlabelled.csv", target.drop(columns=["y"]))
    reordered = target[COLUMNS[::-1] + ["y"]]
    for name in ("target_rev.csv", "target_rev.parquet", "target_rev.npz"):
        _write(d, name, reordered)
    _write(d, "source_rev.parquet", source[COLUMNS[::-1] + ["y"]])
    _write(d, "extra.csv", target.assign(note=1.0))
    _write(d, "extra.parquet", target.assign(note=1.0))
    _write(d, "extra.npz", target.assign(note=1.0))
    _write(d, "missing.csv", target.drop(columns=["bp"]))
    _write(d, "missing.parquet", target.drop(columns=["bp"]))
    _write(d, "missing.npz", target.drop(columns=["bp"]))
    save_table(d / "nonames.npz", target[COLUMNS].to_numpy(), target["y"].to_numpy())
    np.save(d / "nonames.npy", target[COLUMNS].to_numpy())
    np.savez(d / "names_count.npz", X=target[COLUMNS].to_numpy(), y=target["y"].to_numpy(),
             feature_names=np.array(COLUMNS[:3]))
    np.savez(d / "names_dup.npz", X=target[COLUMNS].to_numpy(), y=target["y"].to_numpy(),
             feature_names=np.array(["age", "age", "bp", "hr"]))
    np.savez(d / "names_numbers.npz", X=target[COLUMNS].to_numpy(), feature_names=np.arange(4))
    nan = target.copy()
    nan.loc[2, "chol"] = np.nan
    _write(d, "nan.parquet", nan)
    _write(d, "nan.npz", nan)
    (d / "nan.csv").write_text("age,chol,bp,hr,y\n1,2,3,4,0\n1,2,3,4,1\n1,nan,3,4,0\n")
    (d / "inf.csv").write_text("age,chol,bp,hr,y\n1,2,3,4,0\n1,2,3,inf,1\n")
    inf = target.copy()
    inf.loc[4, "hr"] = -np.inf
    _write(d, "inf.parquet", inf)
    (d / "dup.csv").write_text("age,chol,age,hr,y\n1,2,3,4,0\n")
    (d / "wide_header.csv").write_text(",".join(f"c{i}" for i in range(200_000)) + "\n" + ",".join(["1"] * 200_000) + "\n")
    (d / "text_label.csv").write_text("age,chol,bp,hr,y\n1,2,3,4,cat\n1,2,3,4,1\n")
    (d / "label_nan.parquet").write_bytes(b"")
    pd.DataFrame({**{c: [1.0, 2.0] for c in COLUMNS}, "y": [0.0, np.nan]}).to_parquet(d / "label_nan.parquet")
    (d / "label_range.csv").write_text("age,chol,bp,hr,y\n1,2,3,4,0\n1,2,3,4,5\n")
    (d / "other_label.csv").write_text("age,chol,bp,hr,target\n1,2,3,4,0\n1,2,3,4,1\n")
    (d / "afolder.csv").mkdir()
    (d / "afolder").mkdir()
    (d / "sheet.xlsx").write_bytes(b"PK")
    (d / "empty.csv").write_text("")
    (d / "header_only.csv").write_text("age,chol,bp,hr,y\n")
    (d / "ragged.csv").write_text("age,chol,bp,hr,y\n1,2,3,4,0\n1,2,3\n")
    (d / "word.csv").write_text("age,chol,bp,hr,y\n1,two,3,4,0\n")
    (d / "blank_cell.csv").write_text("age,chol,bp,hr,y\n1,2,,4,0\n")
    save_table(d / "wide.npz", np.zeros((5, 6)), np.zeros(5, dtype=int))
    save_table(d / "unlabelled.npz", np.zeros((5, 4)))
    save_table(d / "narrow_source.npz", source[COLUMNS].to_numpy(), source["y"].to_numpy())
    ledger = Ledger(d / "ledger.sqlite")
    for name in ("source.csv", "narrow_source.npz"):
        ledger.set_budget("source", fingerprint(d / name), 50.0, 1e-5)
    S = ["--epsilon", "2", "--delta", "1e-5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["request", "--data", "target_unlabelled.csv", "--n-source", "300", *S, "--classes", "0,1",
                     "--out", "req.release"]) == 0
        assert main(["release", "sound", "--classes", "0,1", "--request", "req.release", "--data", "source.csv", *S, "--out", "s.release"]) == 0
        assert main(["adapt", "sound", "--release", "s.release", "--own-release", "req.release", "--data",
                     "target_unlabelled.csv", "--out", "m.model"]) == 0
        # a headerless pair: the noisy-mean plugin on .npz without names (read by position)
        assert main(["release", "noisy-mean", "--data", "narrow_source.npz", *S, "--out", "n.release"]) == 0
        assert main(["adapt", "noisy-mean", "--release", "n.release", "--data", "nonames.npz", "--out", "n.model"]) == 0
    yield d
    mp.undo()


# -- columns by name ---------------------------------------------------------------------------------
def _run(capsys, args) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(args)
    out = capsys.readouterr()
    assert code == 0, (args, out.err)
    return out.out


@pytest.mark.parametrize("reordered", ["target_rev.csv", "target_rev.parquet", "target_rev.npz"])
def test_reordered_columns_are_mapped_by_name_for_predict_and_score(corpus, capsys, reordered):
    """The same rows with their columns in another order: the same predictions and scores, never read by position."""
    assert _run(capsys, ["predict", "--model", "m.model", "--data", reordered, "--proba"]) == \
        _run(capsys, ["predict", "--model", "m.model", "--data", "target.csv", "--proba"])
    score = ["score", "--model", "m.model", "--bootstrap", "0", "--json", "--data"]
    assert _run(capsys, score + [reordered]) == _run(capsys, score + ["target.csv"])


@pytest.mark.parametrize("reordered", ["target_rev.csv", "target_rev.parquet", "target_rev.npz"])
def test_reordered_columns_are_mapped_by_name_for_adapt(corpus, capsys, reordered):
    adapt = ["adapt", "sound", "--release", "s.release", "--own-release", "req.release", "--force", "--data"]
    _run(capsys, adapt + ["target.csv", "--out", "in_order.model"])
    _run(capsys, adapt + [reordered, "--out", "mapped.model"])
    predict = ["predict", "--data", "target.csv", "--proba", "--model"]
    assert _run(capsys, predict + ["mapped.model"]) == _run(capsys, predict + ["in_order.model"])


def test_a_source_with_reordered_columns_releases_in_the_request_order(corpus, capsys):
    """``release`` maps the source by the request's names too (the released statistics are then comparable)."""
    import dpadapt.cli.party_cmd as party

    seen = {}
    original = party.check_release_dimensions

    def spy(releases, table):
        seen["columns"] = table.columns
        return original(releases, table)

    ledger = Ledger(corpus / "ledger.sqlite")
    ledger.set_budget("source", fingerprint(corpus / "source_rev.parquet"), 50.0, 1e-5)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(party, "check_release_dimensions", spy)
        _run(capsys, ["release", "sound", "--classes", "0,1", "--request", "req.release", "--data", "source_rev.parquet", "--epsilon", "1",
                      "--delta", "1e-5", "--out", "rev.release", "--force"])
    from dpadapt.release import Release

    assert Release.load(corpus / "rev.release").params["feature_names"] == COLUMNS


def test_the_python_api_maps_a_dataframe_by_name_and_refuses_missing_or_unnamed(corpus):
    from dpadapt.sound import SoundDA

    source, target = _frame(300, 1), _frame(200, 2, shift=0.3)
    Xs, Xt = source[COLUMNS], target[COLUMNS]
    model = SoundDA(epsilon=None, classes=(0, 1), random_state=0).fit_domains(Xs, source["y"], Xt)
    assert list(model.feature_names_in_) == COLUMNS
    assert np.array_equal(model.predict_proba(Xt[COLUMNS[::-1]]), model.predict_proba(Xt))
    for bad, words in ((Xt.drop(columns="bp"), "missing column(s) 'bp'"), (Xt.assign(x=1.0), "extra column(s) 'x'"),
                       (Xt.to_numpy(), "X has no column names")):
        with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
            model.predict(bad)
    refit = SoundDA(epsilon=None, classes=(0, 1), random_state=0).fit_domains(Xs, source["y"], Xt[COLUMNS[::-1]])
    assert np.array_equal(refit.predict_proba(Xt), model.predict_proba(Xt))  # the target mapped by name while fitting
    plain = SoundDA(epsilon=None, classes=(0, 1), random_state=0).fit_domains(Xs.to_numpy(), source["y"], Xt.to_numpy())
    assert not hasattr(plain, "feature_names_in_")
    assert np.array_equal(plain.predict(Xt), plain.predict(Xt.to_numpy()))  # fitted headerless: by position


# -- privacy by default -------------------------------------------------------------------------------
def test_a_dp_estimator_without_epsilon_is_private_at_the_stated_default_and_says_so():
    from dpadapt.configs.base import PRIVATE_DEFAULT_EPSILON, PrivacyDefaultWarning
    from dpadapt.transport.da import DPOTAdapter

    source, target = _frame(200, 1), _frame(100, 2)
    with pytest.warns(PrivacyDefaultWarning, match="epsilon=None for the non-private counterpart"):
        model = DPOTAdapter(classes=(0, 1), random_state=0).fit_domains(source[COLUMNS], source["y"], target[COLUMNS])
    assert model.config_.epsilon == PRIVATE_DEFAULT_EPSILON
    assert model.guarantee_ is not None and model.guarantee_.epsilon <= PRIVATE_DEFAULT_EPSILON + 1e-9
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyDefaultWarning)
        plain = DPOTAdapter(epsilon=None, classes=(0, 1), random_state=0).fit_domains(
            source[COLUMNS], source["y"], target[COLUMNS])
    assert plain.guarantee_ is None


def test_a_tiny_source_warns_before_spending(corpus, capsys):
    from dpadapt.sound import SoundDA
    from dpadapt.sound.source import TinySourceWarning

    source, target = _frame(300, 1), _frame(200, 2)
    with pytest.warns(TinySourceWarning, match="1 rows over 2 classes"):
        SoundDA(epsilon=1.0, classes=(0, 1), random_state=0).fit_domains(source[COLUMNS][:1], source["y"][:1], target[COLUMNS])
    _write(corpus, "one_row.csv", source[:1])
    Ledger(corpus / "ledger.sqlite").set_budget("source", fingerprint(corpus / "one_row.csv"), 50.0, 1e-5)
    assert main(["release", "sound", "--classes", "0,1", "--request", "req.release", "--data", "one_row.csv", "--epsilon", "2", "--delta",
                 "1e-5", "--out", "one.release"]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "would be pure noise" in err and "1 rows over 2 classes" in err


# -- the corpus ---------------------------------------------------------------------------------------
#: Commands over a plain data file ``{f}`` (no schema): the model and release were made from named columns.
COMMANDS = {
    "predict": "predict --model m.model --data {f} --out out.csv",
    "score": "score --model m.model --bootstrap 0 --data {f}",
    "adapt": "adapt sound --release s.release --own-release req.release --out out.model --data {f}",
    "release": "release sound --classes 0,1 --request req.release --epsilon 1 --delta 1e-5 --out out.release --data {f}",
    "request": "request --n-source 300 --epsilon 1 --delta 1e-5 --classes 0,1 --out out.release --data {f}",
    "budget": "budget set --party source --epsilon 1 --delta 1e-5 --data {f}",
    "report-html": "report m.model --html out.html --bootstrap 0 --data {f}",
}
#: Readers' bad files: refused by every command above, the message naming the file and these fragments.
EVERY_COMMAND = {
    "names_count.npz": ["names_count.npz", "'feature_names' has 3 names for 4"],
    "names_dup.npz": ["names_dup.npz", "'feature_names' names column 'age' twice"],
    "names_numbers.npz": ["names_numbers.npz", "'feature_names' must be one text name per feature column"],
    "dup.csv": ["dup.csv", "the header names column 'age' 2 times"],
    "wide_header.csv": ["wide_header.csv", "line 1 (the header) is longer than 1 MiB", ".npz or .parquet"],
    "afolder.csv": ["afolder.csv", "is a folder, not a data file"],
    "afolder": ["afolder", "is a folder, not a data file"],
    "sheet.xlsx": ["sheet.xlsx", "unsupported data file type '.xlsx'"],
    "absent.csv": ["absent.csv", "no such"],
    "empty.csv": ["empty.csv", "empty"],
    "header_only.csv": ["header_only.csv", "empty"],
    "ragged.csv": ["ragged.csv", "header has 5 columns but line 3 has 3"],
    "word.csv": ["word.csv", "column 'chol' is not numeric", "'two'"],
    "blank_cell.csv": ["blank_cell.csv", "line 2, column 'bp'"],
    "nan.csv": ["nan.csv", "line 4, column 'chol': empty or missing value"],
    "inf.csv": ["inf.csv", "data row 2, column 'hr'", "inf"],
    "nan.parquet": ["nan.parquet", "data row 3, column 'chol'", "nan"],
    "inf.parquet": ["inf.parquet", "data row 5, column 'hr'", "-inf"],
    "nan.npz": ["nan.npz", "data row 3, column 'chol'", "nan"],
}
#: Files refused only where they meet a file fitted on named columns (model, release, request).
NAMED_ONLY = {
    "extra.csv": ["extra.csv", "extra column(s) 'note'", "'age', 'chol', 'bp', 'hr'"],
    "extra.parquet": ["extra.parquet", "extra column(s) 'note'"],
    "extra.npz": ["extra.npz", "extra column(s) 'note'"],
    "missing.csv": ["missing.csv", "missing column(s) 'bp'"],
    "missing.parquet": ["missing.parquet", "missing column(s) 'bp'"],
    "missing.npz": ["missing.npz", "missing column(s) 'bp'"],
    "nonames.npz": ["nonames.npz", "has no column names", "'feature_names'"],
    "nonames.npy": ["nonames.npy", "has no column names"],
}
LABELS = {  # commands that need labels
    "text_label.csv": ("score", ["text_label.csv", "labels in 'y' are not integers", "'cat'"]),
    "label_nan.parquet": ("score", ["label_nan.parquet", "data row 2, label column 'y'", "nan"]),
    "label_range.csv": ("score", ["label_range.csv", "label 5 in column 'y'", "classes 0..1"]),
    "target_unlabelled.csv": ("score", ["target_unlabelled.csv", "scoring needs labels and has no column 'y'"]),
    "other_label.csv": ("release", ["other_label.csv", "extra column(s) 'target'", "name it with --label-column"]),
}


def _cases():
    for name, words in EVERY_COMMAND.items():
        for command, template in COMMANDS.items():
            yield f"{command}/{name}", template.format(f=name).split(), words
    for name, words in NAMED_ONLY.items():
        for command in ("predict", "score", "adapt", "release", "report-html"):
            args = COMMANDS[command].format(f=name).split()
            if name.endswith(".npy"):
                args += ["--label-file", "labels.npy"] if command in ("score", "release") else []
            yield f"{command}/{name}", args, words
    for name, (command, words) in LABELS.items():
        yield f"{command}/{name}", COMMANDS[command].format(f=name).split(), words
    yield ("score/other-label-column", ["score", "--model", "m.model", "--bootstrap", "0", "--data",
                                        "target_unlabelled.csv", "--label-column", "target"],
           ["target_unlabelled.csv", "scoring needs labels and has no column 'target' (--label-column)"])
    yield ("release/other-label-column", ["release", "sound", "--classes", "0,1", "--request", "req.release", "--epsilon", "1", "--delta",
                                          "1e-5", "--out", "x.release", "--data", "target_unlabelled.csv",
                                          "--label-column", "target"],
           ["target_unlabelled.csv", "needs labels and has no column 'target' (--label-column)"])
    yield ("predict/headerless-model-wrong-width", ["predict", "--model", "n.model", "--data", "wide.npz"],
           ["6 features", "trained on 4"])
    yield ("score/headerless-model-wrong-width", ["score", "--model", "n.model", "--data", "wide.npz"],
           ["6 features", "trained on 4"])
    slices = ["slices", "--min-steps", "1", "--epochs", "1", "--out", "x.release", "--data"]
    yield "slices/npy-without-labels", slices + ["nonames.npy"], ["nonames.npy", "give --label-file"]
    yield "slices/npz-without-labels", slices + ["unlabelled.npz"], ["unlabelled.npz", "no array 'y'"]


CASES = list(_cases())


def _snapshot(d):
    return {p.relative_to(d): p.stat().st_mtime_ns for p in d.rglob("*") if not p.name.startswith("ledger.sqlite")}


def test_the_corpus_is_large():
    assert len(CASES) >= 100


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_in_one_line_naming_what_and_where(corpus, capsys, case):
    _, args, words = case
    np.save(corpus / "labels.npy", np.zeros(200, dtype=int))
    before = _snapshot(corpus)
    spent = [(e.release_id, e.state) for e in Ledger(corpus / "ledger.sqlite").history()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(args)
    err = "\n".join(line for line in capsys.readouterr().err.strip().splitlines()
                    if not line.startswith(("note: ", "dpadapt report: warning", "dpadapt score: warning")))
    assert code != 0, (args, err)
    assert err.startswith("dpadapt ") and len(err.splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    assert _snapshot(corpus) == before
    assert [(e.release_id, e.state) for e in Ledger(corpus / "ledger.sqlite").history()] == spent


# -- the Python API ------------------------------------------------------------------------------------
def _api_cases():
    from dpadapt.classstats import ClassStatsDA
    from dpadapt.sound import SoundDA
    from dpadapt.transport.da import DPOTAdapter

    source, target = _frame(200, 1), _frame(100, 2)
    nan = target[COLUMNS].to_numpy().copy()
    nan[7, 2] = np.inf
    for estimator in (SoundDA, DPOTAdapter, ClassStatsDA):
        yield f"{estimator.__name__}/wider", estimator, (lambda m: type(m)(epsilon=None, classes=(0, 1)).fit_domains(
            source[COLUMNS].to_numpy(), source["y"], target[COLUMNS].to_numpy()).predict(np.zeros((3, 6)))), \
            ["X has 6 features", "is expecting 4 features"]
        yield f"{estimator.__name__}/missing", estimator, (lambda m: m.predict_proba(target[COLUMNS[:3]])), \
            ["missing column(s) 'hr'"]
        yield f"{estimator.__name__}/array", estimator, (lambda m: m.predict(target[COLUMNS].to_numpy())), \
            ["X has no column names", "'age', 'chol', 'bp', 'hr'"]
        yield f"{estimator.__name__}/target-extra", estimator, (lambda m: type(m)(epsilon=None, classes=(0, 1)).fit_domains(
            source[COLUMNS], source["y"], target.assign(z=1.0)[COLUMNS + ["z"]])), ["Xt (target)", "extra column(s) 'z'"]
        yield f"{estimator.__name__}/nan", estimator, (lambda m: type(m)(epsilon=None, classes=(0, 1)).fit_domains(
            source[COLUMNS].to_numpy(), source["y"], nan)), ["NaN or infinite", "row 7, column 2: inf"]


API_CASES = list(_api_cases())


@pytest.mark.parametrize("case", API_CASES, ids=[c[0] for c in API_CASES])
def test_python_api_bad_input_is_refused_naming_what_and_where(case):
    _, estimator, call, words = case
    source, target = _frame(200, 1), _frame(100, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = estimator(epsilon=None, classes=(0, 1), random_state=0).fit_domains(source[COLUMNS], source["y"],
                                                                                     target[COLUMNS])
        with pytest.raises(ValueError) as info:
            call(model)
    message = str(info.value)
    assert len(message.splitlines()) == 1
    for word in words:
        assert word in message, (word, message)
