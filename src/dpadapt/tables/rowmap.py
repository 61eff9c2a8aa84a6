"""The fixed per-row map built from a schema alone.

Each row's cells go to a feature vector by rules the schema declares as public: a numeric cell is
clipped to its declared range (after ``log1p`` for counts) and scaled to [-1, 1]; a categorical cell
becomes a one-hot block over the declared categories; a missing cell takes the declared imputation
value (or the all-zero block). The map reads one row at a time and nothing else, so no statistic of
the protected rows enters it: it is post-processing-free preprocessing that costs no privacy, and
every mapped row has L2 norm at most ``sqrt(number of declared columns)`` (``Schema.row_norm_bound``).

Cells arrive as pyarrow arrays (text from CSV, typed from Parquet / DataFrames). Every bad cell is a
one-line ``TableError`` naming the source, the row and the column.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .schema import CategoricalColumn, NumericColumn, Schema, _fmt


class TableError(ValueError):
    """A table that does not fit its schema; the message is one line naming file, row and column."""


Locate = Callable[[int | None], str]  # chunk row index -> "file: line 17"; None -> "file"


class RowMap:
    """The schema's per-row map: ``transform(cells)`` -> ``(X, y_idx, ids)``."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self._missing = pa.array(list(schema.missing), type=pa.string())

    @property
    def feature_names(self) -> list[str]:
        return self.schema.feature_names

    def transform(
        self, cells: Mapping[str, pa.Array], n_rows: int, locate: Locate
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Map one chunk. ``cells`` holds every feature column, and the label / ID column when present.

        Returns ``X`` float64 ``(n_rows, n_features)``, ``y_idx`` int64 indices into the public label
        set (``None`` when the label column is absent) and ``ids`` (object array of strings, or ``None``).
        """
        X = np.zeros((n_rows, self.schema.n_features), dtype=np.float64)
        j = 0
        for col in self.schema.columns:
            block = X[:, j : j + col.width]
            if isinstance(col, NumericColumn):
                block[:, 0] = self._numeric(col, cells[col.name], locate)
            else:
                self._one_hot(col, cells[col.name], block, locate)
            j += col.width
        y = None
        label = self.schema.label
        if label is not None and label.column in cells:
            y = self._label(cells[label.column], locate)
        ids = None
        if self.schema.id_column is not None and self.schema.id_column in cells:
            ids = self._ids(cells[self.schema.id_column], locate)
        return X, y, ids

    # ---- cells -> numbers -------------------------------------------------------------------------
    def _parse(self, name: str, arr: pa.Array, locate: Locate) -> tuple[np.ndarray, np.ndarray]:
        """Cells as float64 plus a missing mask; text is trimmed and the schema's missing codes apply."""
        arr = _plain(arr)
        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            text = pc.utf8_trim_whitespace(arr)
            missing = pc.or_kleene(pc.is_null(text), pc.is_in(text, value_set=self._missing))
            missing = missing.fill_null(True)
            try:
                values = pc.cast(pc.if_else(missing, None, text), pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                bad = _first_unparsable(text, missing)
                raise TableError(f"{locate(bad)}, column {name!r}: {text[bad].as_py()!r} is not a number "
                                 f"(missing-value codes: {_codes(self.schema.missing)})") from None
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
        return out, miss

    def _text(self, arr: pa.Array) -> tuple[pa.Array, np.ndarray]:
        """Cells as trimmed text plus a missing mask (numbers are written without a trailing '.0')."""
        arr = _plain(arr)
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            arr = pa.array([None if v is None else _fmt(v) if isinstance(v, float) else str(v) for v in arr.to_pylist()],
                           type=pa.string())
        text = pc.utf8_trim_whitespace(arr)
        missing = pc.or_kleene(pc.is_null(text), pc.is_in(text, value_set=self._missing)).fill_null(True)
        return text, np.asarray(missing.to_numpy(zero_copy_only=False), dtype=bool)

    def _numeric(self, col: NumericColumn, arr: pa.Array, locate: Locate) -> np.ndarray:
        x, miss = self._parse(col.name, arr, locate)
        if miss.any():
            if col.impute is None:
                raise TableError(f"{locate(int(np.flatnonzero(miss)[0]))}, column {col.name!r}: missing value "
                                 "and the schema declares no impute value for this column")
            x[miss] = col.impute
        x = np.clip(x, col.low, col.high)
        low, high = col.low, col.high
        if col.log1p:
            x, low, high = np.log1p(x), np.log1p(low), np.log1p(high)
        return np.clip(2.0 * (x - low) / (high - low) - 1.0, -1.0, 1.0)

    def _one_hot(self, col: CategoricalColumn, arr: pa.Array, block: np.ndarray, locate: Locate) -> None:
        if col.numeric:
            x, miss = self._parse(col.name, arr, locate)
            cats = np.asarray(col.categories, dtype=np.float64)
            order = np.argsort(cats)
            pos = np.clip(np.searchsorted(cats[order], x), 0, len(cats) - 1)
            index = order[pos]
            unknown = (cats[index] != x) & ~miss
            shown = x
        else:
            text, miss = self._text(arr)
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
