"""Synthetic data generators for the methods' toy studies (each generator is self-contained)."""

from __future__ import annotations

import numpy as np

from dpadapt.validation import check_random_state

# --- DP-SWD toy (Rakotomamonjy & Ralaivola 2021, Fig. 2) ------------------------------------------


def gaussian_mean_shift(
    n: int, shift: float, d: int = 5, n_target: int | None = None, random_state=None
) -> tuple[np.ndarray, np.ndarray]:
    """Source N(0, I_d) and target N(c·1, I_d) samples (the DP-SWD toy of Fig. 2, d = 5, c ∈ [0, 1]).

    Returns ``(Xs, Xt)`` with ``n`` and ``n_target`` (default ``n``) rows.
    """
    if int(n) < 1 or int(d) < 1:
        raise ValueError(f"n and d must be ≥ 1, got n={n}, d={d}")
    rng = check_random_state(random_state)
    Xs = rng.standard_normal((int(n), int(d)))
    Xt = rng.standard_normal((int(n_target or n), int(d))) + float(shift)
    return Xs, Xt
