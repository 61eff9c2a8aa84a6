"""What two parties (or a model and the data it scores) must agree on: the schema's map and the class names.

Every Release the CLI writes carries, in its public ``params``, the fingerprint of the schema its
owner's rows were mapped through (:meth:`dpadapt.tables.Schema.fingerprint`, ``None`` for data read
without a schema) and the class names in index order; every model file carries the same in its
metadata. ``adapt`` checks each release against the receiver's table, ``release --request`` / ``--map`` the
receiver's file against the source's table, ``score`` / ``predict`` the model against the data: a difference is refused
in one line that names it (``class order differs: …``, ``column chol: range … in the release, … in your
schema``), before any private row is used. Files written before this check existed (no fingerprint) are
refused when the data are read through a schema, since they cannot be checked.

The fingerprint and the class names are public facts the user declared (the schema file), not
statistics of the rows.
"""

from __future__ import annotations

import argparse
from typing import Any

from dpadapt import __version__

#: Release ``params`` / model ``meta`` key of the owner's schema fingerprint (``None``: no schema).
SCHEMA_PARAM = "schema"
#: Release ``params`` / model ``meta`` key of the class names in index order (``None``: not a classifier).
CLASS_NAMES_PARAM = "class_names"
#: Release ``params`` / model ``meta`` key of the feature columns' names (a header; ``None``: headerless or a schema).
FEATURE_NAMES_PARAM = "feature_names"


def table_fingerprint(table: Any) -> dict | None:
    """The schema fingerprint of a table the CLI read (``None`` when it was read without a schema)."""
    return getattr(table, "fingerprint", None)


def class_names(table: Any, args: argparse.Namespace) -> list | None:
    """The class names in index order: the schema's label set, else the declared ``--classes``."""
    classes = getattr(table, "classes", None)
    if classes is None and getattr(table, "fingerprint", None) is None:
        classes = getattr(args, "classes", None)
        if isinstance(classes, str):  # a comma-separated option, parsed as the options themselves parse it
            from dpadapt.cli.config_options import _tuple

            classes = _tuple(classes)
        if classes is None and getattr(args, "n_classes", None):
            classes = tuple(range(int(args.n_classes)))
    return None if classes is None else list(classes)


def owner_params(table: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The public agreement facts a Release (or a model) carries about its owner's table."""
    columns = None if table_fingerprint(table) is not None else getattr(table, "columns", None)
    return {SCHEMA_PARAM: table_fingerprint(table), CLASS_NAMES_PARAM: class_names(table, args),
            FEATURE_NAMES_PARAM: None if columns is None else list(columns)}


def map_columns(facts: dict[str, Any], table: Any, path: Any, kind: str) -> None:
    """Take ``table``'s feature columns by name, in the order the file (``facts``) records (scikit-learn's
    ``feature_names_in_``): the same names in another order are mapped; a missing or extra column, or a
    headerless table for a file fitted on named columns, is refused in one line. A file fitted on headerless
    data (or written before names were recorded) reads any table by position."""
    from dpadapt.stream.readers import select_columns

    theirs = facts.get(FEATURE_NAMES_PARAM)
    if theirs is None or table_fingerprint(table) is not None or not hasattr(table, "source"):
        return
    if not isinstance(theirs, list) or not all(isinstance(c, str) for c in theirs):
        raise ValueError(f"{path}: the {kind} file's {FEATURE_NAMES_PARAM!r} is not a list of column names; refused")
    source = select_columns(table.source, theirs, f"the {kind} {path}")
    if source is not table.source:
        table.source, table._whole = source, None


def check_agreement(facts: dict[str, Any], table: Any, args: argparse.Namespace, path: Any, kind: str = "release",
                    version: str | None = None) -> None:
    """Refuse ``table`` when the schema or the class names differ from the file's ``facts`` (one line).

    ``facts``: a Release's ``params`` or a model's metadata; ``kind``: ``"release"``, ``"map"``,
    ``"model"`` (the words of the message).
    """
    from dpadapt.tables import fingerprint_difference

    mine = table_fingerprint(table)
    schema_path = getattr(args, "schema", None)
    yours = f"your schema ({schema_path})" if schema_path else "your data"
    if SCHEMA_PARAM not in facts:
        if mine is not None:
            version = version or facts.get("version") or "an earlier version"
            raise ValueError(
                f"{path}: this {kind} file carries no schema fingerprint (written by dpadapt {version}, before "
                f"{kind} files recorded the schema and the class names), so it cannot be checked against {yours}; "
                f"write it again with dpadapt {__version__}"
            )
        return
    diff = fingerprint_difference(facts[SCHEMA_PARAM], mine, f"the {kind}", yours)
    if diff is not None:
        advice = ("score and predict with the schema the model was adapted with" if kind == "model"
                  else "both parties must read their tables through the same schema file")
        raise ValueError(f"{path}: {diff}; refused ({advice})")
    map_columns(facts, table, path, kind)
    if mine is None:  # no schema: the declared --classes of both sides, when both were given
        theirs, own = facts.get(CLASS_NAMES_PARAM), class_names(table, args)
        if theirs is not None and own is not None and [str(c) for c in theirs] != [str(c) for c in own]:
            word = "class order differs" if sorted(map(str, theirs)) == sorted(map(str, own)) else "label set differs"
            raise ValueError(f"{path}: {word}: the {kind} has {theirs}, your --classes {own}; refused")
