"""The fixed per-row map built from a schema alone.

Each row's cells go to a feature vector by rules the schema declares as public: a numeric cell is
clipped to its declared range (after ``log1p`` for counts) and scaled to [-1, 1]; a categorical cell
becomes a one-hot block over the declared categories; a missing cell takes the declared imputation
value (or the all-zero block). The map reads one row at a time and nothing else, so no statistic of
the protected rows enters it: it is post-processing-free preprocessing that costs no privacy, and
every mapped row has L2 norm at most ``sqrt(number of declared columns)`` (``Schema.row_norm_bound``).

Cells arrive as pyarrow arrays (text from CSV, typed from Parquet / DataFrames). Every bad cell is a
one-line ``TableError`` naming the source, the row and the column.

What the map did to the rows is counted per column (:class:`MapCounts`: cells imputed because they were
missing or carried a declared missing code, values clipped to the declared range). The counts add up
chunk by chunk. They are computed from the rows, so they are for the local report of the party that
read them (``dpadapt`` prints them on stderr and in ``report --html``), never for a release.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .schema import CategoricalColumn, NumericColumn, Schema, _fmt


class TableError(ValueError):
    """A table that does not fit its schema; the message is one line naming file, row and column."""


Locate = Callable[[int | None], str]  # chunk row index -> "file: line 17"; None -> "file"


#: A column whose imputed (or clipped) share of the rows exceeds this is warned about.
WARN_SHARE = 0.05


@dataclasses.dataclass
class ColumnCounts:
    """What the map did to one column: cells imputed (missing / a missing code) and values clipped."""

    imputed: int = 0
    clipped_low: int = 0
    clipped_high: int = 0
    #: values outside the range of a column that declares them missing (``outside = "missing"``; also in ``imputed``)
    outside: int = 0

    @property
    def clipped(self) -> int:
        return self.clipped_low + self.clipped_high


@dataclasses.dataclass
class MapCounts:
    """Per-column counts of what the map imputed and clipped, summed over chunks (``add``).

    Computed from the rows: for the local report of the party that read them, never for a release.
    """

    rows: int = 0
    columns: dict[str, ColumnCounts] = dataclasses.field(default_factory=dict)

    def column(self, name: str) -> ColumnCounts:
        return self.columns.setdefault(name, ColumnCounts())

    def add(self, other: MapCounts) -> MapCounts:
        self.rows += other.rows
        for name, c in other.columns.items():
            mine = self.column(name)
            mine.imputed += c.imputed
            mine.clipped_low += c.clipped_low
            mine.clipped_high += c.clipped_high
            mine.outside += c.outside
        return self

    def to_dict(self) -> dict:
        return {"rows": self.rows, "columns": {k: dataclasses.asdict(v) for k, v in self.columns.items()
                                               if v.imputed or v.clipped}}

    def summary(self, schema: Schema, where: str, warn_share: float = WARN_SHARE,
                most: int | None = 6) -> tuple[list[str], list[str]]:
        """``(notes, warnings)``: one note line for what was imputed (the ``most`` largest columns; all with
        ``None``) and one for what was clipped, and one warning per column whose imputed or clipped share of the
        rows exceeds ``warn_share``."""
        n = max(self.rows, 1)
        ranges = {c.name: (c.low, c.high) for c in schema.columns if isinstance(c, NumericColumn)}
        imputed = [(k, c.imputed) for k, c in self.columns.items() if c.imputed]
        clipped = [(k, c) for k, c in self.columns.items() if c.clipped]
        notes, warns = [], []
        if imputed:
            shown = sorted(imputed, key=lambda kv: -kv[1])
            notes.append(f"{where}: imputed as declared (missing cells and missing codes) in {len(imputed)} of {len(schema.columns)} columns: "
                         + ", ".join(f"{k} {v} ({100 * v / n:.1f} %)" for k, v in shown[:most])
                         + (f", … ({len(shown) - most} more)" if most is not None and len(shown) > most else ""))
        outside = [(k, c.outside) for k, c in self.columns.items() if c.outside]
        if outside:
            notes.append(f"{where}: values outside the declared range taken as missing (outside = \"missing\"): "
                         + ", ".join(f"{k} {v} (outside [{_fmt(ranges[k][0])}, {_fmt(ranges[k][1])}])" for k, v in outside))
        if clipped:
            notes.append(f"{where}: clipped to the declared range in {len(clipped)} columns: " + ", ".join(
                f"{k} {c.clipped} ({c.clipped_low} below {_fmt(ranges[k][0])}, {c.clipped_high} above {_fmt(ranges[k][1])})"
                for k, c in clipped))
        many_imputed = sorted(((k, c.imputed) for k, c in self.columns.items() if c.imputed / n > warn_share),
                              key=lambda kv: -kv[1])
        if len(many_imputed) > 3:  # a wide table: one line, not one per column
            warns.append(f"{where}: {len(many_imputed)} of {len(schema.columns)} columns had more than "
                         f"{100 * warn_share:g} % of their {self.rows} rows missing (or a missing code), imputed as "
                         "declared: " + ", ".join(f"{k} {100 * v / n:.1f} %" for k, v in many_imputed[:5])
                         + ", … (`dpadapt report --html --data` lists what was imputed)")
        else:
            for k, v in many_imputed:
                warns.append(f"{where}: column {k}: {100 * v / n:.1f} % of {self.rows} rows were missing "
                             f"(or a missing code) and were imputed as declared (above {100 * warn_share:g} %)")
        for k, c in self.columns.items():
            if c.clipped / n > warn_share:
                warns.append(f"{where}: column {k}: {100 * c.clipped / n:.1f} % of {self.rows} rows lay outside the "
                             f"declared range and were clipped (above {100 * warn_share:g} %): is the range right?")
        return notes, warns

    def imputed_table(self) -> list[tuple[str, int, int, int]]:
        """``(column, imputed, outside the range taken as missing, clipped)`` for every column the map changed."""
        return [(k, c.imputed, c.outside, c.clipped) for k, c in self.columns.items() if c.imputed or c.clipped]


class RowMap:
    """The schema's per-row map: ``transform(cells)`` -> ``(X, y_idx, ids)``."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self._missing = pa.array(list(schema.missing), type=pa.string())

    @property
    def feature_names(self) -> list[str]:
        return self.schema.feature_names

    def transform(
        self, cells: Mapping[str, pa.Array], n_rows: int, locate: Locate, counts: MapCounts | None = None
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Map one chunk. ``cells`` holds every feature column, and the label / ID column when present.

        Returns ``X`` float64 ``(n_rows, n_features)``, ``y_idx`` int64 indices into the public label
        set (``None`` when the label column is absent) and ``ids`` (object array of strings, or ``None``).
        ``counts``, when given, gets this chunk's imputed / clipped cells per column added.
        """
        X = np.zeros((n_rows, self.schema.n_features), dtype=np.float64)
        chunk = MapCounts(rows=n_rows)
        j = 0
        for col in self.schema.columns:
            block = X[:, j : j + col.width]
            if isinstance(col, NumericColumn):
                block[:, 0] = self._numeric(col, cells[col.name], locate, chunk.column(col.name))
            else:
                self._one_hot(col, cells[col.name], block, locate, chunk.column(col.name))
            j += col.width
        y = None
        label = self.schema.label
        if label is not None and label.column in cells:
            y = self._label(cells[label.column], locate)
        ids = None
        if self.schema.id_column is not None and self.schema.id_column in cells:
            ids = self._ids(cells[self.schema.id_column], locate)
        if counts is not None:  # only once the whole chunk mapped: an error leaves the counts as they were
            counts.add(chunk)
        return X, y, ids

    # ---- cells -> numbers -------------------------------------------------------------------------
    def _codes(self, codes: tuple = ()) -> tuple[pa.Array, np.ndarray]:
        """The missing texts (the table's and a column's own texts) and a column's numeric codes."""
        texts = list(self.schema.missing) + [c for c in codes if isinstance(c, str)]
        numbers = np.array([c for c in codes if not isinstance(c, str)], dtype=np.float64)
        return pa.array(texts, type=pa.string()), numbers

    def _parse(self, name: str, arr: pa.Array, locate: Locate, codes: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
        """Cells as float64 plus a missing mask; text is trimmed and the schema's missing codes apply
        (the table's texts; the column's own texts and numbers, numbers compared by value)."""
        arr = _plain(arr)
        texts, numbers = self._codes(codes) if codes else (self._missing, np.empty(0))
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            text = pc.utf8_trim_whitespace(arr)
            missing = pc.or_kleene(pc.is_null(text), pc.is_in(text, value_set=texts))
            missing = missing.fill_null(True)
            if self.schema.decimal == ",":
                text = pc.replace_substring(text, ",", ".")
            try:
                values = pc.cast(pc.if_else(missing, None, text), pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                bad = _first_unparsable(text, missing)
                cell = arr[bad].as_py().strip()
                hint = (" (a decimal comma? declare decimal = \",\" and a delimiter other than \",\" in [table])"
                        if "," in cell and self.schema.decimal == "." else "")
                raise TableError(f"{locate(bad)}, column {name!r}: {cell!r} is not a number "
                                 f"(missing-value codes: {_codes(self.schema.missing + tuple(_fmt(c) for c in codes))}){hint}") from None
        elif pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type) or pa.types.is_boolean(arr.type) \
                or pa.types.is_null(arr.type) or pa.types.is_decimal(arr.type):
            values = pc.cast(arr, pa.float64())
            missing = pc.is_null(values, nan_is_null=True)
        else:
            raise TableError(f"{locate(None)}: column {name!r} has type {arr.type}, not numbers or text")
        miss = np.asarray(missing.to_numpy(zero_copy_only=False), dtype=bool)
        out = np.array(values.fill_null(0.0).to_numpy(zero_copy_only=False), dtype=np.float64)
        out[miss] = 0.0
        bad = np.flatnonzero(~np.isfinite(out))
        if bad.size:
            raise TableError(f"{locate(int(bad[0]))}, column {name!r}: {_fmt(float(out[bad[0]]))} is not a finite number")
        if numbers.size:
            coded = np.isin(out, numbers) & ~miss
            miss = miss | coded
            out[coded] = 0.0
        return out, miss

    def _text(self, arr: pa.Array, codes: tuple = ()) -> tuple[pa.Array, np.ndarray]:
        """Cells as trimmed text plus a missing mask (numbers are written without a trailing '.0')."""
        arr = _plain(arr)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = pa.array([None if v is None else _fmt(v) if isinstance(v, float) else str(v) for v in arr.to_pylist()],
                           type=pa.string())
        text = pc.utf8_trim_whitespace(arr)
        texts = self._missing if not codes else pa.array(list(self.schema.missing) + [_fmt(c) for c in codes], type=pa.string())
        missing = pc.or_kleene(pc.is_null(text), pc.is_in(text, value_set=texts)).fill_null(True)
        return text, np.asarray(missing.to_numpy(zero_copy_only=False), dtype=bool)

    def _numeric(self, col: NumericColumn, arr: pa.Array, locate: Locate, counts: ColumnCounts) -> np.ndarray:
        x, miss = self._parse(col.name, arr, locate, col.missing)
        if col.outside == "missing":  # a value outside the declared range is a data error: imputed, counted
            wrong = ~miss & ((x < col.low) | (x > col.high))
            counts.outside += int(wrong.sum())
            miss = miss | wrong
        if miss.any():
            if col.impute is None:
                raise TableError(f"{locate(int(np.flatnonzero(miss)[0]))}, column {col.name!r}: missing value "
                                 "and the schema declares no impute value for this column")
            x[miss] = col.impute
        counts.imputed += int(miss.sum())
        counts.clipped_low += int(np.count_nonzero(x < col.low))
        counts.clipped_high += int(np.count_nonzero(x > col.high))
        x = np.clip(x, col.low, col.high)
        low, high = col.low, col.high
        if col.log1p:
            x, low, high = np.log1p(x), np.log1p(low), np.log1p(high)
        return np.clip(2.0 * (x - low) / (high - low) - 1.0, -1.0, 1.0)

    def _one_hot(self, col: CategoricalColumn, arr: pa.Array, block: np.ndarray, locate: Locate,
                 counts: ColumnCounts) -> None:
        if col.numeric:
            x, miss = self._parse(col.name, arr, locate, col.missing)
            cats = np.asarray(col.categories, dtype=np.float64)
            order = np.argsort(cats)
            pos = np.clip(np.searchsorted(cats[order], x), 0, len(cats) - 1)
            index = order[pos]
            unknown = (cats[index] != x) & ~miss
            shown = x
        else:
            text, miss = self._text(arr, col.missing)
            found = pc.index_in(text, value_set=pa.array(list(col.categories), type=pa.string()))
            index = np.array(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
            unknown = (index < 0) & ~miss
            shown = text
        if unknown.any():
            i = int(np.flatnonzero(unknown)[0])
            value = _fmt(float(shown[i])) if col.numeric else shown[i].as_py()
            raise TableError(f"{locate(i)}, column {col.name!r}: {value!r} is not one of the declared categories "
                             f"{[_fmt(c) for c in col.categories]}")
        if miss.any():
            if col.impute is not None:
                index[miss] = list(col.categories).index(col.impute)
            elif not col.missing_as_zeros:
                raise TableError(f"{locate(int(np.flatnonzero(miss)[0]))}, column {col.name!r}: missing value and the "
                                 "schema declares neither impute nor missing_as_zeros for this column")
        counts.imputed += int(miss.sum())
        rows = np.flatnonzero(~miss | (col.impute is not None))
        block[rows, index[rows]] = 1.0

    def _label(self, arr: pa.Array, locate: Locate) -> np.ndarray:
        label = self.schema.label
        keys = [k for k, _ in label.raw]
        targets = np.array([t for _, t in label.raw], dtype=np.int64)
        if isinstance(keys[0], float):
            x, miss = self._parse(label.column, arr, locate)
            lookup = {k: t for k, t in zip(keys, targets)}
            y = np.fromiter((lookup.get(v, -1) for v in x.tolist()), dtype=np.int64, count=x.size)
            shown = [_fmt(v) for v in x.tolist()]
        else:
            text, miss = self._text(arr)
            found = pc.index_in(text, value_set=pa.array(keys, type=pa.string()))
            pos = np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
            y = np.where(pos >= 0, targets[np.maximum(pos, 0)], -1)
            shown = text.to_pylist()
        if miss.any():
            raise TableError(f"{locate(int(np.flatnonzero(miss)[0]))}, column {label.column!r}: missing label "
                             "(leave the label column out for unlabelled data)")
        bad = np.flatnonzero(y < 0)
        if bad.size:
            i = int(bad[0])
            raise TableError(f"{locate(i)}, column {label.column!r}: label {shown[i]!r} is not in the public label set "
                             f"(raw values: {[_fmt(k) for k in keys]})")
        return y

    def _ids(self, arr: pa.Array, locate: Locate) -> np.ndarray:
        text, miss = self._text(arr)
        if miss.any():
            raise TableError(f"{locate(int(np.flatnonzero(miss)[0]))}, column {self.schema.id_column!r}: missing ID")
        return np.asarray(text.to_pylist(), dtype=object)


def _plain(arr: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


def _first_unparsable(text: pa.Array, missing: pa.Array) -> int:
    """Index of the first cell the float cast refuses (bisection: a few casts, not one per cell)."""
    cells = pc.if_else(missing, None, text)
    lo, hi = 0, len(cells)  # invariant: the first bad cell lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            pc.cast(cells.slice(lo, mid - lo), pa.float64())
            lo = mid
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            hi = mid
    return lo


def _codes(missing: tuple[str, ...]) -> str:
    return ", ".join(repr(m) for m in missing)
