"""No two modules of ``src/dpadapt`` import each other (issue 30): the import graph has no two-file circle.

Imports are read with :mod:`ast` — at module level and inside functions alike (a lazy import is still a
dependency) — except under ``if TYPE_CHECKING:``, which never runs. ``from pkg import name`` counts as
an import of ``pkg.name`` when that is a module, else of ``pkg``; relative imports are resolved.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imported_modules(source: str, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules of ``known`` that the module ``name`` imports (TYPE_CHECKING blocks excepted)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            submodules = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in known]
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(module)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return {m for m in found if m in known and m != name}


def import_graph(root: Path = SRC) -> dict[str, set[str]]:
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    known = set(paths)
    return {name: imported_modules(p.read_text(), name, p.name == "__init__.py", known) for name, p in paths.items()}


def two_file_circles(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted((a, b) for a, deps in graph.items() for b in deps if a < b and a in graph.get(b, ()))


def test_the_detector_finds_a_circle_and_ignores_type_checking_imports():
    graph = {
        "p.a": imported_modules("import p.b\n", "p.a", False, {"p.a", "p.b", "p.c"}),
        "p.b": imported_modules("def f():\n    from . import a\n", "p.b", False, {"p.a", "p.b", "p.c"}),
        "p.c": imported_modules("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import p.a\n", "p.c", False,
                                {"p.a", "p.b", "p.c"}),
    }
    assert graph["p.c"] == set()
    assert two_file_circles(graph) == [("p.a", "p.b")]


def test_no_two_file_import_circle_in_src():
    graph = import_graph()
    assert len(graph) > 100 and "dpadapt.privacy.mechanisms" in graph
    circles = two_file_circles(graph)
    assert not circles, "modules importing each other: " + ", ".join(f"{a} ↔ {b}" for a, b in circles)


#: The layers under every method: nothing in them may import a method package (issue 37), lazily or not.
LOWER_LAYERS = ("dpadapt.privacy", "dpadapt.stream", "dpadapt.tables")
METHOD_PACKAGES = ("deep", "alignment", "transport", "classstats", "sound", "discrepancy")


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(module, imported method module) for every module of a lower layer that imports a method package."""
    methods = tuple(f"dpadapt.{p}" for p in METHOD_PACKAGES)

    def inside(name: str, packages: tuple[str, ...]) -> bool:
        return any(name == p or name.startswith(p + ".") for p in packages)

    return sorted((a, b) for a, deps in graph.items() if inside(a, LOWER_LAYERS) for b in deps if inside(b, methods))


def test_the_layer_check_sees_function_level_and_relative_imports():
    known = {"dpadapt.stream", "dpadapt.stream.sums", "dpadapt.sound", "dpadapt.sound.spaces", "dpadapt.privacy.mechanisms"}
    graph = {
        "dpadapt.stream.sums": imported_modules("def f():\n    from ..sound.spaces import RowMap\n", "dpadapt.stream.sums",
                                                False, known),
        "dpadapt.sound.spaces": imported_modules("from dpadapt.privacy import mechanisms\n", "dpadapt.sound.spaces", False,
                                                 known),
    }
    assert upward_imports(graph) == [("dpadapt.stream.sums", "dpadapt.sound.spaces")]


def test_privacy_stream_and_tables_import_no_method_package():
    graph = import_graph()
    assert any(name.startswith("dpadapt.tables.") for name in graph) and "dpadapt.stream.sums" in graph
    bad = upward_imports(graph)
    assert not bad, "lower layers importing a method package: " + ", ".join(f"{a} → {b}" for a, b in bad)
