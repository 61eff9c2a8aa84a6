"""Conversion of parameters and details to plain JSON types (numpy scalars/arrays, tuples, ±∞)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """Recursively convert ``obj`` to JSON-compatible Python types; ``inf`` becomes the string "inf"."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and math.isinf(obj):
        return "inf" if obj > 0 else "-inf"
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"value of type {type(obj).__name__} is not JSON-serialisable")
