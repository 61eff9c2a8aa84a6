"""The faster release and receiver paths of issue 30 keep every bound and every answer.

* the mechanism's clip checks the row norms (one pass) instead of every entry: a NaN, ±∞ or
  norm-overflowing row is still refused before any noise, and rows outside the ball are still clipped;
* the dense per-row map scales rows to ``UNIT`` < 1, so the clip finds nothing to copy, and a chunk
  with a row outside the ball (any caller) is still clipped;
* the ``ot`` start stops Sinkhorn at ``OT_START_TOLERANCE`` and keeps the hard labels a long run gives.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dpadapt.privacy.mechanisms import NonFiniteError, class_moment_sums, class_sums

adapt = importlib.import_module("dpadapt.classstats.adapt")  # the package's ``adapt`` attribute is a function


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_non_finite_row_is_still_refused(bad):
    Z = np.full((5, 3), 0.1)
    Z[3, 1] = bad
    for release in (lambda: class_sums(Z, np.zeros(5, dtype=int), 2), lambda: class_moment_sums(Z, np.zeros(5, dtype=int), 2)):
        with pytest.raises(NonFiniteError):
            release()


def test_a_row_whose_norm_overflows_is_clipped_not_refused():
    """A refusal would reveal the row (issue 27): the norm check's fast path clips it like clip_rows."""
    Z = np.full((5, 3), 0.1)
    Z[3] = [1e200, -1e200, 3e199]
    sums, counts = class_sums(Z, np.array([0, 0, 0, 1, 0]), 2)
    np.testing.assert_allclose(np.linalg.norm(sums[1]), 1.0, rtol=1e-12)
    _, _, second = class_moment_sums(Z, np.array([0, 0, 0, 1, 0]), 2)
    assert np.all(np.isfinite(second)) and np.trace(second) <= 1.0 + 4 * 0.03 + 1e-9


def test_rows_outside_the_ball_are_clipped_and_the_input_is_left_alone():
    Z = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]])
    before = Z.copy()
    sums, counts = class_sums(Z, np.array([0, 0, 1]), 2)
    np.testing.assert_allclose(sums, [[0.6 + 0.3, 0.8 + 0.4], [0.0, 0.0]])
    np.testing.assert_array_equal(Z, before)
    _, _, second = class_moment_sums(Z, np.array([0, 0, 1]), 2)
    np.testing.assert_allclose(np.trace(second), 1.0 + 0.25)  # ‖clipped row‖² + ‖small row‖²


def test_the_dense_map_stays_inside_the_ball_without_a_copy_at_the_clip(rng):
    X = rng.normal(size=(2000, 1000)) * rng.lognormal(size=(2000, 1))
    M = adapt.row_map(X, False)
    norms = np.sqrt(np.einsum("ij,ij->i", M, M))
    assert norms.max() <= 1.0 and norms.min() > 1 - 1e-11
    from dpadapt.privacy import mechanisms

    assert mechanisms._unit_ball_rows(M) is M  # nothing outside the ball: no copy


def test_clipped_rows_have_an_exact_norm_at_most_one(rng):
    """Exact rational norms of the rows the clip hands on: ≤ 1, not just their float64 norms."""
    from fractions import Fraction

    from dpadapt.privacy import mechanisms

    Z = rng.normal(size=(50, 300)) * np.array([1.0, 1 + 1e-15, 7.0] * 16 + [1.0, 3.0])[:, None]
    Z /= np.sqrt(np.einsum("ij,ij->i", Z, Z))[:, None] / np.array([1.0, 1 + 1e-15, 7.0] * 16 + [1.0, 3.0])[:, None]
    for row in mechanisms._unit_ball_rows(Z):
        assert sum(Fraction(float(v)) ** 2 for v in row) <= 1


def test_the_ot_start_keeps_the_long_run_labels(rng):
    centers = adapt.row_map(rng.normal(size=(6, 20)), False)
    y = rng.integers(0, 6, 3000)
    Z = adapt.row_map(centers[y] + 1.2 * rng.normal(size=(3000, 20)), False)
    noisy = adapt.row_map(centers + 0.3 * rng.normal(size=(6, 20)), False)  # DP-noisy prototypes
    proportions = np.clip(np.bincount(y, minlength=6) / 3000 + rng.normal(0, 0.02, 6), 0.01, None)
    proportions /= proportions.sum()
    long_run = np.argmax(adapt.refine_ot(Z, noisy, proportions, n_iter=5000, tol=0.0), axis=1)
    fast = np.argmax(adapt.refine_ot(Z, noisy, proportions, tol=adapt.OT_START_TOLERANCE), axis=1)
    assert np.mean(fast == long_run) > 0.999
