"""The vetted noise sampler (issue 30): exact discrete Gaussian / Laplace, its float certification, the lattice.

* the samples match the exact pmf (χ², fixed seeds), also when every decision is forced onto the exact
  rational path, and when the uniform's first 53 bits are all zero;
* the float assumptions of the certification (numpy's ``log``/``exp`` within 2⁻⁴⁸ relative) hold here,
  checked against exact rational bounds;
* the lattice keeps the plan's scale/sensitivity ratio, its step depends on public numbers only, and the
  secret word stream is not shared with a forked child.
(The privacy audits of the mechanisms that use it — and their under-noised controls — are in
``tests/test_mechanisms_audit.py`` and ``tests/test_issue19_holes.py`` item 11.)
"""

from __future__ import annotations

import math
import os
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from dpadapt.privacy import discrete
from dpadapt.privacy.discrete import _exp_neg_fixed, discrete_gaussian, discrete_laplace
from dpadapt.privacy.mechanisms import LATTICE_SLACK, NoiseSource, SecretWords, lattice, vetted_gaussian, vetted_laplace


def _words(seed: int):
    gen = np.random.default_rng(seed)
    return lambda n: gen.bit_generator.random_raw(n)


def _chi2_p(z: np.ndarray, log_pmf) -> float:
    ks = np.arange(int(z.min()) - 2, int(z.max()) + 3)
    p = np.exp(log_pmf(ks))
    p /= p.sum()
    counts = np.array([(z == k).sum() for k in ks])
    keep = p * z.size > 5
    stat = np.sum((counts[keep] - z.size * p[keep]) ** 2 / (z.size * p[keep]))
    assert counts[~keep].sum() < 0.001 * z.size
    return float(chi2.sf(stat, keep.sum() - 1))


@pytest.mark.parametrize("s", [1.0, 1.5, 4.0, 37.5])
def test_discrete_gaussian_matches_its_pmf(s):
    z = discrete_gaussian(s, 200_000, _words(int(10 * s)))
    assert np.array_equal(z, np.round(z))
    assert _chi2_p(z, lambda k: -(k**2) / (2 * s * s)) > 1e-4


@pytest.mark.parametrize("b", [0.4, 1.0, 3.0, 20.0])
def test_discrete_laplace_matches_its_pmf(b):
    z = discrete_laplace(b, 200_000, _words(int(10 * b)))
    assert _chi2_p(z, lambda k: -np.abs(k) / b) > 1e-4


def test_a_wrong_pmf_is_caught():
    """The χ² check above can fail: N_ℤ(0, 1.5²) is not N_ℤ(0, 1.6²), nor DLap(3) DLap(3.2)."""
    z = discrete_gaussian(1.5, 200_000, _words(1))
    assert _chi2_p(z, lambda k: -(k**2) / (2 * 1.6**2)) < 1e-6
    z = discrete_laplace(3.0, 200_000, _words(2))
    assert _chi2_p(z, lambda k: -np.abs(k) / 3.2) < 1e-6


def test_the_exact_path_alone_gives_the_same_distribution(monkeypatch):
    """Margins so wide that most decisions go to the rational path: the pmf is still exact."""
    monkeypatch.setattr(discrete, "_LOG_SLACK", 0.05)
    monkeypatch.setattr(discrete, "_EXP_MARGIN", 0.05)
    z = discrete_gaussian(2.5, 20_000, _words(3))
    assert _chi2_p(z, lambda k: -(k**2) / (2 * 2.5**2)) > 1e-4
    z = discrete_laplace(1.5, 20_000, _words(4))
    assert _chi2_p(z, lambda k: -np.abs(k) / 1.5) > 1e-4


def test_a_uniform_below_two_to_the_minus_53_is_decided_exactly():
    """Words whose 53 uniform bits are zero: U < 2⁻⁵³, so ⌊−b ln U⌋ ≥ 36.7·b is found by exact search."""
    gen = np.random.default_rng(5)

    def words(n):
        w = gen.bit_generator.random_raw(n)
        w[: max(1, n // 2)] &= ~np.uint64((1 << 53) - 1)
        return w

    z = np.abs(discrete_laplace(2.0, 2000, words))
    assert (z >= 73).mean() > 0.3  # about half the draws: −2 ln U > 73.4
    assert z.max() < 2 * 36.7 * 2.0 + 60


def test_the_float_assumptions_of_the_certification_hold():
    """numpy's float64 ``exp`` and ``log`` within 2⁻⁴⁸ relative of the exact values (the sampler assumes it;
    an ``exp`` below the float range may underflow to 0, an absolute error far below the margins)."""
    gen = np.random.default_rng(6)
    xs = np.concatenate([gen.uniform(0, 1, 300), gen.uniform(0, 50, 300), gen.uniform(0, 2000, 100)])
    tiny = Fraction(1, 2**1000)
    for x, e in zip(xs, np.exp(-xs)):
        lo, hi = _exp_neg_fixed(Fraction(float(x)), 1200)
        exact_lo, exact_hi = Fraction(lo, 1 << 1200), Fraction(hi, 1 << 1200)
        assert exact_lo * (1 - Fraction(1, 2**48)) - tiny <= Fraction(float(e)) <= exact_hi * (1 + Fraction(1, 2**48)) + tiny
    us = np.concatenate([gen.random(300), 2.0 ** -gen.uniform(0, 53, 300), 1 - gen.integers(1, 2**20, 100) * 2.0**-53])
    for u, y in zip(us, np.log(us)):
        # log(u) = y within 2⁻⁴⁸|y|  ⟺  e^{y(1+2⁻⁴⁸)} ≤ u ≤ e^{y(1−2⁻⁴⁸)}  (y ≤ 0)
        low, _ = _exp_neg_fixed(-Fraction(float(y)) * (1 + Fraction(1, 2**48)), 200)
        _, high = _exp_neg_fixed(-Fraction(float(y)) * (1 - Fraction(1, 2**48)), 200)
        assert Fraction(low, 1 << 200) <= Fraction(float(u)) <= Fraction(high, 1 << 200)


def test_exp_bounds_are_tight_and_ordered():
    for x in (Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 2), Fraction(123456789, 2**20)):
        lo, hi = _exp_neg_fixed(x, 100)
        assert lo <= hi <= lo + 4
        assert lo / 2**100 <= math.exp(-float(x)) * (1 + 1e-15) and math.exp(-float(x)) * (1 - 1e-15) <= hi / 2**100


def test_the_sampler_refuses_scales_outside_its_proven_range():
    with pytest.raises(ValueError):
        discrete_gaussian(0.5, 3, _words(0))
    with pytest.raises(ValueError):
        discrete_laplace(2.0**43, 3, _words(0))


# --- the lattice and the mechanisms -----------------------------------------------------------


@pytest.mark.parametrize("scale, sens, spread", [(1.0, 1.0, 1.0), (3.7, 2.0, 700.0), (0.02, 0.5, 1e5), (900.0, 1.0, 4.0)])
def test_the_lattice_keeps_the_planned_ratio(scale, sens, spread):
    step, s = lattice(scale, sens, spread)
    assert math.log2(step).is_integer()
    assert s / (sens / step + spread) >= scale / sens  # never less noise than planned, after the rounding
    assert step * s <= scale * (1 + LATTICE_SLACK) * (1 + 1e-9)  # and at most LATTICE_SLACK more


def test_vetted_noise_has_the_planned_scale_and_sits_on_the_public_lattice():
    n = 50_000
    g = vetted_gaussian(np.full(n, 0.3), 2.0, NoiseSource(), sensitivity=1.0)
    assert abs(g.std() / 2.0 - 1) < 0.02 and abs(g.mean() - 0.3) < 0.05
    step, _ = lattice(2.0, 1.0, math.sqrt(n))
    assert np.array_equal(g / step, np.round(g / step))
    lap = vetted_laplace(np.zeros(n), 1.5, NoiseSource(), sensitivity=1.0)
    assert abs(np.mean(np.abs(lap)) / 1.5 - 1) < 0.03


def test_reproducible_noise_repeats_through_the_lattice_sampler():
    a = vetted_gaussian(np.zeros(10), 1.0, NoiseSource(7, reproducible=True), sensitivity=1.0)
    b = vetted_gaussian(np.zeros(10), 1.0, NoiseSource(7, reproducible=True), sensitivity=1.0)
    c = vetted_gaussian(np.zeros(10), 1.0, NoiseSource(), sensitivity=1.0)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_secret_words_are_uniform_and_not_shared_with_a_forked_child():
    words = SecretWords()
    w = words(200_000)
    bits = np.unpackbits(w.view(np.uint8))
    assert abs(bits.mean() - 0.5) < 0.002
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child draws after the fork
        os.write(write, words(4).tobytes())
        os._exit(0)
    os.waitpid(pid, 0)
    child = np.frombuffer(os.read(read, 32), dtype=np.uint64)
    assert not np.array_equal(child, words(4))
    with pytest.raises(TypeError):
        import pickle

        pickle.dumps(words)
