"""The declared table schema, its fixed per-row map, and the CSV / Parquet / DataFrame readers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpadapt.tables import SchemaError, TableError, iter_chunks, load_schema, read_table, schema_from_dict

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

SCHEMA = {
    "table": {"missing": ["", "?"]},
    "label": {"column": "diagnosis", "classes": ["healthy", "disease"]},
    "id": {"column": "patient"},
    "columns": [
        {"name": "age", "type": "numeric", "range": [0, 100], "impute": 50},
        {"name": "visits", "type": "numeric", "range": [0, 99], "transform": "log1p"},
        {"name": "cp", "type": "categorical", "categories": [1, 2, 3], "missing_as_zeros": True},
        {"name": "site", "type": "categorical", "categories": ["a", "b"], "impute": "b"},
    ],
}
GOOD = "patient,age,visits,cp,site,diagnosis\nP1,25,0,1,a,healthy\nP2,,99,3,,disease\nP3,150,9,?,b,healthy\n"


def write(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_map_is_the_declared_one(tmp_path):
    t = read_table(write(tmp_path, GOOD), schema_from_dict(SCHEMA))
    assert t.feature_names == ["age", "visits", "cp=1", "cp=2", "cp=3", "site=a", "site=b"]
    assert t.classes == ("healthy", "disease")
    np.testing.assert_array_equal(t.y, [0, 1, 0])
    np.testing.assert_array_equal(t.ids, ["P1", "P2", "P3"])
    visits9 = 2 * np.log1p(9) / np.log1p(99) - 1
    np.testing.assert_allclose(t.X, [
        [-0.5, -1.0, 1, 0, 0, 1, 0],      # 25 of [0, 100]
        [0.0, 1.0, 0, 0, 1, 0, 1],        # age imputed 50, site imputed 'b'
        [1.0, visits9, 0, 0, 0, 0, 1],    # age 150 clipped to 100, cp missing -> zeros
    ])
    assert np.all(np.linalg.norm(t.X, axis=1) <= schema_from_dict(SCHEMA).row_norm_bound + 1e-12)


def test_chunks_equal_whole_and_label_optional(tmp_path):
    rows = "".join(f"P{i},{i % 100},{i % 7},{1 + i % 3},{'ab'[i % 2]},{('healthy', 'disease')[i % 2]}\n" for i in range(500))
    path = write(tmp_path, "patient,age,visits,cp,site,diagnosis\n" + rows)
    schema = schema_from_dict(SCHEMA)
    whole = read_table(path, schema)
    df = pd.read_csv(path, dtype=str, keep_default_na=False)
    parts = list(iter_chunks(df, schema, chunk_rows=64))
    assert len(parts) == 8
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), whole.X)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), whole.y)
    unlabelled = read_table(df.drop(columns=["diagnosis"]), schema)
    assert unlabelled.y is None
    np.testing.assert_array_equal(unlabelled.X, whole.X)


def test_parquet_and_typed_frame_match_csv(tmp_path):
    schema = schema_from_dict(SCHEMA)
    csv_t = read_table(write(tmp_path, GOOD), schema)
    frame = pd.DataFrame({"patient": ["P1", "P2", "P3"], "age": [25.0, np.nan, 150.0], "visits": [0, 99, 9],
                          "cp": [1.0, 3.0, None], "site": ["a", None, "b"], "diagnosis": ["healthy", "disease", "healthy"]})
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "t.parquet", row_group_size=2)
    for source in (frame, tmp_path / "t.parquet", pa.Table.from_pandas(frame, preserve_index=False)):
        t = read_table(source, schema)
        np.testing.assert_allclose(t.X, csv_t.X)
        np.testing.assert_array_equal(t.y, csv_t.y)


def test_heart_example_schema(data_root):
    schema = load_schema(EXAMPLES / "heart.schema.toml")
    raw = data_root / "uci_heart_disease" / "raw"
    for site, counts in (("cleveland", [164, 139]), ("hungarian", [188, 106])):
        t = read_table(raw / f"processed.{site}.data", schema)
        assert t.X.shape == (sum(counts), 25)
        np.testing.assert_array_equal(np.bincount(t.y), counts)  # the MANIFEST's binarised class counts
        assert np.all(np.abs(t.X) <= 1.0)


@pytest.mark.parametrize("patch, message", [
    ({"columns": []}, "columns: declare at least one"),
    ({"label": {"column": "d", "classes": ["x"]}}, "label.classes: give at least two"),
    ({"label": {"column": "d", "classes": ["a", "b"], "map": {"c": [1]}}}, "label.map.c: 'c' is not one of"),
    ({"table": {"header": False}}, "table.names: a file without a header"),
    ({"table": {"delimiter": ";;"}}, "table.delimiter: must be one character"),
    ({"columns": [{"name": "x", "type": "numeric"}]}, "columns.x.range: a numeric column needs"),
    ({"columns": [{"name": "x", "type": "numeric", "range": [5, 1]}]}, "columns.x.range: needs low < high"),
    ({"columns": [{"name": "x", "type": "numeric", "range": [0, 1], "impute": 3}]}, "columns.x.impute: 3 is outside"),
    ({"columns": [{"name": "x", "type": "categorical", "categories": [1, 1]}]}, "columns.x.categories: duplicate"),
    ({"columns": [{"name": "x", "type": "categorical", "categories": [1], "impute": 2}]}, "columns.x.impute: '2' is not one"),
    ({"columns": [{"name": "x", "type": "text"}]}, "columns.x.type: must be 'numeric' or 'categorical'"),
    ({"columns": [{"name": "x", "type": "numeric", "range": [0, 1], "scale": 2}]}, "columns.x.scale: unknown key"),
    ({"id": {"column": "age"}}, "column used twice: 'age'"),
])
def test_schema_errors_are_one_line(patch, message):
    doc = {**SCHEMA, **patch}
    with pytest.raises(SchemaError) as err:
        schema_from_dict(doc, source="s.toml")
    text = str(err.value)
    assert message in text and text.startswith("s.toml: ") and "\n" not in text


def test_schema_file_errors(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[table\n")
    with pytest.raises(SchemaError, match=r"bad.toml: not a readable schema file"):
        load_schema(bad)
    js = tmp_path / "s.json"
    js.write_text(json.dumps(SCHEMA))
    assert load_schema(js).n_features == 7
    with pytest.raises(SchemaError, match="no such schema file"):
        load_schema(tmp_path / "absent.toml")


HEADERLESS = {**SCHEMA, "table": {"header": False, "names": ["patient", "age", "visits", "cp", "site", "diagnosis"]}}


BAD_CSV = [
    # a file without its header: the first data line must not be eaten as a header
    ("no-header", "P1,25,0,1,a,healthy\nP2,30,1,2,b,disease\n", SCHEMA, "the first line looks like data, not a header"),
    ("numeric-header-hint", "1,25,0,1,2,0\n", SCHEMA, "the first line looks like data, not a header"),
    ("duplicate-header", "patient,age,age,visits,cp,site,diagnosis\nP1,1,1,0,1,a,healthy\n", SCHEMA, "duplicate column name 'age'"),
    ("semicolon-declared-comma", GOOD.replace(",", ";"), {**SCHEMA, "table": {"delimiter": ","}}, "header was read as one column"),
    ("empty-cell-no-impute", "patient,age,visits,cp,site,diagnosis\nP1,25,0,1,a,healthy\nP2,30,,1,a,healthy\n", SCHEMA,
     "line 3, column 'visits': missing value and the schema declares no impute"),
    ("not-a-number", "patient,age,visits,cp,site,diagnosis\nP1,25,0,1,a,healthy\nP2,thirty,1,1,a,healthy\n", SCHEMA,
     "line 3, column 'age': 'thirty' is not a number"),
    ("infinite", "patient,age,visits,cp,site,diagnosis\nP1,inf,0,1,a,healthy\n", SCHEMA, "line 2, column 'age': inf is not a finite"),
    ("unknown-category", "patient,age,visits,cp,site,diagnosis\nP1,25,0,4,a,healthy\n", SCHEMA,
     "line 2, column 'cp': '4' is not one of the declared categories"),
    ("unknown-string-category", "patient,age,visits,cp,site,diagnosis\nP1,25,0,1,c,healthy\n", SCHEMA,
     "line 2, column 'site': 'c' is not one of"),
    ("unknown-label", "patient,age,visits,cp,site,diagnosis\nP1,25,0,1,a,sick\n", SCHEMA,
     "line 2, column 'diagnosis': label 'sick' is not in the public label set"),
    ("missing-label", "patient,age,visits,cp,site,diagnosis\nP1,25,0,1,a,\n", SCHEMA, "line 2, column 'diagnosis': missing label"),
    ("missing-id", "patient,age,visits,cp,site,diagnosis\n,25,0,1,a,healthy\n", SCHEMA, "line 2, column 'patient': missing ID"),
    ("ragged-row", "patient,age,visits,cp,site,diagnosis\nP1,25,0,1,a,healthy\nP2,25,0,1,a\n", SCHEMA,
     "line 3: 5 columns, expected 6"),
    ("blank-line", "patient,age,visits,cp,site,diagnosis\nP1,25,0,1,a,healthy\n\nP2,25,0,1,a,healthy\n", SCHEMA, "line 3: blank line"),
    ("undeclared-column", "patient,age,visits,cp,site,diagnosis,extra\nP1,25,0,1,a,healthy,1\n", SCHEMA,
     "column 'extra' is not in the schema; declare it or list it in table.ignore"),
    ("headerless-wrong-count", "P1,25,0,1\n", HEADERLESS, "line 1: 4 columns, but table.names lists 6"),
    ("header-only", "patient,age,visits,cp,site,diagnosis\n", SCHEMA, "no data rows"),
    ("empty-file", "", SCHEMA, "empty header line"),
]


@pytest.mark.parametrize("text, schema, message", [b[1:] for b in BAD_CSV], ids=[b[0] for b in BAD_CSV])
def test_bad_csv_one_line_error(tmp_path, text, schema, message):
    path = write(tmp_path, text)
    with pytest.raises(TableError) as err:
        read_table(path, schema_from_dict(schema))
    text = str(err.value)
    assert message in text and text.startswith(str(path)) and "\n" not in text


def test_delimiter_detected_and_headerless(tmp_path):
    schema = schema_from_dict(SCHEMA)
    ref = read_table(write(tmp_path, GOOD), schema)
    for delim in (";", "\t", "|"):
        t = read_table(write(tmp_path, GOOD.replace(",", delim), f"d{ord(delim)}.csv"), schema)
        np.testing.assert_array_equal(t.X, ref.X)
    t = read_table(write(tmp_path, GOOD.split("\n", 1)[1], "nohead.csv"), schema_from_dict(HEADERLESS))
    np.testing.assert_array_equal(t.X, ref.X)
    unlabelled = "".join(",".join(line.split(",")[:-1]) + "\n" for line in GOOD.splitlines()[1:])
    t = read_table(write(tmp_path, unlabelled, "nolabel.csv"), schema_from_dict(HEADERLESS))
    assert t.y is None and t.X.shape == ref.X.shape


def test_bad_parquet_and_frame(tmp_path):
    schema = schema_from_dict(SCHEMA)
    frame = pd.DataFrame({"patient": ["P1", "P2"], "age": [25.0, 30.0], "visits": [0.0, np.nan],
                          "cp": [1, 2], "site": ["a", "b"], "diagnosis": ["healthy", "disease"]})
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "m.parquet")
    with pytest.raises(TableError, match=r"m.parquet: row 2, column 'visits': missing value"):
        read_table(tmp_path / "m.parquet", schema)
    with pytest.raises(TableError, match=r"^DataFrame: row 2, column 'visits': missing value"):
        read_table(frame, schema)
    with pytest.raises(TableError, match=r"^DataFrame: column 'age' mixes numbers and text"):
        read_table(frame.assign(age=[25.0, "x"]), schema)
    with pytest.raises(TableError, match=r"^DataFrame: row 1, column 'cp': '9' is not one"):
        read_table(frame.assign(cp=[9, 2], visits=[0.0, 1.0]), schema)
    with pytest.raises(TableError, match=r"^DataFrame: column 'x' is not in the schema"):
        read_table(frame.assign(x=1), schema)
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(TableError, match=r"junk.parquet: not a readable Parquet file"):
        read_table(tmp_path / "junk.parquet", schema)
    with pytest.raises(TableError, match="unsupported table source"):
        read_table([[1, 2]], schema)


def test_a_schema_table_without_an_id_column_reads_no_ids(tmp_path, monkeypatch):
    """``ids`` of a table whose schema declares no ID column is ``None`` without a pass over the file (the release
    command asks for it once per run); with an ID column it is read."""
    import dpadapt.tables as tables
    from dpadapt.cli.table_options import SchemaTable

    no_id = schema_from_dict({k: v for k, v in SCHEMA.items() if k != "id"})
    path = write(tmp_path, GOOD)
    passes = []
    real = tables.iter_chunks
    monkeypatch.setattr(tables, "iter_chunks", lambda *a, **k: passes.append(1) or real(*a, **k))
    assert SchemaTable(None, path, no_id).ids is None and passes == []
    np.testing.assert_array_equal(SchemaTable(None, path, schema_from_dict(SCHEMA)).ids, ["P1", "P2", "P3"])
    assert passes == [1]
