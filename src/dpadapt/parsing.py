"""Reading numbers from text cells and command-line words (one rule for every reader and the CLI)."""

from __future__ import annotations


def is_number(text) -> bool:
    """Whether ``float(text)`` reads ``text`` (``None`` and other non-text values are not numbers)."""
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True
