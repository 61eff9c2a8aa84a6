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

    [[columns]]
    name = "cp"
    type = "categorical"
    categories = [1, 2, 3, 4]
    impute = 4                     # a declared category, or
    missing_as_zeros = true        # a missing cell becomes the all-zero one-hot block

A missing cell in a column without ``impute`` / ``missing_as_zeros`` is an error naming row and column.
Every problem in a schema file is a one-line :class:`SchemaError` naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import tomllib
from pathlib import Path
from typing import Any

DEFAULT_MISSING = ("", "?", "NA", "NaN", "nan")
DELIMITERS = (",", ";", "\t", "|")


class SchemaError(ValueError):
    """A schema file (or schema dictionary) that cannot be used; the message is one line."""


@dataclasses.dataclass(frozen=True)
class NumericColumn:
    """A numeric feature: scaled to [-1, 1] from its public ``range`` (after ``log1p`` if declared), clipped."""

    name: str
    low: float
    high: float
    impute: float | None = None
    log1p: bool = False

    @property
    def width(self) -> int:
        return 1

    def feature_names(self) -> list[str]:
        return [self.name]


@dataclasses.dataclass(frozen=True)
class CategoricalColumn:
    """A categorical feature: one-hot over its public ``categories`` (numbers or strings)."""

    name: str
    categories: tuple[float, ...] | tuple[str, ...]
    impute: float | str | None = None
    missing_as_zeros: bool = False

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

    def used_columns(self) -> list[str]:
        """Every column the map reads (features, label, ID)."""
        cols = [c.name for c in self.columns]
        if self.label is not None:
            cols.append(self.label.column)
        if self.id_column is not None:
            cols.append(self.id_column)
        return cols


def load_schema(path: str | os.PathLike) -> Schema:
    """Read and check a schema file (``.toml`` or ``.json``); every problem is a one-line :class:`SchemaError`."""
    path = Path(path)
    if not path.is_file():
        raise SchemaError(f"{path}: no such schema file")
    try:
        raw = path.read_bytes()
        if path.suffix.lower() == ".json":
            doc = json.loads(raw.decode("utf-8"))
        else:
            doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise SchemaError(f"{path}: not a readable schema file ({' '.join(str(exc).split())})") from None
    return schema_from_dict(doc, source=str(path))


def schema_from_dict(doc: Any, source: str = "<schema>") -> Schema:
    """Build a :class:`Schema` from the parsed TOML/JSON structure (see the module docstring)."""
    p = _Parser(source)
    if not isinstance(doc, dict):
        p.fail("", "the schema must be a table/object")
    p.unknown(doc, "", {"table", "label", "id", "columns"})
    table = p.table(doc.get("table", {}), "table")
    p.unknown(table, "table", {"header", "names", "delimiter", "missing", "ignore"})
    header = p.boolean(table.get("header", True), "table.header")
    names = table.get("names")
    if names is not None:
        names = tuple(p.strings(names, "table.names"))
        p.distinct(names, "table.names")
    elif not header:
        p.fail("table.names", "a file without a header (header = false) needs the column names in order")
    delimiter = table.get("delimiter")
    if delimiter is not None:
        delimiter = p.string(delimiter, "table.delimiter")
        if delimiter == "\\t":
            delimiter = "\t"
        if len(delimiter) != 1 or delimiter in "\"\r\n":
            p.fail("table.delimiter", f"must be one character other than a quote or newline, got {delimiter!r}")
    missing = tuple(p.strings(table.get("missing", list(DEFAULT_MISSING)), "table.missing", allow_empty=True))
    ignore = tuple(p.strings(table.get("ignore", []), "table.ignore"))

    label = None
    if "label" in doc:
        label = _parse_label(p, p.table(doc["label"], "label"))
    id_column = None
    if "id" in doc:
        id_table = p.table(doc["id"], "id")
        p.unknown(id_table, "id", {"column"})
        if "column" not in id_table:
            p.fail("id.column", "missing")
        id_column = p.string(id_table["column"], "id.column")

    specs = doc.get("columns")
    if not isinstance(specs, list) or not specs:
        p.fail("columns", "declare at least one feature column ([[columns]] with name and type)")
    columns = tuple(_parse_column(p, p.table(spec, f"columns[{i}]"), f"columns[{i}]") for i, spec in enumerate(specs))

    used = [c.name for c in columns]
    if label is not None:
        used.append(label.column)
    if id_column is not None:
        used.append(id_column)
    p.distinct(used + list(ignore), "columns/label/id/ignore", what="column used twice")
    if names is not None:
        absent = [u for u in used if u not in names and (label is None or u != label.column)]
        if absent:
            p.fail("table.names", f"column {absent[0]!r} is declared but not in the names")
    return Schema(
        columns=columns,
        label=label,
        id_column=id_column,
        header=header,
        names=names,
        delimiter=delimiter,
        missing=missing,
        ignore=ignore,
        source=source,
    )


def _parse_label(p: _Parser, spec: dict) -> LabelSpec:
    p.unknown(spec, "label", {"column", "classes", "map"})
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
            if cls not in [str(c) for c in classes]:
                p.fail(f"label.map.{cls}", f"{cls!r} is not one of the classes {list(classes)}")
            index = [str(c) for c in classes].index(cls)
            if not isinstance(values, list):
                values = [values]
            for v in values:
                raw.append((_category_value(p, v, f"label.map.{cls}"), index))
    else:
        for index, c in enumerate(classes):
            raw.append((float(c) if isinstance(c, int) else c, index))
    keys = [k for k, _ in raw]
    p.distinct(keys, "label.map", what="raw value mapped twice")
    kinds = {isinstance(k, float) for k in keys}
    if len(kinds) > 1:
        p.fail("label.map", "raw label values must be all numbers or all strings")
    return LabelSpec(column=column, classes=classes, raw=tuple(raw))


def _parse_column(p: _Parser, spec: dict, key: str) -> NumericColumn | CategoricalColumn:
    if "name" not in spec:
        p.fail(f"{key}.name", "missing")
    name = p.string(spec["name"], f"{key}.name")
    key = f"columns.{name}"
    kind = spec.get("type")
    if kind == "numeric":
        p.unknown(spec, key, {"name", "type", "range", "impute", "transform"})
        rng = spec.get("range")
        if not (isinstance(rng, list) and len(rng) == 2):
            p.fail(f"{key}.range", "a numeric column needs its public range = [low, high]")
        low, high = (p.number(v, f"{key}.range") for v in rng)
        transform = spec.get("transform")
        if transform not in (None, "log1p"):
            p.fail(f"{key}.transform", f"unknown transform {transform!r}; the only one is 'log1p'")
        if transform == "log1p" and low < 0:
            p.fail(f"{key}.range", "log1p needs a range with low >= 0 (counts)")
        if not low < high:
            p.fail(f"{key}.range", f"needs low < high, got [{_fmt(low)}, {_fmt(high)}]")
        width = (math.log1p(high) - math.log1p(low)) if transform == "log1p" else high - low
        if not math.isfinite(2.0 * width):  # the map 2(x − low)/(high − low) − 1 runs in float64 (issue 27, item 6)
            p.fail(f"{key}.range", f"[{_fmt(low)}, {_fmt(high)}] is too wide: twice its width overflows float64, "
                                   "so the map to [-1, 1] would give NaN; declare a narrower public range")
        impute = None
        if "impute" in spec:
            impute = p.number(spec["impute"], f"{key}.impute")
            if not low <= impute <= high:
                p.fail(f"{key}.impute", f"{_fmt(impute)} is outside the range [{_fmt(low)}, {_fmt(high)}]")
        return NumericColumn(name=name, low=low, high=high, impute=impute, log1p=transform == "log1p")
    if kind == "categorical":
        p.unknown(spec, key, {"name", "type", "categories", "impute", "missing_as_zeros"})
        cats = spec.get("categories")
        if not isinstance(cats, list) or not cats:
            p.fail(f"{key}.categories", "a categorical column needs its public list of categories")
        values = [_category_value(p, c, f"{key}.categories") for c in cats]
        if len({isinstance(v, float) for v in values}) > 1:
            p.fail(f"{key}.categories", "categories must be all numbers or all strings")
        p.distinct(values, f"{key}.categories")
        zeros = p.boolean(spec.get("missing_as_zeros", False), f"{key}.missing_as_zeros")
        impute = None
        if "impute" in spec:
            if zeros:
                p.fail(f"{key}.impute", "give impute or missing_as_zeros, not both")
            impute = _category_value(p, spec["impute"], f"{key}.impute")
            if impute not in values:
                p.fail(f"{key}.impute", f"{_fmt(impute)!r} is not one of the declared categories")
        return CategoricalColumn(name=name, categories=tuple(values), impute=impute, missing_as_zeros=zeros)
    p.fail(f"{key}.type", f"must be 'numeric' or 'categorical', got {kind!r}")
    raise AssertionError  # unreachable: fail raises


def _category_value(p: _Parser, v: Any, key: str) -> float | str:
    if isinstance(v, str):
        return v
    return p.number(v, key)


def _fmt(v: float | str) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


class _Parser:
    """Small typed accessors that raise one-line errors naming the schema file and key."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, key: str, message: str):
        where = f"{self.source}: {key}: " if key else f"{self.source}: "
        raise SchemaError(where + message)

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
