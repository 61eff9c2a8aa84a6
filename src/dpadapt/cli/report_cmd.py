"""``dpadapt report FILE``: the privacy guarantee of a Release file or a trained model, in words or JSON."""

from __future__ import annotations

import argparse
import json
import zipfile
from pathlib import Path
from typing import Any

from dpadapt.cli.party_cmd import load_model
from dpadapt.release import Release


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="print the privacy guarantee of a Release file or a model file",
        description=(
            "Who is protected, the privacy unit and neighbouring relation, (ε, δ), the accounting and theorem, "
            "and whether the guarantee is valid (and why not). Release files are verified (checksum) first. "
            "Model files are joblib pickles: open only model files you trust."
        ),
    )
    p.add_argument("file", help="a .release file (dpadapt release) or a model file (dpadapt adapt)")
    p.add_argument("--json", action="store_true", help="print JSON instead of words")
    p.set_defaults(func=run)


def _existing(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    return path


def describe(path: str | Path) -> dict[str, Any]:
    """JSON-able description of a Release or model file."""
    path = _existing(path)
    if zipfile.is_zipfile(path):
        r = Release.load(path)
        return {
            "type": "release",
            "file": str(path),
            "release_id": r.release_id,
            "method": r.method,
            "kind": r.kind,
            "owner": r.owner,
            "version": r.version,
            "created": r.created,
            "arrays": {k: list(v.shape) for k, v in r.arrays.items()},
            "params": r.params,
            "guarantee": r.guarantee.to_dict(),
        }
    bundle = load_model(path)
    return {
        "type": "model",
        "file": str(path),
        "method": bundle["method"],
        "version": bundle["version"],
        "created": bundle["created"],
        "releases": bundle["releases"],
        "metrics": bundle["metrics"],
        "guarantees": {k: g.to_dict() for k, g in bundle["guarantees"].items()},
    }


def words(path: str | Path) -> str:
    """The guarantee(s) of a Release or model file, in words."""
    path = _existing(path)
    if zipfile.is_zipfile(path):
        return Release.load(path).report()
    bundle = load_model(path)
    lines = [
        f"Model {path.name} — {bundle['method']}, written by dpadapt {bundle['version']} at {bundle['created']}",
        "Trained from release(s): " + (", ".join(bundle["releases"]) or "none"),
    ]
    for key, value in bundle["metrics"].items():
        lines.append(f"Metric {key}: {value:.4f}" if isinstance(value, float) else f"Metric {key}: {value}")
    for party, g in bundle["guarantees"].items():
        lines += ["", f"What the model reveals about the {party} data:", g.report()]
    return "\n".join(lines)


def run(args) -> int:
    if args.json:
        print(json.dumps(describe(args.file), indent=2, sort_keys=True))
    else:
        print(words(args.file))
    return 0
