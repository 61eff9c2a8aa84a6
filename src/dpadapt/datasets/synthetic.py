"""Synthetic data generators for the methods' toy studies (each generator is self-contained)."""

from __future__ import annotations

import numpy as np

from dpadapt.validation import check_random_state

# --- Private discrepancy minimisation (Bassily, Mohri & Suresh 2023, Section 7) -------------------


def bms_means(d: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Target mean m_P = (−1, +1, −1, …)/√(2d) and source-component mean m_Q = (1, …, 1)/√(2d)."""
    signs = np.where(np.arange(d) % 2 == 0, -1.0, 1.0)
    return signs / np.sqrt(2 * d), np.ones(d) / np.sqrt(2 * d)


def bms_labels(X: np.ndarray) -> np.ndarray:
    """Noise-free labels f(x) = 1̄·x if 1̄·x > 0 else ½·1̄·x, with 1̄ = (1, …, 1)/√d."""
    z = X @ (np.ones(X.shape[1]) / np.sqrt(X.shape[1]))
    return np.where(z > 0, z, 0.5 * z)


def make_bms_regression(
    m: int = 1000,
    n: int = 1000,
    d: int = 10,
    n_test: int = 10_000,
    source_target_fraction: float = 0.25,
    noise_var: float | None = None,
    random_state=None,
) -> dict[str, np.ndarray]:
    """The synthetic regression study of Bassily, Mohri & Suresh (AISTATS 2023, Section 7).

    P_X = N(m_P, σ²I), Q_X = N(m_Q, σ²I), σ² = 1/(9d) unless ``noise_var`` is given (see
    :func:`bms_means`); labels from
    :func:`bms_labels`. Source: m labelled points from 0.25·P_X + 0.75·Q_X; target: n points from
    P_X (labels returned only for the oracle baseline); test: ``n_test`` fresh P_X points.

    Returns a dict with ``Xs, ys, Xt, yt, X_test, y_test``.
    """
    for name, value in (("m", m), ("n", n), ("d", d), ("n_test", n_test)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value}")
    if not 0.0 <= source_target_fraction <= 1.0:
        raise ValueError(f"source_target_fraction must be in [0, 1], got {source_target_fraction}")
    rng = check_random_state(random_state)
    if noise_var is not None and not noise_var > 0:
        raise ValueError(f"noise_var must be > 0, got {noise_var}")
    sigma = np.sqrt(1.0 / (9.0 * d) if noise_var is None else float(noise_var))
    m_p, m_q = bms_means(d)
    from_p = rng.random(m) < source_target_fraction
    Xs = np.where(from_p[:, None], m_p, m_q) + sigma * rng.standard_normal((m, d))
    Xt = m_p + sigma * rng.standard_normal((n, d))
    X_test = m_p + sigma * rng.standard_normal((n_test, d))
    return {
        "Xs": Xs, "ys": bms_labels(Xs),
        "Xt": Xt, "yt": bms_labels(Xt),
        "X_test": X_test, "y_test": bms_labels(X_test),
    }


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


# --- demo domains (dpadapt demo) -----------------------------------------------------------------


def make_shifted_blobs(
    rng: np.random.Generator, n_source: int = 600, n_target: int = 600, n_features: int = 20, n_classes: int = 3,
    shift: float = 5.0, rotation: float = 0.3, centre_scale: float = 0.7,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The demo's generator: Gaussian blobs, the target shifted by a fixed vector and slightly rotated.

    Class centres ~ N(0, centre_scale² I_d), rows = centre + N(0, I_d), labels uniform over
    ``n_classes``; target rows are ``x Q + o`` with ``‖o‖ = shift`` (a random direction) and
    ``Q = expm(S − Sᵀ)``, S ~ N(0, rotation²/d), a rotation near the identity. (Generator fixed
    before the class-statistics method existed; the method's defaults were not tuned on it.)
    """
    import scipy.linalg

    centres = rng.normal(scale=centre_scale, size=(n_classes, n_features))
    offset = rng.normal(size=n_features)
    offset *= shift / np.linalg.norm(offset)
    skew = rng.normal(scale=rotation / np.sqrt(n_features), size=(n_features, n_features))
    q = scipy.linalg.expm(skew - skew.T)  # a rotation (orthogonal, det 1) near the identity

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.integers(n_classes, size=n)
        return centres[y] + rng.normal(size=(n, n_features)), y

    Xs, ys = draw(n_source)
    Xt, yt = draw(n_target)
    return Xs, ys, Xt @ q + offset, yt


def contract_blobs(random_state: int, n_source: int = 60, n_target: int = 40, n_features: int = 6,
                   n_classes: int = 3) -> dict[str, np.ndarray]:
    """Small shifted blobs for the family contract examples: ``{"Xs", "ys", "Xt", "yt"}``.

    Labels cover exactly ``range(n_classes)`` (the examples' public label set) in both domains.
    """
    Xs, ys, Xt, yt = make_shifted_blobs(np.random.default_rng(random_state), n_source, n_target, n_features, n_classes)
    ys[:n_classes], yt[:n_classes] = np.arange(n_classes), np.arange(n_classes)
    return {"Xs": Xs, "ys": ys, "Xt": Xt, "yt": yt}
