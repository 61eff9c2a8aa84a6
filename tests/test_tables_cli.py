"""The two-party CLI on a hospital's own tables (``--schema``), its one-line errors, progress and the HTML report."""

from __future__ import annotations

import csv
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import tomllib
from pathlib import Path

import numpy as np
import pytest

from dpadapt.cli.main import main

EXAMPLE_SCHEMA = Path(__file__).resolve().parents[1] / "examples" / "heart.schema.toml"
NAMES = ["age", "sex", "cp", "trestbps", "chol", "fbs", "restecg", "thalach", "exang", "oldpeak", "slope", "ca", "thal", "num"]


def _toml(doc: dict) -> str:
    """A tiny TOML writer for the schemas these tests derive (tables, arrays of tables, scalars, lists)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {value(x)}" for k, x in v.items()) + " }"
        return repr(v)

    lines = []
    for key, section in doc.items():
        if isinstance(section, list):
            for item in section:
                lines += ["", f"[[{key}]]"] + [f"{k} = {value(v)}" for k, v in item.items()]
        else:
            lines += ["", f"[{key}]"] + [f"{k} = {value(v)}" for k, v in section.items()]
    return "\n".join(lines) + "\n"


def hospital_copy(raw: Path, out: Path, prefix: str, labelled: bool = True) -> int:
    """A hospital-style export of a raw UCI file: a header, an ID column, string labels, '?' cells kept."""
    rows = [line.split(",") for line in raw.read_text().splitlines() if line.strip()]
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["patient_id"] + NAMES[:-1] + (["diagnosis"] if labelled else []))
        for i, r in enumerate(rows):
            label = ["healthy" if float(r[-1]) == 0 else "disease"] if labelled else []
            w.writerow([f"{prefix}-{i + 1:04d}"] + r[:-1] + label)
    return len(rows)


@pytest.fixture
def heart(data_root, tmp_path, monkeypatch):
    """Cleveland (labelled, protected) and Hungary (unlabelled copy + labelled copy for scoring), with a schema."""
    raw = data_root / "uci_heart_disease" / "raw"
    doc = tomllib.loads(EXAMPLE_SCHEMA.read_text())
    doc["table"] = {"header": True, "missing": ["?", ""]}
    doc["label"] = {"column": "diagnosis", "classes": ["healthy", "disease"]}
    doc = {"table": doc["table"], "label": doc["label"], "id": {"column": "patient_id"}, "columns": doc["columns"]}
    (tmp_path / "heart.schema.toml").write_text(_toml(doc))
    n_s = hospital_copy(raw / "processed.cleveland.data", tmp_path / "cleveland.csv", "CLE")
    n_t = hospital_copy(raw / "processed.hungarian.data", tmp_path / "hungary.csv", "HUN", labelled=False)
    hospital_copy(raw / "processed.hungarian.data", tmp_path / "hungary_labelled.csv", "HUN")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    return tmp_path, n_s, n_t


def test_heart_two_party_cli_with_schema(heart, capsys):
    tmp, n_s, n_t = heart
    S = ["--schema", "heart.schema.toml"]
    assert main(["request", "--data", "hungary.csv", *S, "--n-source", str(n_s), "--epsilon", "1", "--delta", "1e-5",
                 "--design", "prototypes", "--out", "request.release"]) == 0
    assert main(["budget", "set", "--party", "source", "--data", "cleveland.csv", *S, "--epsilon", "4", "--delta", "1e-5"]) == 0
    assert main(["release", "dpot", "--request", "request.release", "--data", "cleveland.csv", *S,
                 "--epsilon", "1", "--delta", "1e-5", "--out", "stats.release"]) == 0
    assert main(["adapt", "dpot", "--release", "stats.release", "--own-release", "request.release",
                 "--data", "hungary.csv", *S, "--out", "model.dpadapt"]) == 0
    out = capsys.readouterr().out
    assert "target: not protected in this setting; it disclosed its release request" in out and "NOT a valid" not in out
    assert main(["score", "--model", "model.dpadapt", "--data", "hungary_labelled.csv", *S]) == 0
    out = capsys.readouterr().out
    assert "294 labelled rows: healthy 188 (63.9 %), disease 106 (36.1 %)" in out
    balanced = float(re.search(r"balanced accuracy\s+(\d\.\d+) \[", out).group(1))
    auc = float(re.search(r"ROC-AUC\s+(\d\.\d+) \[\d\.\d+, \d\.\d+\]  \(disease as positive\)", out).group(1))
    accuracy = float(re.search(r"\naccuracy\s+(\d\.\d+) \[", out).group(1))
    assert balanced > 0.7 and accuracy > 0.7 and auc > 0.75  # README: 0.83 / 0.91 at ε = 1; chance 0.64 (all healthy)
    assert out.index("balanced accuracy") < out.index("ROC-AUC") < out.index("\naccuracy")  # accuracy is not the lead
    for words in ("sensitivity", "specificity", "Brier score", "calibration slope", "expected calibration error"):
        assert re.search(words + r"\s+\d\.\d+ \[", out), words
    cm = re.search(r"healthy\s+(\d+)\s+(\d+)\s*\ndisease\s+(\d+)\s+(\d+)", out)
    assert sum(int(v) for v in cm.groups()) == n_t and int(cm.group(1)) + int(cm.group(2)) == 188
    assert main(["predict", "--model", "model.dpadapt", "--data", "hungary.csv", *S, "--out", "pred.csv"]) == 0
    rows = list(csv.reader(open(tmp / "pred.csv")))
    assert rows[0] == ["patient_id", "predicted_diagnosis"] and len(rows) == n_t + 1
    assert rows[1][0] == "HUN-0001" and {r[1] for r in rows[1:]} <= {"healthy", "disease"}
    assert main(["report", "model.dpadapt", "--html", "report.html", "--ledger", "ledger.sqlite"]) == 0
    page = (tmp / "report.html").read_text()
    assert "No accuracy recorded" in page  # hungary.csv had no labels when it adapted
    assert "<td>source</td>" in page and "ε = 1, δ = 1e-05" in page and "ε = 4, δ = 1e-05" in page
    assert "not protected in this setting; it disclosed its release request" in page


def test_report_html_numbers_and_sweep(heart, capsys):
    tmp, n_s, _ = heart
    S = ["--schema", "heart.schema.toml"]
    assert main(["budget", "set", "--party", "source", "--data", "cleveland.csv", *S, "--epsilon", "8", "--delta", "1e-5"]) == 0
    recorded = {}
    for eps in ("0.5", "2"):
        assert main(["request", "--data", "hungary.csv", *S, "--n-source", str(n_s), "--epsilon", eps, "--delta", "1e-5",
                     "--design", "prototypes", "--out", f"r{eps}.release"]) == 0
        assert main(["release", "dpot", "--request", f"r{eps}.release", "--data", "cleveland.csv", *S,
                     "--epsilon", eps, "--delta", "1e-5", "--out", f"s{eps}.release"]) == 0
        assert main(["adapt", "dpot", "--release", f"s{eps}.release", "--own-release", f"r{eps}.release",
                     "--data", "hungary_labelled.csv", *S, "--out", f"m{eps}.dpadapt"]) == 0
        out = capsys.readouterr().out
        recorded[eps] = float(re.search(r"accuracy_on_target_labels = (\d\.\d+)", out).group(1))
    assert main(["report", "m0.5.dpadapt", "m2.dpadapt", "--html", "sweep.html", "--ledger", "ledger.sqlite"]) == 0
    page = (tmp / "sweep.html").read_text()
    cells = re.findall(r"<td(?: class=\"num\")?>([^<]*)</td>", page)
    assert f"{recorded['0.5']:.4f}" in cells  # the first model's accuracy
    assert ["m0.5.dpadapt", "0.5", f"{recorded['0.5']:.4f}"] == cells[cells.index("m0.5.dpadapt"):][:3]
    assert ["m2.dpadapt", "2", f"{recorded['2']:.4f}"] == cells[cells.index("m2.dpadapt"):][:3]
    assert "ε = 0.5, δ = 1e-05" in cells and "ε = 8, δ = 1e-05" in cells  # spent by this model, the budget
    assert re.search(r'<img alt="accuracy recorded at adapt \(in-sample\) against epsilon" src="data:image/png;base64,[A-Za-z0-9+/=]{200,}">', page)
    assert "One run per ε" in page  # one model file per ε: said, not drawn as a trend
    assert main(["report", "s2.release", "--html", "x.html"]) == 1 and not (tmp / "x.html").exists()


@pytest.fixture
def small_schema(tmp_path):
    doc = {"table": {"header": True, "delimiter": ","}, "label": {"column": "diagnosis", "classes": ["healthy", "disease"]},
           "id": {"column": "patient_id"},
           "columns": [{"name": n, "type": "numeric", "range": [0, 600]} for n in NAMES[:-1]]}
    path = tmp_path / "s.toml"
    path.write_text(_toml(doc))
    return path


def _good_lines(n=3):
    head = ",".join(["patient_id"] + NAMES[:-1] + ["diagnosis"])
    return [head] + [",".join([f"P{i}"] + ["1"] * 13 + ["healthy" if i % 2 else "disease"]) for i in range(n)]


@pytest.mark.parametrize("case", ["no-header", "dup-header", "semicolon", "empty-cell", "ragged", "parquet-nan"])
@pytest.mark.parametrize("command", ["release", "request", "budget"])
def test_bad_tables_one_line_nothing_written(tmp_path, small_schema, capsys, monkeypatch, case, command):
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    lines = _good_lines()
    data = tmp_path / f"{case}.csv"
    if case == "no-header":
        text = "\n".join(lines[1:]) + "\n"
    elif case == "dup-header":
        text = "\n".join([lines[0].replace("sex", "age")] + lines[1:]) + "\n"
    elif case == "semicolon":
        text = "\n".join(lines).replace(",", ";") + "\n"
    elif case == "empty-cell":
        text = "\n".join(lines[:2] + [lines[2].replace("P1,1,", "P1,,")] + lines[3:]) + "\n"
    elif case == "ragged":
        text = "\n".join(lines[:2] + [lines[2].rsplit(",", 1)[0]] + lines[3:]) + "\n"
    if case == "parquet-nan":
        import pandas as pd

        frame = pd.read_csv(__import__("io").StringIO("\n".join(lines)))
        frame.loc[1, "chol"] = np.nan
        data = tmp_path / "nan.parquet"
        frame.to_parquet(data)
        expected = "row 2, column 'chol': missing value"
    else:
        data.write_text(text)
        expected = {"no-header": "the first line looks like data", "dup-header": "duplicate column name 'age'",
                    "semicolon": "the header was read as one column", "empty-cell": "line 3, column 'age': missing value",
                    "ragged": "line 3: 14 columns, expected 15"}[case]
    S = ["--schema", str(small_schema)]
    out = tmp_path / "out.file"
    argv = {"release": ["release", "dpot", "--data", str(data), *S, "--epsilon", "1", "--delta", "1e-5", "--out", str(out)],
            "request": ["request", "--data", str(data), *S, "--n-source", "20", "--out", str(out)],
            "budget": ["budget", "set", "--party", "source", "--data", str(data), *S, "--epsilon", "1", "--delta", "1e-5"]}[command]
    before = set(tmp_path.iterdir())
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and expected in err and str(data.name) in err
    assert set(tmp_path.iterdir()) == before  # nothing written (no output, no ledger)


def test_cli_small_fixes(tmp_path, capsys, monkeypatch):
    ledger = tmp_path / "sub" / "ledger.sqlite"
    assert main(["budget", "show", "--ledger", str(ledger)]) == 0
    assert "no ledger at" in capsys.readouterr().out and not ledger.parent.exists()  # show never creates one
    monkeypatch.setenv("DPADAPT_LEDGER", str(ledger))
    assert main(["budget", "history"]) == 0 and not ledger.exists()
    data = tmp_path / "d.npz"
    np.savez(data, X=np.random.default_rng(0).normal(size=(50, 3)), y=np.arange(50) % 2)
    assert main(["release", "dpot", "--data", str(data), "--n-classes", "2", "--epsilon", "1",
                 "--delta", "-1e-5", "--out", str(tmp_path / "o.release")]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "dpadapt release: error: delta must be in (0, 1), got -1e-05"
    with pytest.raises(SystemExit) as exit_:
        main(["release", "dpot", "--data", str(data)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the following arguments are required" in err
    with pytest.raises(SystemExit):
        main(["release", "dpot", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "seed of the PUBLIC randomness" in help_text and "privacy noise comes from fresh OS entropy" in help_text


def _dpadapt(args, env, **kw):
    return subprocess.run([sys.executable, "-m", "dpadapt.cli.main", *args], env=env, **kw)


def test_progress_on_a_terminal_and_silent_in_a_pipe(tmp_path):
    """200 000-row release: a progress bar on an interactive stderr; nothing extra with --quiet in a pipe."""
    rng = np.random.default_rng(0)
    width = 12
    values = rng.integers(0, 100, (1000, width))
    labels = np.where(rng.integers(0, 2, 1000) == 1, "yes", "no")
    block = "\n".join(",".join(map(str, row)) + f",{lab}" for row, lab in zip(values.tolist(), labels))
    with open(tmp_path / "big.csv", "w") as fh:
        fh.write(",".join(f"c{j}" for j in range(width)) + ",label\n")
        for _ in range(200):
            fh.write(block + "\n")
    (tmp_path / "s.toml").write_text(_toml({
        "label": {"column": "label", "classes": ["no", "yes"]},
        "columns": [{"name": f"c{j}", "type": "numeric", "range": [0, 100]} for j in range(width)]}))
    env = {**os.environ, "DPADAPT_LEDGER": str(tmp_path / "ledger.sqlite"), "PYTHONPATH": os.pathsep.join(sys.path)}
    common = ["release", "dpot", "--data", str(tmp_path / "big.csv"), "--schema", str(tmp_path / "s.toml"),
              "--epsilon", "1", "--delta", "1e-8", "--dataset-id", "big", "--n-classes", "2"]
    assert main(["budget", "set", "--party", "source", "--dataset-id", "big", "--epsilon", "2", "--delta", "1e-8",
                 "--ledger", str(tmp_path / "ledger.sqlite")]) == 0
    request = str(tmp_path / "r.release")
    assert main(["request", "--data", str(tmp_path / "big.csv"), "--schema", str(tmp_path / "s.toml"), "--quiet",
                 "--n-source", "200000", "--epsilon", "1", "--delta", "1e-8", "--design", "prototypes", "--out", request]) == 0
    common += ["--request", request]
    piped = _dpadapt([*common, "--quiet", "--out", str(tmp_path / "a.release")], env, capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stderr == ""
    assert piped.stdout.startswith("ledger ") and "wrote" in piped.stdout and "rows" not in piped.stdout
    shown = {**env, "DPADAPT_PROGRESS_DELAY": "0"}  # a bar from the first row, however fast this machine reads
    text = _on_a_terminal([*common, "--out", str(tmp_path / "b.release")], shown)
    assert "reading big.csv" in text and "rows" in text and "release dpot" in text
    text = _on_a_terminal(["adapt", "dpot", "--release", str(tmp_path / "b.release"), "--data", str(tmp_path / "big.csv"),
                           "--schema", str(tmp_path / "s.toml"), "--own-release", request, "--out", str(tmp_path / "m.dpadapt")], shown)
    assert "reading big.csv" in text and "rows" in text and "adapt dpot" in text
    piped = _dpadapt(["adapt", "dpot", "--release", str(tmp_path / "b.release"), "--data", str(tmp_path / "big.csv"),
                      "--schema", str(tmp_path / "s.toml"), "--own-release", request, "--quiet", "--force",
                      "--out", str(tmp_path / "m.dpadapt")], env, capture_output=True, text=True)
    assert piped.returncode == 0 and piped.stdout.startswith("wrote ")
    # nothing on stderr but the one-line calibration warning every dpot model gets (issue 36)
    assert [line for line in piped.stderr.splitlines() if "over-confident" not in line] == []


def _on_a_terminal(args, env) -> str:
    """Run ``dpadapt ARGS`` with stderr on a 100-column pseudo-terminal; what it showed there."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = _dpadapt(args, env, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert proc.returncode == 0, shown
    return shown.decode("utf-8", "replace")


def test_source_side_mismatch_and_broken_pipe(tmp_path, capsys, monkeypatch):
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "s5.npz", X=rng.normal(size=(200, 5)), y=np.arange(200) % 2)
    np.savez(tmp_path / "t6.npz", X=rng.normal(size=(100, 6)))
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    assert main(["request", "--data", str(tmp_path / "t6.npz"), "--classes", "0,1", "--n-source", "200", "--epsilon", "1",
                 "--delta", "1e-5", "--design", "prototypes", "--out", str(tmp_path / "b6.release")]) == 0
    assert main(["budget", "set", "--party", "source", "--data", str(tmp_path / "s5.npz"), "--epsilon", "4", "--delta", "1e-5"]) == 0
    capsys.readouterr()
    argv = ["release", "dpot", "--request", str(tmp_path / "b6.release"), "--data", str(tmp_path / "s5.npz"),
            "--n-classes", "2", "--epsilon", "1", "--delta", "1e-5", "--out", str(tmp_path / "x.release")]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "release request: it is for 6 features; your data have 5" in err
    assert not (tmp_path / "x.release").exists()
    # `dpadapt report FILE... | head -1`: the reader goes away; no traceback, no "Broken pipe"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-m", "dpadapt.cli.main", "report", *[str(tmp_path / "b6.release")] * 400],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    first = proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=120) == 0 and first.startswith(b"Release")
    assert proc.stderr.read() == b""


def test_schema_draft_reads_only_the_header(tmp_path, capsys):
    export = tmp_path / "export.csv"
    export.write_bytes(b"patient_id;age;cp;diagnosis\n\xff\xfe not even text;;;\n")  # rows are never read
    out = tmp_path / "draft.toml"
    assert main(["schema", "draft", "--header-of", str(export), "--label", "diagnosis", "--classes", "healthy,disease",
                 "--id", "patient_id", "--categorical", "cp", "--out", str(out)]) == 0
    assert "fill in 2 place(s)" in capsys.readouterr().out
    assert main(["schema", "check", str(out)]) == 1  # ranges and codes are left to fill: it does not load yet
    assert "columns.age.range: a numeric column needs its public range" in capsys.readouterr().err
    text = out.read_text().replace("range = []", "range = [0, 110]").replace("categories = []", "categories = [1, 2, 3, 4]")
    out.write_text(text)
    from dpadapt.tables import load_schema

    schema = load_schema(out)
    assert schema.delimiter == ";" and schema.id_column == "patient_id" and schema.classes == ("healthy", "disease")
    assert schema.feature_names == ["age", "cp=1", "cp=2", "cp=3", "cp=4"]
    assert main(["schema", "draft", "--columns", "a,b,a", "--out", str(tmp_path / "x.toml")]) == 1
    assert "names a column twice: 'a'" in capsys.readouterr().err and not (tmp_path / "x.toml").exists()
