"""A hospital's own tables: a declared public schema, its fixed per-row map, and readers.

``load_schema`` reads the schema (TOML / JSON); ``read_table`` / ``iter_chunks`` read CSV, Parquet or a
DataFrame through the schema's map (``RowMap``) into float64 features, label indices into the public
label set, and the carried ID column. The map uses only what the schema declares, so it costs no privacy.
``SchemaModel`` fits an estimator through a schema and refuses tables read through another map
(``check_same_schema``; the schema's fingerprint names the difference).
"""

from .model import SchemaMismatch, SchemaModel, check_same_schema
from .readers import MappedTable, iter_chunks, read_table
from .rowmap import ColumnCounts, MapCounts, RowMap, TableError
from .schema import (
    CategoricalColumn,
    NumericColumn,
    Schema,
    SchemaError,
    fingerprint_difference,
    load_schema,
    schema_from_dict,
)

__all__ = [
    "CategoricalColumn",
    "ColumnCounts",
    "MapCounts",
    "SchemaMismatch",
    "SchemaModel",
    "check_same_schema",
    "fingerprint_difference",
    "MappedTable",
    "NumericColumn",
    "RowMap",
    "Schema",
    "SchemaError",
    "TableError",
    "iter_chunks",
    "load_schema",
    "read_table",
    "schema_from_dict",
]
