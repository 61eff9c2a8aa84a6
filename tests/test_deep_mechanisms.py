"""The deep section of privacy/mechanisms.py: sliced-marginal histogram release (sensitivity by brute
force over neighbours, statistical audit with an under-noised control), secret sampling and noise."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch

from dpadapt.privacy import accounting
from dpadapt.privacy.audit import epsilon_lower_bound
from dpadapt.privacy.mechanisms import (
    NoiseSource,
    noisy_projections,
    poisson_subsample,
    secret_subsample,
    sliced_histogram,
    sliced_histogram_release,
    torch_gaussian_noise,
)

EDGES = np.linspace(-1.5, 1.5, 7)


def test_sliced_histogram_sensitivity_brute_force(rng):
    """Replace-one over every row of a small dataset and a grid of replacement rows: ‖Δ‖₂ ≤ sqrt(2k), attained."""
    k = 4
    U = rng.standard_normal((3, k))
    U /= np.linalg.norm(U, axis=0)
    X = rng.uniform(-1, 1, size=(6, 3))
    base = sliced_histogram(X, U, EDGES)
    assert base.sum() == X.shape[0] * k  # one count per row and direction, whatever the range
    grid = [np.array(v) for v in itertools.product(np.linspace(-3, 3, 5), repeat=3)]
    worst = 0.0
    for i in range(X.shape[0]):
        for z in grid:
            Y = X.copy()
            Y[i] = z
            worst = max(worst, float(np.linalg.norm(sliced_histogram(Y, U, EDGES) - base)))
    assert worst <= math.sqrt(2 * k) + 1e-12
    assert worst == pytest.approx(math.sqrt(2 * k))  # tight: the bound does not grow with n


def test_per_class_sliced_histogram_sensitivity_brute_force(rng):
    """Per-class counts: replacing a row by any other row *and any other label* moves ‖Δ‖₂ ≤ sqrt(2k), attained;
    the release is charged with that sensitivity (k directions, not the K·k histograms)."""
    k, n_classes = 4, 3
    U = rng.standard_normal((3, k))
    U /= np.linalg.norm(U, axis=0)
    X = rng.uniform(-1, 1, size=(6, 3))
    y = np.array([0, 1, 2, 0, 1, 2])
    base = sliced_histogram(X, U, EDGES, y, n_classes)
    assert base.shape == (n_classes, k, EDGES.size - 1)
    assert np.array_equal(base.sum(axis=(1, 2)), np.bincount(y, minlength=n_classes) * k)
    assert np.array_equal(base.sum(axis=0), sliced_histogram(X, U, EDGES))
    grid = [np.array(v) for v in itertools.product(np.linspace(-3, 3, 4), repeat=3)]
    worst = 0.0
    for i in range(X.shape[0]):
        for z in grid:
            for label in range(n_classes):
                Y, yy = X.copy(), y.copy()
                Y[i], yy[i] = z, label
                worst = max(worst, float(np.linalg.norm(sliced_histogram(Y, U, EDGES, yy, n_classes) - base)))
    assert worst == pytest.approx(math.sqrt(2 * k))
    rel = sliced_histogram_release(X, U, EDGES, sigma=2.0, noise=NoiseSource(0, reproducible=True), labels=y,
                                   n_classes=n_classes)
    assert rel.event == accounting.gaussian_event(2.0 / math.sqrt(2 * k))
    with pytest.raises(ValueError, match="label set"):
        sliced_histogram(X, U, EDGES, y + 1, n_classes)  # a label outside the public set


def _audit(rng, stated_sensitivity_scale):
    k, n_draws = 3, 100_000
    U = np.eye(3)[:, :k]
    X = np.zeros((5, 3)) + 0.1
    Y = X.copy()
    Y[0] = [1.2, 1.2, 1.2]  # moves one count in each direction: the worst case
    eps, delta = 1.0, 1e-5
    sens = math.sqrt(2 * k)
    sigma = accounting.analytic_gaussian_sigma(eps, delta, sens * stated_sensitivity_scale)
    h0, h1 = sliced_histogram(X, U, EDGES), sliced_histogram(Y, U, EDGES)
    diff = (h1 - h0).ravel() / np.linalg.norm(h1 - h0)
    noise = NoiseSource(3, reproducible=True)
    out0 = np.stack([sliced_histogram_release(X, U, EDGES, sigma=sigma, noise=noise).value.ravel() for _ in range(2000)])
    # vectorised draws: the release is h + N(0, σ²) i.i.d., so further draws reuse the mechanism's noise call
    more0 = noisy_projections(np.tile(h0.ravel(), (n_draws, 1)), np.eye(h0.size), sigma=sigma, noise=noise)
    more1 = noisy_projections(np.tile(h1.ravel(), (n_draws, 1)), np.eye(h0.size), sigma=sigma, noise=noise)
    rel = sliced_histogram_release(X, U, EDGES, sigma=sigma, noise=noise)
    assert rel.event == accounting.gaussian_event(sigma / sens)
    assert abs(np.std(out0 - h0.ravel()) / sigma - 1) < 0.05
    return epsilon_lower_bound((more0 - h0.ravel()) @ diff, (more1 - h0.ravel()) @ diff, delta=delta), eps


def test_sliced_histogram_release_audit(rng):
    res, eps = _audit(rng, 1.0)
    assert res.passes(eps), res


def test_sliced_histogram_release_audit_fails_when_under_noised(rng):
    res, eps = _audit(rng, 1.0 / 3.0)  # sensitivity under-stated by 3×
    assert not res.passes(eps), res


def test_secret_sampling_and_torch_noise_do_not_follow_the_public_seed():
    a = secret_subsample(1000, 10, NoiseSource())
    b = secret_subsample(1000, 10, NoiseSource())
    assert len(set(a)) == 10 and not np.array_equal(a, b)
    sizes = [poisson_subsample(1000, 0.05, NoiseSource(1, reproducible=True)).size for _ in range(3)]
    assert sizes[0] == sizes[1] == sizes[2]  # reproducible only when asked for
    t = torch_gaussian_noise(torch.zeros(50_000), 2.0, NoiseSource())
    assert abs(float(t.std()) - 2.0) < 0.05
    with pytest.raises(TypeError):
        torch_gaussian_noise(torch.zeros(3), 1.0, np.random.default_rng(0))
