"""Issue 29: what a hospital hits on its first day, each silent failure reproduced and now refused or reported.

Small generated exports (a header, an ID column, string labels, a missing code) through the CLI.
"""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from dpadapt.cli.main import main
from dpadapt.release import Release

SCHEMA = """
[table]
header = true
delimiter = ","
missing = ["", "?"]

[label]
column = "diagnosis"
classes = {classes}

[id]
column = "patient_id"

[[columns]]
name = "age"
type = "numeric"
range = [18, 100]

[[columns]]
name = "chol"
type = "numeric"
range = {chol_range}
impute = 200
{chol_missing}

[[columns]]
name = "cp"
type = "categorical"
categories = [1, 2, 3, 4]
impute = 4
"""


def sound_request(eps="2", n=400, data="target.csv", out="req.release", schema="schema.toml", extra=()) -> int:
    """The receiver's release request (`dpadapt request`) for a source of ``n`` rows at ε = ``eps``, δ = 1e-5."""
    return main(["request", "--data", data, "--schema", schema, "--n-source", str(n), "--epsilon", str(eps),
                 "--delta", "1e-5", "--out", out, *extra])


def schema_text(classes=("healthy", "disease"), chol_range=(100, 600), chol_missing="missing = [0]") -> str:
    return SCHEMA.format(classes="[" + ", ".join(f'"{c}"' for c in classes) + "]",
                         chol_range=f"[{chol_range[0]}, {chol_range[1]}]", chol_missing=chol_missing)


def export(path, n, seed, prefix, labelled=True, shift=0.0, zero_chol=0, high_chol=0, duplicate=0):
    """A hospital export: disease raises age and chol; ``zero_chol`` rows carry the code 0 (not measured)."""
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.4
    age = np.clip(rng.normal(50 + 12 * y + shift, 8), 20, 95).round()
    chol = np.clip(rng.normal(210 + 70 * y, 30), 120, 560).round()
    cp = np.where(y, 4, rng.integers(1, 4, n))
    chol[:zero_chol] = 0
    chol[zero_chol:zero_chol + high_chol] = 700
    ids = [f"{prefix}-{i:04d}" for i in range(n)]
    for i in range(duplicate):
        ids[n - 1 - i] = ids[i]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["patient_id", "age", "chol", "cp"] + (["diagnosis"] if labelled else []))
        for i in range(n):
            w.writerow([ids[i], int(age[i]), int(chol[i]), int(cp[i])] + (["disease" if y[i] else "healthy"] if labelled else []))
    return y


@pytest.fixture
def hospitals(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    (tmp_path / "schema.toml").write_text(schema_text())
    export(tmp_path / "source.csv", 400, 0, "SRC")
    export(tmp_path / "target.csv", 300, 1, "TGT", labelled=False, shift=3)
    export(tmp_path / "target_labelled.csv", 300, 1, "TGT", shift=3)
    assert main(["budget", "set", "--party", "source", "--data", "source.csv", "--schema", "schema.toml",
                 "--epsilon", "10", "--delta", "1e-5"]) == 0
    assert main(["request", "--data", "target.csv", "--schema", "schema.toml", "--n-source", "400", "--epsilon", "4",
                 "--delta", "1e-5", "--design", "prototypes", "--out", "request.release"]) == 0
    assert main(["release", "dpot", "--data", "source.csv", "--schema", "schema.toml", "--request", "request.release",
                 "--epsilon", "4", "--delta", "1e-5", "--out", "stats.release"]) == 0
    return tmp_path


def _spent(tmp):
    from dpadapt.privacy.ledger import Ledger

    return [(e.release_id, e.state, e.guarantee.epsilon) for e in Ledger(tmp / "ledger.sqlite").history(None, None)]


def test_swapped_class_order_is_refused_not_inverted(hospitals, capsys):
    """Was: a schema listing the classes in the other order inverted every prediction (0.83 → 0.17), silently."""
    tmp = hospitals
    (tmp / "swapped.toml").write_text(schema_text(classes=("disease", "healthy")))
    capsys.readouterr()
    assert main(["adapt", "dpot", "--release", "stats.release", "--own-release", "request.release", "--data", "target.csv", "--schema", "swapped.toml",
                 "--out", "m.dpadapt"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and not (tmp / "m.dpadapt").exists()
    assert "class order differs: the release has ['healthy', 'disease'], your schema (swapped.toml) has ['disease', 'healthy']" in err
    # the same schema adapts; scoring through the swapped schema is refused too
    assert main(["adapt", "dpot", "--release", "stats.release", "--own-release", "request.release", "--data", "target.csv", "--schema", "schema.toml",
                 "--out", "m.dpadapt"]) == 0
    capsys.readouterr()
    for command in ("score", "predict"):
        assert main([command, "--model", "m.dpadapt", "--data", "target_labelled.csv", "--schema", "swapped.toml"]) == 1
        err = capsys.readouterr().err.strip()
        assert "class order differs: the model has ['healthy', 'disease']" in err and err.count("\n") == 0
    assert main(["score", "--model", "m.dpadapt", "--data", "target_labelled.csv", "--schema", "schema.toml"]) == 0
    out = capsys.readouterr().out
    assert float(re.search(r"balanced accuracy\s+(\d\.\d+)", out).group(1)) > 0.7


@pytest.mark.parametrize("change, words", [
    (dict(chol_range=(0, 600)), "column chol: range [100, 600] in the release, [0, 600] in your schema (other.toml)"),
    (dict(chol_missing=""), "column chol: missing codes [0] in the release, [] in your schema (other.toml)"),
])
def test_a_different_map_is_named_at_adapt_and_score(hospitals, capsys, change, words):
    tmp = hospitals
    (tmp / "other.toml").write_text(schema_text(**change))
    capsys.readouterr()
    before = _spent(tmp)
    assert main(["adapt", "dpot", "--release", "stats.release", "--own-release", "request.release", "--data", "target.csv", "--schema", "other.toml",
                 "--out", "m.dpadapt"]) == 1
    err = capsys.readouterr().err.strip()
    assert words in err and err.count("\n") == 0 and not (tmp / "m.dpadapt").exists() and _spent(tmp) == before
    assert main(["adapt", "dpot", "--release", "stats.release", "--own-release", "request.release", "--data", "target.csv", "--schema", "schema.toml",
                 "--out", "m.dpadapt"]) == 0
    capsys.readouterr()
    assert main(["score", "--model", "m.dpadapt", "--data", "target_labelled.csv", "--schema", "other.toml"]) == 1
    assert words.replace("the release", "the model") in capsys.readouterr().err


def test_schema_against_no_schema_and_a_request_of_another_schema(hospitals, capsys, tmp_path):
    tmp = hospitals
    from dpadapt.tables import load_schema, read_table

    t = read_table(tmp / "target.csv", load_schema(tmp / "schema.toml"))
    np.savez(tmp / "target.npz", X=t.X)
    capsys.readouterr()
    assert main(["adapt", "dpot", "--release", "stats.release", "--own-release", "request.release", "--data", "target.npz", "--out", "m.dpadapt"]) == 1
    assert "the release maps rows through a declared schema and your data does not" in capsys.readouterr().err
    # the source checks the receiver's request too, before its ledger is touched
    (tmp / "other.toml").write_text(schema_text(chol_range=(50, 600)))
    assert main(["request", "--data", "target.csv", "--schema", "other.toml", "--n-source", "400", "--epsilon", "1",
                 "--delta", "1e-5", "--design", "prototypes", "--out", "other.release"]) == 0
    capsys.readouterr()
    before = _spent(tmp)
    assert main(["release", "dpot", "--data", "source.csv", "--schema", "schema.toml", "--request", "other.release",
                 "--epsilon", "1", "--delta", "1e-5", "--out", "b.release"]) == 1
    err = capsys.readouterr().err
    assert "other.release: column chol: range [50, 600] in the map, [100, 600] in your schema" in err
    assert _spent(tmp) == before and not (tmp / "b.release").exists()


def test_a_release_from_before_the_fingerprint_gets_a_clear_message(hospitals, capsys):
    tmp = hospitals
    old = Release.load(tmp / "stats.release")
    for key in ("schema", "class_names"):
        del old.params[key]
    old.save(tmp / "old.release")
    capsys.readouterr()
    assert main(["adapt", "dpot", "--release", "old.release", "--own-release", "request.release", "--data", "target.csv", "--schema", "schema.toml",
                 "--out", "m.dpadapt"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "old.release: this release file carries no schema fingerprint" in err
    assert "write it again with dpadapt" in err and "Traceback" not in err


def test_missing_code_imputed_and_clipping_reported(tmp_path, capsys, monkeypatch):
    """Was: chol = 0 ("not measured") clipped to 100 mg/dl without a word; values outside a range clipped silently."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "schema.toml").write_text(schema_text())
    (tmp_path / "nocode.toml").write_text(schema_text(chol_missing=""))
    export(tmp_path / "site.csv", 200, 3, "S", zero_chol=50, high_chol=4)
    from dpadapt.tables import load_schema, read_table

    coded = read_table(tmp_path / "site.csv", load_schema(tmp_path / "schema.toml"))
    plain = read_table(tmp_path / "site.csv", load_schema(tmp_path / "nocode.toml"))
    impute = 2 * (200 - 100) / 500 - 1
    np.testing.assert_allclose(coded.X[:50, 1], impute)                    # the declared value, not the range's floor
    np.testing.assert_allclose(plain.X[:50, 1], -1.0)                      # without the code: clipped to 100 ...
    assert coded.counts.columns["chol"].imputed == 50 and coded.counts.columns["chol"].clipped_high == 4
    assert plain.counts.columns["chol"].clipped_low == 50                   # ... and counted, never silently
    np.testing.assert_array_equal(coded.X[:, [0, 2, 3, 4, 5]], plain.X[:, [0, 2, 3, 4, 5]])
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    assert main(["request", "--data", "site.csv", "--schema", "schema.toml", "--n-source", "200", "--out", "b.release"]) == 0
    err = capsys.readouterr().err
    assert "note: site.csv: imputed as declared (missing cells and missing codes) in 1 of 3 columns: chol 50 (25.0 %)" in err
    assert "note: site.csv: clipped to the declared range in 1 columns: chol 4 (0 below 100, 4 above 600)" in err
    assert "warning: site.csv: column chol: 25.0 % of 200 rows were missing (or a missing code)" in err
    b = Release.load(tmp_path / "b.release")
    assert "50" not in str(b.params.get("schema")) and "counts" not in str(b.params)  # counts stay local
    assert main(["request", "--data", "site.csv", "--schema", "nocode.toml", "--n-source", "200", "--out", "c.release"]) == 0
    err = capsys.readouterr().err
    assert "chol 54 (50 below 100, 4 above 600)" in err and "lay outside the declared range and were clipped" in err


def test_chunk_counts_add_up(tmp_path):
    import pandas as pd

    from dpadapt.tables import MapCounts, iter_chunks, load_schema

    (tmp_path / "schema.toml").write_text(schema_text())
    export(tmp_path / "site.csv", 500, 4, "S", zero_chol=70, high_chol=9)
    schema = load_schema(tmp_path / "schema.toml")
    frame = pd.read_csv(tmp_path / "site.csv", dtype=str, keep_default_na=False)
    whole, parts = MapCounts(), []
    for _ in iter_chunks(frame, schema, chunk_rows=64, counts=whole):
        pass
    for start in range(0, 500, 64):
        part = MapCounts()
        list(iter_chunks(frame.iloc[start:start + 64], schema, counts=part))
        parts.append(part)
    total = MapCounts()
    for part in parts:
        total.add(part)
    assert whole == total and whole.rows == 500
    assert whole.columns["chol"].imputed == 70 and whole.columns["chol"].clipped_high == 9


def test_schema_check_lists_every_gap_at_once(tmp_path, capsys):
    """Was: `schema check` reported only the first of 13 gaps, and passed a label column not among the names."""
    names = [f"c{i}" for i in range(13)]
    export_ = tmp_path / "export.csv"
    export_.write_text(",".join(["pid"] + names + ["diagnosis"]) + "\n")
    draft = tmp_path / "draft.toml"
    assert main(["schema", "draft", "--header-of", str(export_), "--label", "diagnosis", "--classes", "no,yes",
                 "--id", "pid", "--out", str(draft)]) == 0
    capsys.readouterr()
    assert main(["schema", "check", str(draft)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert [line for line in err if "a numeric column needs its public range" in line] == [
        f"dpadapt schema: error: {draft}: columns.{n}.range: a numeric column needs its public range = [low, high]"
        for n in names]
    assert err[-1] == f"dpadapt schema: 13 problems in {draft}; fix them all, then check again"
    from dpadapt.tables import SchemaError, load_schema

    with pytest.raises(SchemaError) as exc:  # other commands: one line naming the first problems and the count
        load_schema(draft)
    assert str(exc.value).startswith(f"{draft}: 13 problems: columns.c0.range") and "\n" not in str(exc.value)
    assert f"and 10 more (`dpadapt schema check {draft}` lists them all)" in str(exc.value)
    headerless = tmp_path / "h.toml"
    headerless.write_text('[table]\nheader = false\nnames = ["a"]\n[label]\ncolumn = "y"\nclasses = ["no", "yes"]\n'
                          '[[columns]]\nname = "a"\ntype = "numeric"\nrange = [0, 1]\n')
    assert main(["schema", "check", str(headerless)]) == 1
    assert "table.names: the label column 'y' is declared but not in the names" in capsys.readouterr().err


def test_decimal_comma(tmp_path, capsys):
    """Was: a decimal comma could not be declared ('3,5' is not a number)."""
    from dpadapt.tables import TableError, read_table, schema_from_dict

    text = "patient_id;age;chol;cp;diagnosis\nA;61,5;233,0;1;healthy\nB;40;0;4;disease\n"
    (tmp_path / "eu.csv").write_text(text)
    doc = {"table": {"delimiter": ";", "decimal": ","}, "label": {"column": "diagnosis", "classes": ["healthy", "disease"]},
           "id": {"column": "patient_id"},
           "columns": [{"name": "age", "type": "numeric", "range": [18, 100]},
                       {"name": "chol", "type": "numeric", "range": [100, 600], "impute": 200, "missing": [0]},
                       {"name": "cp", "type": "categorical", "categories": [1, 2, 3, 4]}]}
    t = read_table(tmp_path / "eu.csv", schema_from_dict(doc))
    np.testing.assert_allclose(t.X[:, :2], [[2 * (61.5 - 18) / 82 - 1, 2 * (233 - 100) / 500 - 1],
                                            [2 * (40 - 18) / 82 - 1, 2 * (200 - 100) / 500 - 1]])
    doc["table"] = {"delimiter": ";"}
    with pytest.raises(TableError, match=r"line 2, column 'age': '61,5' is not a number .*declare decimal = \",\""):
        read_table(tmp_path / "eu.csv", schema_from_dict(doc))
    doc["table"] = {"decimal": ","}
    with pytest.raises(Exception, match=r"table.decimal: a decimal comma needs table.delimiter set to another character"):
        schema_from_dict(doc)


def test_duplicate_patient_ids_refused_or_bounded_per_patient(tmp_path, capsys, monkeypatch):
    """Was: a patient with two rows in a protected source was released as "record-level" (half the protection)."""
    from dpadapt.privacy.accounting import analytic_gaussian_epsilon
    from dpadapt.privacy.ledger import Ledger, fingerprint

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPADAPT_LEDGER", str(tmp_path / "ledger.sqlite"))
    (tmp_path / "schema.toml").write_text(schema_text())
    export(tmp_path / "source.csv", 400, 0, "SRC", duplicate=30)   # 30 patients with 2 rows
    export(tmp_path / "receiver.csv", 100, 5, "TGT", labelled=False)
    assert sound_request(data="receiver.csv") == 0
    S = ["--data", "source.csv", "--schema", "schema.toml"]
    assert main(["budget", "set", "--party", "source", *S, "--epsilon", "10", "--delta", "1e-5"]) == 0
    capsys.readouterr()
    base = ["release", "sound", *S, "--request", "req.release", "--epsilon", "2", "--delta", "1e-5"]
    assert main([*base, "--out", "a.release"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and not (tmp_path / "a.release").exists()
    assert "30 patient ID(s) of column 'patient_id' occur on more than one row (e.g. 'SRC-0000' on 2 rows)" in err
    assert "Declare --rows-per-patient K" in err
    assert Ledger(tmp_path / "ledger.sqlite").history() == []                    # nothing spent
    assert main([*base, "--rows-per-patient", "2", "--out", "b.release"]) == 0
    out = capsys.readouterr().out
    g = Release.load(tmp_path / "b.release").guarantee
    assert g.unit == "patient" and g.details["rows_per_patient"] == 2 and g.valid
    assert abs(g.epsilon - 2.0) < 1e-6 and g.details["per_row_epsilon"] < 1.2   # per row: far less than 2
    z = g.details["per_row_noise_multiplier"]                                # per row; per patient it is z / 2
    assert g.details["noise_multiplier"] == z / 2 and abs(analytic_gaussian_epsilon(z / 2, 1e-5) - 2.0) < 1e-6
    assert "patient-level (≤ 2 rows each)" in out
    spent = Ledger(tmp_path / "ledger.sqlite").spent("source", fingerprint(tmp_path / "source.csv"))
    assert abs(spent.epsilon - 2.0) < 1e-3                                        # the ledger charges the per-patient ε
    assert main(["report", "b.release"]) == 0
    assert "all rows (at most 2, by patient ID) of one patient of the source data" in capsys.readouterr().out
    # one row per patient is kept when K = 1: 30 rows left out, said on stderr
    assert main([*base, "--rows-per-patient", "1", "--out", "c.release"]) == 0
    assert "kept the first 1 row(s) of each of 30 patient(s) with more; 30 row(s) left out" in capsys.readouterr().err
    assert "n_source" not in Release.load(tmp_path / "c.release").params  # the bounded row count is not published
    # predict warns about repeated IDs (each row is still predicted on its own)
    export(tmp_path / "target.csv", 100, 5, "TGT", labelled=False, duplicate=3)
    assert main(["adapt", "sound", "--release", "b.release", "--own-release", "req.release", "--data", "target.csv",
                 "--schema", "schema.toml", "--out", "m.dpadapt"]) == 0
    capsys.readouterr()
    assert main(["predict", "--model", "m.dpadapt", "--data", "target.csv", "--schema", "schema.toml"]) == 0
    assert "warning: target.csv: 3 ID(s) of column 'patient_id' occur on more than one row" in capsys.readouterr().err
    # a subsampled method cannot use the bound: refused, nothing spent
    with pytest.raises(ValueError, match="supported for releases made of Gaussian mechanisms without subsampling"):
        from dpadapt.privacy.accounting import poisson_gaussian_event
        from dpadapt.privacy.group import group_guarantee
        from dpadapt.privacy.guarantee import Guarantee

        group_guarantee(Guarantee.from_event(poisson_gaussian_event(1.0, 0.01, 100), party="source", unit="record",
                                             relation="add_remove", delta=1e-5, theorem="DP-SGD"), 2)


def test_python_api_refuses_another_schema_and_never_inverts(tmp_path):
    """The same checks from Python: an estimator fitted through a schema keeps its fingerprint and class names."""
    from dpadapt.sound import SoundDA
    from dpadapt.tables import SchemaMismatch, SchemaModel, load_schema, read_table

    (tmp_path / "schema.toml").write_text(schema_text())
    (tmp_path / "swapped.toml").write_text(schema_text(classes=("disease", "healthy")))
    (tmp_path / "wide.toml").write_text(schema_text(chol_range=(0, 600)))
    export(tmp_path / "source.csv", 400, 0, "SRC")
    export(tmp_path / "target.csv", 300, 1, "TGT", shift=3)
    schema = load_schema(tmp_path / "schema.toml")
    src, tgt = read_table(tmp_path / "source.csv", schema), read_table(tmp_path / "target.csv", schema)
    model = SchemaModel(SoundDA(epsilon=4.0, random_state=0)).fit_domains(src, tgt)
    assert list(model.classes_) == ["healthy", "disease"]
    e = model.evaluate(tgt, n_boot=50)
    assert e.values["balanced_accuracy"] > 0.7 and set(model.predict(tgt)) <= {"healthy", "disease"}
    swapped = read_table(tmp_path / "target.csv", load_schema(tmp_path / "swapped.toml"))
    with pytest.raises(SchemaMismatch, match=r"class order differs: the model has \['healthy', 'disease'\], the table has"):
        model.predict(swapped)
    # the swapped table's indices mean the other class: predicting its rows by index would invert every label
    np.testing.assert_array_equal(swapped.labels, tgt.labels)
    assert np.all(swapped.y == 1 - tgt.y)
    with pytest.raises(SchemaMismatch, match=r"column chol: range \[100, 600\] in the model, \[0, 600\] in the table"):
        model.predict(read_table(tmp_path / "target.csv", load_schema(tmp_path / "wide.toml")))
    with pytest.raises(SchemaMismatch, match=r"class order differs: the source table has"):
        SchemaModel(SoundDA(epsilon=4.0)).fit_domains(src, swapped)
    with pytest.raises(SchemaMismatch, match=r"class order differs: the estimator has \['disease', 'healthy'\]"):
        SchemaModel(SoundDA(epsilon=4.0, classes=("disease", "healthy"))).fit_domains(src, tgt)


def test_label_shift_hook_shows_both(hospitals, capsys):
    """Where `dpadapt.labelshift` exists (the lead's module), score and the report show the corrected metrics
    BESIDE the uncorrected ones; the model file carries the source prior from the released noisy counts."""
    tmp = hospitals
    assert main(["adapt", "dpot", "--release", "stats.release", "--own-release", "request.release", "--data", "target.csv", "--schema", "schema.toml",
                 "--out", "m.dpadapt"]) == 0
    from dpadapt.modelio import load_model

    prior = load_model(tmp / "m.dpadapt").meta["source_prior"]
    assert len(prior) == 2 and abs(sum(prior) - 1) < 1e-12 and 0.2 < prior[1] < 0.6  # the source is ~40 % disease
    capsys.readouterr()
    assert main(["score", "--model", "m.dpadapt", "--data", "target_labelled.csv", "--schema", "schema.toml",
                 "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "-- as adapted" in out and "-- label-shift corrected" in out
    assert "-- at the estimated prevalence, decision rule:" in out and "estimated prevalence of" in out  # issue 36
    assert out.count("balanced accuracy") == 3
    assert main(["report", "m.dpadapt", "--html", "r.html", "--data", "target_labelled.csv", "--schema", "schema.toml",
                 "--bootstrap", "20"]) == 0
    assert "<th>as adapted</th>" in (tmp / "r.html").read_text() and "<th>label-shift corrected</th>" in (tmp / "r.html").read_text()
