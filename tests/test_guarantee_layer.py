"""Guarantees are built only in ``src/dpadapt/privacy/`` (issue 11, build 2).

Every other module obtains its Guarantee from a factory in :mod:`dpadapt.privacy.guarantee` or
:mod:`dpadapt.privacy.families`, so the calibration and the claim it supports live in one layer.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import dpadapt

SRC = Path(dpadapt.__file__).resolve().parent
#: A construction as code outside the class must spell it: ``Guarantee(...)`` or ``Guarantee.from_event(...)``.
CONSTRUCTION = re.compile(r"\bGuarantee\s*(?:\.\s*from_event\s*)?\(")


def code_without_strings(source: str) -> str:
    """The source with comments and string literals (docstrings included) blanked out."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING) or tok.type == getattr(tokenize, "FSTRING_MIDDLE", -1):
            continue
        out.append(tok.string)
    return " ".join(out)


def constructions_outside_privacy(root: Path = SRC) -> list[str]:
    hits = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] == "privacy":
            continue
        n = len(CONSTRUCTION.findall(code_without_strings(path.read_text(encoding="utf-8"))))
        if n:
            hits.append(f"{rel}: {n}")
    return hits


def test_the_scan_sees_a_construction_and_ignores_prose_and_hints():
    code = 'def f(g: "Guarantee") -> Guarantee:\n    """Guarantee(...) in a docstring."""\n    # Guarantee(x)\n    return Guarantee (party="source")\n'
    assert len(CONSTRUCTION.findall(code_without_strings(code))) == 1
    assert not CONSTRUCTION.findall(code_without_strings("x: list[Guarantee] = [Guarantee.non_private('source')]\n"))
    assert len(CONSTRUCTION.findall(code_without_strings("g = Guarantee.from_event(e, party='t')\n"))) == 1


def test_no_guarantee_is_built_outside_privacy():
    assert constructions_outside_privacy() == [], "build Guarantees in dpadapt.privacy (families/ or guarantee.py)"
