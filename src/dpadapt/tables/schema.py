"""The declared table schema: every fact the per-row map needs, stated by the user as PUBLIC.

A schema says which column is the label (and its public label set, strings allowed), which column is
an ID (carried to predictions, never a feature), which columns are numeric (with a public range) or
categorical (with a public category list), and the public value that stands in for a missing cell.
Nothing in a schema is read from the protected rows, so the map built from it (``rowmap.RowMap``)
costs no privacy and both parties apply the same one.

File format (TOML, or the same structure as JSON)::

    [table]
    header = false                 # true (default): the first line names the columns
    names = ["age", "sex", ...]    # required when header = false: the file's columns in order
    delimiter = ","                # optional; detected from the first line when absent
    missing = ["?", ""]            # cell texts that mean "missing" (default: "", "?", "NA", "NaN", "nan")
    ignore = ["comment"]           # columns present in the file but not used
    decimal = ","                  # optional: a decimal comma ("3,5"); needs a delimiter other than ","

    [label]
    column = "num"
    classes = ["healthy", "disease"]           # the public label set, in index order
    map = { healthy = [0], disease = [1, 2, 3, 4] }  # optional: raw cell values of each class

    [id]
    column = "patient_id"          # optional

    [[columns]]
    name = "age"
    type = "numeric"
    range = [0, 110]
    impute = 55                    # optional public value for a missing cell (raw units)
    transform = "log1p"            # optional, counts: log(1 + x) before scaling
    missing = [0]                  # optional: this column's own missing-value codes (numbers or texts),
                                   # e.g. chol = 0 "not measured"; needs impute
    outside = "missing"            # optional: a value outside the range is a data error, imputed like a
                                   # missing cell (default "clip": clipped to the range); needs impute

    [[columns]]
    name = "cp"
    type = "categorical"
    categories = [1, 2, 3, 4]
    impute = 4                     # a declared category, or
    missing_as_zeros = true        # a missing cell becomes the all-zero one-hot block

A missing cell in a column without ``impute`` / ``missing_as_zeros`` is an error naming row and column.
A schema is checked as a whole: :class:`SchemaError` lists every problem (``problems``), and its message
is one line naming the file, the key of the first problems and how many there are.

:meth:`Schema.fingerprint` is the part of the schema that decides what a row maps to (feature columns
with their ranges, categories, transforms, imputation and missing codes; the table's missing codes and
decimal mark; the label set in order and its raw-value map): a readable dict and its SHA-256. Releases
and models carry it, so two parties (or a model and the data it scores) whose maps differ are refused
with the difference named (:func:`fingerprint_difference`). The file layout (header, column order in the
file, delimiter, ignored columns, the ID and label column names) is not part of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

DEFAULT_MISSING = ("", "?", "NA", "NaN", "nan")
DELIMITERS = (",", ";", "\t", "|")


#: Version of the fingerprint's layout (part of the hashed facts).
FINGERPRINT_VERSION = 1


class SchemaError(ValueError):
    """A schema file (or schema dictionary) that cannot be used; the message is one line.

    ``problems`` lists every problem found (each ``"key: what is wrong"``); the message names the file
    and the first ones.
    """

    def __init__(self, message: str, problems: tuple[str, ...] = ()):
        super().__init__(message)
        self.problems = tuple(problems) or (message,)


@dataclasses.dataclass(frozen=True)
class NumericColumn:
    """A numeric feature: scaled to [-1, 1] from its public ``range`` (after ``log1p`` if declared), clipped."""

    name: str
    low: float
    high: float
    impute: float | None = None
    log1p: bool = False
    #: this column's own missing-value codes: numbers (compared by value) and texts (compared as trimmed text)
    missing: tuple[float | str, ...] = ()
    #: what a value outside the range is: ``"clip"`` (clipped to it) or ``"missing"`` (a data error, imputed)
    outside: str = "clip"

    @property
    def width(self) -> int:
        return 1

    def facts(self) -> dict[str, Any]:
        return {"name": self.name, "type": "numeric", "range": [self.low, self.high],
                "transform": "log1p" if self.log1p else None, "impute": self.impute,
                "missing": _sorted_codes(self.missing), "outside": self.outside}

    def feature_names(self) -> list[str]:
        return [self.name]


@dataclasses.dataclass(frozen=True)
class CategoricalColumn:
    """A categorical feature: one-hot over its public ``categories`` (numbers or strings)."""

    name: str
    categories: tuple[float, ...] | tuple[str, ...]
    impute: float | str | None = None
    missing_as_zeros: bool = False
    #: this column's own missing-value codes (numbers or texts, as the categories)
    missing: tuple[float | str, ...] = ()

    def facts(self) -> dict[str, Any]:
        return {"name": self.name, "type": "categorical", "categories": list(self.categories),
                "impute": self.impute, "missing_as_zeros": self.missing_as_zeros,
                "missing": _sorted_codes(self.missing)}

    @property
    def numeric(self) -> bool:
        return all(isinstance(c, float) for c in self.categories)

    @property
    def width(self) -> int:
        return len(self.categories)

    def feature_names(self) -> list[str]:
        return [f"{self.name}={_fmt(c)}" for c in self.categories]


@dataclasses.dataclass(frozen=True)
class LabelSpec:
    """The label column and its public label set; ``raw`` maps each raw cell value to a class index."""

    column: str
    classes: tuple[str, ...] | tuple[int, ...]
    raw: tuple[tuple[float | str, int], ...]


@dataclasses.dataclass(frozen=True)
class Schema:
    """A parsed, checked schema. ``columns`` are the features, in output order."""

    columns: tuple[NumericColumn | CategoricalColumn, ...]
    label: LabelSpec | None = None
    id_column: str | None = None
    header: bool = True
    names: tuple[str, ...] | None = None
    delimiter: str | None = None
    missing: tuple[str, ...] = DEFAULT_MISSING
    ignore: tuple[str, ...] = ()
    source: str = "<schema>"
    decimal: str = "."

    @property
    def n_features(self) -> int:
        return sum(c.width for c in self.columns)

    @property
    def feature_names(self) -> list[str]:
        return [f for c in self.columns for f in c.feature_names()]

    @property
    def row_norm_bound(self) -> float:
        """Public bound on the L2 norm of one mapped row: each numeric column ≤ 1, each one-hot block ≤ 1."""
        return math.sqrt(len(self.columns))

    @property
    def classes(self) -> tuple | None:
        return None if self.label is None else self.label.classes

    def fingerprint(self) -> dict[str, Any]:
        """What decides the map from cells to features and labels: ``{"sha256", "facts"}`` (JSON-able).

        ``facts`` is readable (column names and order, ranges, categories, transforms, imputation, missing
        codes, decimal mark, the label set in order and its raw-value map); ``sha256`` hashes its canonical
        JSON. Compare two with :func:`fingerprint_difference`.
        """
        facts = {
            "version": FINGERPRINT_VERSION,
            "columns": [c.facts() for c in self.columns],
            "missing": sorted(set(self.missing)),
            "decimal": self.decimal,
            "label": None if self.label is None else {
                "classes": list(self.label.classes),
                "map": sorted(([_fmt(k), i] for k, i in self.label.raw), key=lambda kv: (kv[1], kv[0])),
            },
        }
        return {"sha256": fingerprint_sha256(facts), "facts": facts}

    def used_columns(self) -> list[str]:
        """Every column the map reads (features, label, ID)."""
        cols = [c.name for c in self.columns]
        if self.label is not None:
            cols.append(self.label.column)
        if self.id_column is not None:
            cols.append(self.id_column)
        return cols


#: The largest schema file read (a schema is a few kB; anything larger is refused before it is parsed).
MAX_SCHEMA_BYTES = 1024**2


def load_schema(path: str | os.PathLike) -> Schema:
    """Read and check a schema file (``.toml`` or ``.json``); every problem is listed in one :class:`SchemaError`."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(f"{path}: no such schema file" + (" (a folder; give the schema file in it)" if path.is_dir() else ""))
    size = path.stat().st_size
    if size > MAX_SCHEMA_BYTES:
        raise SchemaError(f"{path}: {size:,} bytes, more than a schema file may hold ({MAX_SCHEMA_BYTES:,}); refused unread")
    try:
        raw = path.read_bytes()
        if path.suffix.lower() == ".json":
            doc = json.loads(raw.decode("utf-8"))
        else:
            doc = tomllib.loads(raw.decode("utf-8"))
    except RecursionError:
        raise SchemaError(f"{path}: not a readable schema file (nested too deeply)") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise SchemaError(f"{path}: not a readable schema file ({' '.join(str(exc).split())})") from None
    return schema_from_dict(doc, source=str(path))


def schema_from_dict(doc: Any, source: str = "<schema>") -> Schema:
    """Build a :class:`Schema` from the parsed TOML/JSON structure (see the module docstring).

    Every section and column is checked even after a problem, so one :class:`SchemaError` lists every
    gap and contradiction (``problems``).
    """
    p = _Parser(source)
    schema = None
    with p.collect():
        schema = _build(p, doc, source)
    p.raise_if_any()
    assert schema is not None
    return schema


def _build(p: _Parser, doc: Any, source: str) -> Schema:
    if not isinstance(doc, dict):
        p.fail("", "the schema must be a table/object")
    with p.collect():
        p.unknown(doc, "", {"table", "label", "id", "columns"})
    table: dict = {}
    with p.collect():
        table = p.table(doc.get("table", {}), "table")
    with p.collect():
        p.unknown(table, "table", {"header", "names", "delimiter", "missing", "ignore", "decimal"})
    header, names, delimiter, decimal = True, None, None, "."
    missing, ignore = DEFAULT_MISSING, ()
    with p.collect():
        header = p.boolean(table.get("header", True), "table.header")
    with p.collect():
        if table.get("names") is not None:
            names = tuple(p.strings(table["names"], "table.names"))
            p.distinct(names, "table.names")
        elif not header:
            p.fail("table.names", "a file without a header (header = false) needs the column names in order")
    with p.collect():
        if table.get("delimiter") is not None:
            delimiter = p.string(table["delimiter"], "table.delimiter")
            if delimiter == "\\t":
                delimiter = "\t"
            if len(delimiter) != 1 or delimiter in "\"\r\n":
                p.fail("table.delimiter", f"must be one character other than a quote or newline, got {delimiter!r}")
    with p.collect():
        if "decimal" in table:
            decimal = p.string(table["decimal"], "table.decimal")
            if decimal not in (".", ","):
                p.fail("table.decimal", f"must be \".\" or \",\" (a decimal comma), got {decimal!r}")
            if decimal == "," and delimiter in (None, ","):
                p.fail("table.decimal", "a decimal comma needs table.delimiter set to another character "
                       "(e.g. delimiter = \";\"), or the comma in 3,5 would split the cell")
    with p.collect():
        missing = tuple(p.strings(table.get("missing", list(DEFAULT_MISSING)), "table.missing", allow_empty=True))
    with p.collect():
        ignore = tuple(p.strings(table.get("ignore", []), "table.ignore"))

    label = None
    if "label" in doc:
        with p.collect():
            label = _parse_label(p, p.table(doc["label"], "label"))
    id_column = None
    if "id" in doc:
        with p.collect():
            id_table = p.table(doc["id"], "id")
            p.unknown(id_table, "id", {"column"})
            if "column" not in id_table:
                p.fail("id.column", "missing")
            id_column = p.string(id_table["column"], "id.column")

    specs = doc.get("columns")
    columns: list[NumericColumn | CategoricalColumn] = []
    if not isinstance(specs, list) or not specs:
        with p.collect():
            p.fail("columns", "declare at least one feature column ([[columns]] with name and type)")
        specs = []
    for i, spec in enumerate(specs):
        with p.collect():
            column = _parse_column(p, p.table(spec, f"columns[{i}]"), f"columns[{i}]")
            if column is not None:
                columns.append(column)

    # the declared names (also of columns whose other keys have problems), so every gap is listed at once
    used = [spec["name"] for spec in specs if isinstance(spec, dict) and isinstance(spec.get("name"), str)]
    label_column = doc["label"].get("column") if isinstance(doc.get("label"), dict) else None
    if isinstance(label_column, str):
        used.append(label_column)
    if id_column is not None:
        used.append(id_column)
    with p.collect():
        p.distinct(used + list(ignore), "columns/label/id/ignore", what="column used twice")
    if names is not None:
        for u in used + list(ignore):
            if u not in names:
                what = "the label column" if u == label_column else ("the ID column" if u == id_column else "column")
                with p.collect():
                    p.fail("table.names", f"{what} {u!r} is declared but not in the names")
    p.raise_if_any()
    return Schema(
        columns=tuple(columns),
        label=label,
        id_column=id_column,
        header=header,
        names=names,
        delimiter=delimiter,
        missing=missing,
        ignore=ignore,
        source=source,
        decimal=decimal,
    )


def _parse_label(p: _Parser, spec: dict) -> LabelSpec | None:
    with p.collect():
        p.unknown(spec, "label", {"column", "classes", "map"})
    column = None
    with p.collect():
        if "column" not in spec:
            p.fail("label.column", "missing")
        column = p.string(spec["column"], "label.column")
    if "classes" not in spec:
        p.fail("label.classes", "the public label set is required (e.g. classes = [\"healthy\", \"disease\"])")
    classes = spec["classes"]
    if not isinstance(classes, list) or len(classes) < 2:
        p.fail("label.classes", "give at least two classes")
    if all(isinstance(c, str) for c in classes):
        classes = tuple(classes)
    elif all(isinstance(c, int) and not isinstance(c, bool) for c in classes):
        classes = tuple(int(c) for c in classes)
    else:
        p.fail("label.classes", "classes must be all strings or all integers")
    p.distinct(classes, "label.classes")
    raw: list[tuple[float | str, int]] = []
    if "map" in spec:
        mapping = p.table(spec["map"], "label.map")
        for cls, values in mapping.items():
            with p.collect():
                if cls not in [str(c) for c in classes]:
                    p.fail(f"label.map.{cls}", f"{cls!r} is not one of the classes {list(classes)}")
                index = [str(c) for c in classes].index(cls)
                if not isinstance(values, list):
                    values = [values]
                for v in values:
                    raw.append((_category_value(p, v, f"label.map.{cls}"), index))
        unmapped = [c for c in classes if str(c) not in mapping]
        if unmapped:
            p.fail("label.map", f"class {unmapped[0]!r} has no raw values (every class of the label set needs at least one)")
    else:
        for index, c in enumerate(classes):
            raw.append((float(c) if isinstance(c, int) else c, index))
    keys = [k for k, _ in raw]
    p.distinct(keys, "label.map", what="raw value mapped twice")
    kinds = {isinstance(k, float) for k in keys}
    if len(kinds) > 1:
        p.fail("label.map", "raw label values must be all numbers or all strings")
    if column is None:
        return None
    return LabelSpec(column=column, classes=classes, raw=tuple(raw))


def _parse_column(p: _Parser, spec: dict, key: str) -> NumericColumn | CategoricalColumn | None:
    """One feature column; each key is checked on its own so every problem of the column is listed."""
    if "name" not in spec:
        p.fail(f"{key}.name", "missing")
    name = p.string(spec["name"], f"{key}.name")
    key = f"columns.{name}"
    kind = spec.get("type")
    ok = True

    @contextlib.contextmanager
    def check():
        nonlocal ok
        before = len(p.problems)
        with p.collect():
            yield
        ok = ok and len(p.problems) == before

    missing: tuple[float | str, ...] = ()
    if kind == "numeric":
        with check():
            p.unknown(spec, key, {"name", "type", "range", "impute", "transform", "missing", "outside"})
        low = high = None
        with check():
            rng = spec.get("range")
            if not (isinstance(rng, list) and len(rng) == 2):
                p.fail(f"{key}.range", "a numeric column needs its public range = [low, high]")
            low, high = (p.number(v, f"{key}.range") for v in rng)
            if not low < high:
                p.fail(f"{key}.range", f"needs low < high, got [{_fmt(low)}, {_fmt(high)}]")
        transform = spec.get("transform")
        with check():
            if transform not in (None, "log1p"):
                p.fail(f"{key}.transform", f"unknown transform {transform!r}; the only one is 'log1p'")
            if transform == "log1p" and low is not None and low < 0:
                p.fail(f"{key}.range", "log1p needs a range with low >= 0 (counts)")
        with check():
            if low is not None and high is not None:
                width = (math.log1p(high) - math.log1p(low)) if transform == "log1p" and low >= 0 else high - low
                if not math.isfinite(2.0 * width):  # the map 2(x − low)/(high − low) − 1 runs in float64
                    p.fail(f"{key}.range", f"[{_fmt(low)}, {_fmt(high)}] is too wide: twice its width overflows float64, "
                                           "so the map to [-1, 1] would give NaN; declare a narrower public range")
        impute = None
        with check():
            if "impute" in spec:
                impute = p.number(spec["impute"], f"{key}.impute")
                if low is not None and high is not None and not low <= impute <= high:
                    p.fail(f"{key}.impute", f"{_fmt(impute)} is outside the range [{_fmt(low)}, {_fmt(high)}]")
        with check():
            missing = _missing_codes(p, spec, key, numeric=True)
            if missing and "impute" not in spec:
                p.fail(f"{key}.missing", "missing codes are declared but no public impute value: add impute = … "
                       "(the value a missing cell stands for)")
        outside = spec.get("outside", "clip")
        with check():
            if outside not in ("clip", "missing"):
                p.fail(f"{key}.outside", f"must be \"clip\" (the default) or \"missing\", got {outside!r}")
            if outside == "missing" and "impute" not in spec:
                p.fail(f"{key}.outside", "outside = \"missing\" imputes a value outside the range: add impute = …")
        return NumericColumn(name=name, low=low, high=high, impute=impute, log1p=transform == "log1p",
                             missing=missing, outside=outside) if ok else None
    if kind == "categorical":
        with check():
            p.unknown(spec, key, {"name", "type", "categories", "impute", "missing_as_zeros", "missing"})
        values: list[float | str] = []
        with check():
            cats = spec.get("categories")
            if not isinstance(cats, list) or not cats:
                p.fail(f"{key}.categories", "a categorical column needs its public list of categories")
            values = [_category_value(p, c, f"{key}.categories") for c in cats]
            if len({isinstance(v, float) for v in values}) > 1:
                p.fail(f"{key}.categories", "categories must be all numbers or all strings")
            p.distinct(values, f"{key}.categories")
        zeros = False
        with check():
            zeros = p.boolean(spec.get("missing_as_zeros", False), f"{key}.missing_as_zeros")
        impute = None
        with check():
            if "impute" in spec:
                if zeros:
                    p.fail(f"{key}.impute", "give impute or missing_as_zeros, not both")
                impute = _category_value(p, spec["impute"], f"{key}.impute")
                if values and impute not in values:
                    p.fail(f"{key}.impute", f"{_fmt(impute)!r} is not one of the declared categories")
        with check():
            numeric = bool(values) and all(isinstance(v, float) for v in values)
            missing = _missing_codes(p, spec, key, numeric=numeric)
            clash = [m for m in missing if m in values]
            if clash:
                p.fail(f"{key}.missing", f"{_fmt(clash[0])!r} is both a declared category and a missing code")
            if missing and impute is None and not zeros:
                p.fail(f"{key}.missing", "missing codes are declared but neither impute nor missing_as_zeros")
        return CategoricalColumn(name=name, categories=tuple(values), impute=impute, missing_as_zeros=zeros,
                                 missing=missing) if ok else None
    p.fail(f"{key}.type", f"must be 'numeric' or 'categorical', got {kind!r}")
    raise AssertionError  # unreachable: fail raises


def _missing_codes(p: _Parser, spec: dict, key: str, numeric: bool) -> tuple[float | str, ...]:
    """A column's own missing codes: numbers (and texts that read as numbers, in a numeric column) compare by value."""
    if "missing" not in spec:
        return ()
    codes = spec["missing"]
    if not isinstance(codes, list) or not codes:
        p.fail(f"{key}.missing", "must be a non-empty list of codes (numbers or texts), e.g. missing = [0]")
    out: list[float | str] = []
    for c in codes:
        value = _category_value(p, c, f"{key}.missing")
        if numeric and isinstance(value, str):
            try:
                value = float(value.strip()) if math.isfinite(float(value.strip())) else value
            except ValueError:
                pass
        out.append(value)
    p.distinct(out, f"{key}.missing")
    return tuple(out)


def _category_value(p: _Parser, v: Any, key: str) -> float | str:
    if isinstance(v, str):
        return v
    return p.number(v, key)


def _sorted_codes(codes) -> list:
    """Missing codes in a canonical order (numbers first, then texts)."""
    return sorted(codes, key=lambda c: (isinstance(c, str), c if isinstance(c, str) else float(c), str(c)))


def fingerprint_sha256(facts: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a schema's facts (see :meth:`Schema.fingerprint`)."""
    text = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _show(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_show(x) for x in v) + "]"
    if isinstance(v, float):
        return _fmt(v)
    return repr(v)


def fingerprint_difference(expected: dict | None, actual: dict | None, expected_name: str = "the release",
                           actual_name: str = "your schema") -> str | None:
    """The first difference between two schema fingerprints, in one line (``None`` when they are equal).

    ``expected`` / ``actual``: :meth:`Schema.fingerprint` dicts (or ``None`` for data read without a schema).
    The words name the part: the class order, a column's range / categories / transform / imputation /
    missing codes, the columns themselves, the table's missing codes or decimal mark.
    """
    if expected is None and actual is None:
        return None
    if expected is None or actual is None:
        have, lack = (expected_name, actual_name) if actual is None else (actual_name, expected_name)
        return (f"{have} maps rows through a declared schema and {lack} does not: both parties must read their "
                "tables through the same schema (--schema)")
    if expected.get("sha256") == actual.get("sha256"):
        return None
    a, b = expected.get("facts", {}), actual.get("facts", {})
    A, B = expected_name, actual_name
    la, lb = a.get("label"), b.get("label")
    if (la is None) != (lb is None):
        return f"{A} {'has' if la else 'has no'} label set, {B} {'has' if lb else 'has none'}"
    if la is not None:
        if la["classes"] != lb["classes"]:
            if sorted(map(str, la["classes"])) == sorted(map(str, lb["classes"])):
                return f"class order differs: {A} has {_show(la['classes'])}, {B} has {_show(lb['classes'])}"
            return f"label set differs: {A} has {_show(la['classes'])}, {B} has {_show(lb['classes'])}"
        if la["map"] != lb["map"]:
            return (f"label map differs: {A} maps raw values {_show(la['map'])}, {B} {_show(lb['map'])} "
                    "([raw value, class index])")
    ca, cb = a.get("columns", []), b.get("columns", [])
    na, nb = [c["name"] for c in ca], [c["name"] for c in cb]
    if na != nb:
        if sorted(na) == sorted(nb):
            i = next(i for i, (x, y) in enumerate(zip(na, nb)) if x != y)
            return (f"column order differs: at position {i + 1} {A} has {na[i]!r}, {B} has {nb[i]!r} "
                    "(the features must be declared in the same order)")
        only_a, only_b = [n for n in na if n not in nb], [n for n in nb if n not in na]
        parts = ([f"only {A} has {', '.join(map(repr, only_a[:3]))}"] if only_a else []) + (
            [f"only {B} has {', '.join(map(repr, only_b[:3]))}"] if only_b else [])
        return f"columns differ: {'; '.join(parts)}"
    words = {"type": "type", "range": "range", "categories": "categories (in order)", "transform": "transform",
             "impute": "impute value", "missing": "missing codes", "missing_as_zeros": "missing_as_zeros",
             "outside": "values outside the range"}
    for x, y in zip(ca, cb):
        for key, word in words.items():
            if x.get(key) != y.get(key):
                return f"column {x['name']}: {word} {_show(x.get(key))} in {A}, {_show(y.get(key))} in {B}"
    if a.get("missing") != b.get("missing"):
        return f"table missing-value codes differ: {_show(a.get('missing'))} in {A}, {_show(b.get('missing'))} in {B}"
    if a.get("decimal") != b.get("decimal"):
        return f"decimal mark differs: {a.get('decimal')!r} in {A}, {b.get('decimal')!r} in {B}"
    if a.get("version") != b.get("version"):
        return f"schema fingerprint version {a.get('version')} in {A}, {b.get('version')} in {B} (write both with one dpadapt version)"
    return f"schema fingerprints differ ({expected.get('sha256', '?')[:12]} in {A}, {actual.get('sha256', '?')[:12]} in {B})"


def _fmt(v: float | str) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


class _Fail(Exception):
    """One problem found (recorded by :meth:`_Parser.collect`)."""


class _Parser:
    """Small typed accessors that record one-line problems naming the schema file and key.

    ``fail`` raises; inside ``with p.collect():`` the problem is recorded and checking goes on, and
    :meth:`raise_if_any` raises one :class:`SchemaError` listing them all.
    """

    def __init__(self, source: str):
        self.source = source
        self.problems: list[str] = []

    def fail(self, key: str, message: str):
        raise _Fail(f"{key}: {message}" if key else message)

    @contextlib.contextmanager
    def collect(self):
        try:
            yield
        except _Fail as problem:
            if str(problem) not in self.problems:
                self.problems.append(str(problem))

    def raise_if_any(self) -> None:
        if not self.problems:
            return
        shown = "; ".join(self.problems[:3])
        more = len(self.problems) - 3
        if len(self.problems) == 1:
            message = f"{self.source}: {shown}"
        else:
            message = (f"{self.source}: {len(self.problems)} problems: {shown}"
                       + (f"; and {more} more (`dpadapt schema check {self.source}` lists them all)" if more > 0 else ""))
        raise SchemaError(message, tuple(f"{self.source}: {q}" for q in self.problems))

    def unknown(self, d: dict, key: str, allowed: set[str]) -> None:
        extra = sorted(set(d) - allowed)
        if extra:
            self.fail(f"{key}.{extra[0]}" if key else extra[0], f"unknown key (allowed: {', '.join(sorted(allowed))})")

    def table(self, v: Any, key: str) -> dict:
        if not isinstance(v, dict):
            self.fail(key, "must be a table/object")
        return v

    def string(self, v: Any, key: str) -> str:
        if not isinstance(v, str) or not v:
            self.fail(key, f"must be a non-empty string, got {v!r}")
        return v

    def strings(self, v: Any, key: str, allow_empty: bool = False) -> list[str]:
        if not isinstance(v, list) or not all(isinstance(s, str) and (s or allow_empty) for s in v):
            self.fail(key, "must be a list of strings")
        return list(v)

    def boolean(self, v: Any, key: str) -> bool:
        if not isinstance(v, bool):
            self.fail(key, f"must be true or false, got {v!r}")
        return v

    def number(self, v: Any, key: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self.fail(key, f"must be a finite number, got {v!r}")
        return float(v)

    def distinct(self, values, key: str, what: str = "duplicate") -> None:
        seen = set()
        for v in values:
            if v in seen:
                self.fail(key, f"{what}: {_fmt(v)!r}")
            seen.add(v)
