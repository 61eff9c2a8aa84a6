"""A source too small to say anything: a warning before its class statistics are released (public numbers only)."""

from __future__ import annotations

import warnings

class TinySourceWarning(UserWarning):
    """The release would be pure noise: judged from public numbers only (n, K, σ from ε and δ)."""


def warn_if_pure_noise(n_source: int, n_classes: int, sigma: float, epsilon: float, delta: float) -> None:
    """Warn (before anything is spent) when the average class — n/K rows of norm ≤ 1 — is smaller than σ:
    along ANY direction (its count included) the class's sum is then below the noise's standard deviation,
    so no summary of the release sees it. Only public numbers enter, so the warning reveals nothing about the rows."""
    per_class = n_source / max(n_classes, 1)
    if per_class < sigma:
        warnings.warn(f"a source of {n_source} rows over {n_classes} classes at (ε = {epsilon:g}, δ = {delta:g}) releases "
                      f"about {per_class:.3g} rows per class under noise σ = {sigma:.3g} on every sum and count: the "
                      "release would be pure noise; pool more rows or raise ε", TinySourceWarning, stacklevel=3)
