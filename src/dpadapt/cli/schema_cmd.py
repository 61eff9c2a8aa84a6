"""``dpadapt schema draft|check``: write a table schema from PUBLIC facts, and check one.

``draft`` never reads a data row: column names come from ``--columns`` or from the header line of a
CSV file (``--header-of``; only its first line is read) or from a Parquet file's column types
(``--header-of`` on ``.parquet``; its schema only). Numeric ranges and category lists are left for
you to fill from public knowledge (clinical or physical bounds, the data dictionary's codes): the
drafted file does not load until you have. ``check`` loads a schema and prints the features its
fixed per-row map produces.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dpadapt.cli.main import add_command
from dpadapt.cli.party_cmd import _check_out
from dpadapt.parsing import is_number


def add_parser(sub: argparse._SubParsersAction) -> None:
    p, actions = add_command(sub, "schema", __doc__.split("\n\n")[1], actions="action")
    draft = actions.add_parser("draft", help="draft a schema from column names you give (or a header line); you fill in ranges")
    src = draft.add_mutually_exclusive_group(required=True)
    src.add_argument("--columns", help="comma-separated column names, in file order (the file has no header)")
    src.add_argument("--header-of", metavar="FILE", help="take the names from this CSV's header line or this Parquet file's schema (no row is read)")
    draft.add_argument("--label", help="the label column")
    draft.add_argument("--classes", help="the public label set, comma-separated (e.g. healthy,disease)")
    draft.add_argument("--id", dest="id_column", help="the ID column (carried to predictions, never a feature)")
    draft.add_argument("--categorical", default="", help="comma-separated categorical columns (the rest are numeric)")
    draft.add_argument("--ignore", default="", help="comma-separated columns to leave out")
    draft.add_argument("--out", required=True, help="schema file to write (.toml)")
    draft.add_argument("--force", action="store_true", help="overwrite --out")
    draft.set_defaults(func=run_draft)
    check = actions.add_parser("check", help="load a schema and list the features of its per-row map")
    check.add_argument("file", help="schema file (.toml / .json)")
    check.set_defaults(func=run_check)
    p.set_defaults(func=lambda args: p.print_help() or 2)


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def _public_columns(path: Path) -> tuple[list[str], dict[str, str], str | None]:
    """Column names (and Parquet types) from the header / file schema only; never a data row.

    A CSV whose first line has a numeric cell is refused: it is a record of a header-less file, and its
    cells must never become column names of a shared schema.
    """
    from dpadapt.tables.readers import _detect_delimiter, _first_line, header_cells
    from dpadapt.tables.rowmap import TableError

    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix.lower() == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ValueError(f"{path}: not a readable Parquet file ({' '.join(str(exc).split())[:120]})") from None
        kinds = {f.name: ("categorical" if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type) else "numeric")
                 for f in schema}
        return list(schema.names), kinds, None
    try:
        line = _first_line(path)
    except TableError as exc:
        raise ValueError(str(exc)) from None
    delimiter = _detect_delimiter(line)
    try:
        names = [c.strip() for c in header_cells(line, delimiter, path)]
    except TableError as exc:
        raise ValueError(str(exc)) from None
    if not names or not all(names):
        raise ValueError(f"{path}: line 1: not a header (empty names); give --columns instead")
    numeric = sum(is_number(n) for n in names)
    if numeric:  # a header-less file: line 1 is a record; never copy its cells into a schema
        raise ValueError(f"{path}: line 1 has {numeric} numeric cell(s): it looks like a data row, not a header; "
                         "give the column names with --columns (nothing was written)")
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise ValueError(f"{path}: line 1: duplicate column name {dup!r}")
    return names, {}, delimiter


def draft_text(names: list[str], *, header: bool, delimiter: str | None, label: str | None, classes: list[str],
               id_column: str | None, categorical: set[str], ignore: set[str], kinds: dict[str, str]) -> str:
    """The TOML text of a drafted schema (ranges and categories to be filled in)."""
    for given, what in ((label, "--label"), (id_column, "--id")):
        if given is not None and given not in names:
            raise ValueError(f"{what} {given!r} is not one of the columns {names}")
    for n in sorted(categorical | ignore):
        if n not in names:
            raise ValueError(f"column {n!r} (--categorical / --ignore) is not one of the columns {names}")
    if label is not None and len(classes) < 2:
        raise ValueError("--label needs --classes with at least two public class names")
    out = ["# Drafted by `dpadapt schema draft` from column names only: no data row was read.",
           "# Fill in every range and category list from PUBLIC knowledge (clinical / physical bounds, the data",
           "# dictionary's codes), never from the protected rows; add `impute = …` where a cell may be missing.",
           "", "[table]", f"header = {'true' if header else 'false'}"]
    if not header:
        out.append(f"names = {json.dumps(names)}")
    if delimiter:
        out.append(f"delimiter = {json.dumps(delimiter)}")
    out.append('missing = ["", "?", "NA"]')
    if ignore:
        out.append(f"ignore = {json.dumps(sorted(ignore))}")
    if label is not None:
        out += ["", "[label]", f"column = {json.dumps(label)}", f"classes = {json.dumps(classes)}",
                "# map = { " + ", ".join(f"{json.dumps(c)} = [FILL IN raw values]" for c in classes) + " }  # if the file holds codes"]
    if id_column is not None:
        out += ["", "[id]", f"column = {json.dumps(id_column)}"]
    for n in names:
        if n in (label, id_column) or n in ignore:
            continue
        kind = "categorical" if n in categorical or kinds.get(n) == "categorical" else "numeric"
        out += ["", "[[columns]]", f"name = {json.dumps(n)}", f'type = "{kind}"']
        out.append("range = []        # FILL IN: [public low, public high]" if kind == "numeric"
                   else "categories = []   # FILL IN: the public list of categories")
    return "\n".join(out) + "\n"


def run_draft(args: argparse.Namespace) -> int:
    out = _check_out(args.out, args.force)
    if args.columns:
        names, kinds, delimiter, header = _names(args.columns), {}, None, False
        if len(set(names)) != len(names):
            raise ValueError(f"--columns names a column twice: {next(n for n in names if names.count(n) > 1)!r}")
    else:
        names, kinds, delimiter = _public_columns(Path(args.header_of))
        header = True
    text = draft_text(names, header=header, delimiter=delimiter, label=args.label,
                      classes=_names(args.classes or ""), id_column=args.id_column,
                      categorical=set(_names(args.categorical)), ignore=set(_names(args.ignore)), kinds=kinds)
    from dpadapt.container import write_atomic

    write_atomic(out, text.encode())
    todo = sum("FILL IN" in line for line in text.splitlines() if not line.startswith("#"))
    print(f"wrote {out}: {len(names)} columns; fill in {todo} place(s) marked FILL IN before use")
    return 0


def run_check(args: argparse.Namespace) -> int:
    """Load the schema; list EVERY problem (one line each on stderr, exit 1), or the features of its map."""
    import sys

    from dpadapt.tables import SchemaError, load_schema

    try:
        schema = load_schema(args.file)
    except SchemaError as exc:
        problems = exc.problems
        for problem in problems:
            print(f"dpadapt schema: error: {problem}", file=sys.stderr)
        if len(problems) > 1:
            print(f"dpadapt schema: {len(problems)} problems in {args.file}; fix them all, then check again", file=sys.stderr)
        return 1
    fingerprint = schema.fingerprint()
    print(f"{args.file}: {len(schema.columns)} columns -> {schema.n_features} features "
          f"(row norm <= {schema.row_norm_bound:.4g}); fingerprint {fingerprint['sha256'][:16]}")
    if schema.label is not None:
        print(f"  label {schema.label.column!r}: classes {list(schema.label.classes)}")
    if schema.id_column is not None:
        print(f"  id {schema.id_column!r} (carried to predictions, not a feature)")
    coded = [f"{c.name} {[_code(m) for m in c.missing]}" for c in schema.columns if c.missing]
    print(f"  missing: cells {list(schema.missing)} in every column" + (f"; codes {', '.join(coded)}" if coded else ""))
    if schema.decimal != ".":
        print(f"  decimal mark {schema.decimal!r}")
    print("  features: " + ", ".join(schema.feature_names))
    return 0


def _code(v) -> str | float | int:
    return int(v) if isinstance(v, float) and v.is_integer() else v
