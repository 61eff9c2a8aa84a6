"""Exact, vectorised samplers of the discrete Laplace and discrete Gaussian distributions on ℤ.

Pure functions of a stream of uniform 64-bit words ``words(n) -> uint64[n]``: they hold no
randomness of their own. The only caller is :mod:`dpadapt.privacy.mechanisms`, which owns the
secret stream and the lattice argument that turns these integers into a release.

The distributions, for a real scale ``b > 0`` / ``s > 0``:

* discrete Laplace ``DLap(b)``: ``P(Y = y) ∝ exp(−|y| / b)``;
* discrete Gaussian ``N_ℤ(0, s²)``: ``P(Y = y) ∝ exp(−y² / (2 s²))``.

Algorithm (Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS
2020, Algorithms 2 and 3), run on whole arrays of proposals at once:

1. ``X = ⌊−b · ln U⌋`` for a uniform real ``U ∈ (0, 1)``: ``P(X ≥ k) = P(U ≤ e^{−k/b}) = e^{−k/b}``,
   so ``X`` is geometric with ratio ``e^{−1/b}``;
2. a fair sign bit ``B``; the pair (B = 1, X = 0) is rejected; ``Y = (1 − 2B) X`` is then ``DLap(b)``
   (each y ≠ 0 and y = 0 keep probability ``P(X = |y|) / 2``);
3. for the Gaussian, ``b = t = ⌊s⌋ + 1`` and ``Y`` is accepted with probability
   ``exp(−(|Y| − s²/t)² / (2 s²))`` (a second uniform ``U₂ < e^{−x}``): the accepted ``Y`` has
   ``P ∝ e^{−|y|/t} · e^{−(|y| − s²/t)²/(2s²)} ∝ e^{−y²/(2s²)}`` (CKS 2020, Thm. for Alg. 3).

Exactness. Every decision above is a comparison of a uniform *real* number with a real threshold
(``e^{−k/b}``, ``e^{−x}``). A proposal's 64-bit word gives the first 53 bits ``u`` of ``U`` (bits
0..52, ``U ∈ [u·2⁻⁵³, (u+1)·2⁻⁵³)``), the first 10 bits of ``U₂`` (bits 53..62) and the sign (bit
63); disjoint bits of a uniform word are independent. A comparison is decided in float64 only when
it is *certified*: the whole interval of the uniform lies on one side of the threshold with a
margin that covers every rounding error of the float evaluation (bounds below). Otherwise it is
decided in exact integer arithmetic: the threshold is enclosed between fixed-point bounds of its
alternating Taylor series (:func:`_exp_neg_fixed`) and the uniform is extended by further 64-bit
words until the two intervals separate (for ``U₂`` a first vectorised step draws 53 more bits for the
~0.1 % of proposals its first 10 bits leave open). Every output is therefore the output of the
real-number algorithm for the uniform reals the words define, and the distribution is exactly
``DLap(b)`` / ``N_ℤ(0, s²)`` given uniform words and the float accuracy below. The outputs are
float64 arrays holding integers (exact: ``|X| < 2⁵²``).

Float error bounds used for certification (``u = 2⁻⁵³``): numpy's float64 ``log`` and ``exp`` are
assumed accurate to 2⁻⁴⁸ relative (32 ulp; glibc and numpy's SIMD routines are within 4 ulp; checked
against exact rational bounds in ``tests/test_discrete_sampler.py``). Then

* ``y = −b·log(u)`` has ``|y − (−b ln u)| ≤ 2⁻⁴⁷ y`` and ``−b ln U ∈ [−b ln u − b·2⁻⁵³/u, −b ln u]``:
  ``X = ⌊y(1 + 2⁻⁴⁶)⌋`` is certified when ``y(1 − 2⁻⁴⁶) − b·2⁻⁵²/u`` has the same integer part; else
  the integers between the two bounds are tested exactly (for ``u = 0``, a galloping search from 0);
  the share left to the exact path is about ``b·2⁻⁴⁵`` (the lattice of :mod:`~dpadapt.privacy.mechanisms`
  keeps ``b`` near 2²⁴–2³⁰);
* for ``s ≥ 1`` and ``|Y| ≤ 48 t`` the exponent ``x = (|Y| − s²/t)²/(2s²)`` is computed with absolute
  error below 2⁻³⁸ and ``e^{−x}`` with absolute error below 2⁻³⁷; beyond, ``e^{−x} < e^{−1000}``
  and the float value is as small: the acceptance is certified outside a margin of 2⁻³⁴.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

Words = Callable[[int], np.ndarray]

_ULP53 = 2.0**-53
_LOG_SLACK = 2.0**-46  # relative margin on −b·log(u) (twice the assumed error)
_EXP_MARGIN = 2.0**-34  # absolute margin on exp(−x)
_MAX_SCALE = 2.0**42  # X stays an exact float64 integer (≤ 40·2⁴² < 2⁵³ for u ≥ 2⁻⁵³)
_BLOCK = 1 << 16  # outputs per pass (bounded work arrays)
_U2_BITS = 10  # the first bits of the Gaussian's acceptance uniform, from the proposal's spare bits


def discrete_laplace(scale: float, size: int, words: Words) -> np.ndarray:
    """``size`` i.i.d. draws of ``DLap(scale)`` (``P(y) ∝ exp(−|y|/scale)``): float64 holding integers."""
    b = _check_scale(scale, 0.0)
    return _by_blocks(int(size), lambda w: _laplace_proposals(b, w, words), words, _kept(b))


def discrete_gaussian(scale: float, size: int, words: Words) -> np.ndarray:
    """``size`` i.i.d. draws of ``N_ℤ(0, scale²)`` (``P(y) ∝ exp(−y²/(2 scale²))``): float64 holding integers."""
    s = _check_scale(scale, 1.0)  # the float error bounds below are derived for s ≥ 1
    t = math.floor(s) + 1.0
    z_gauss = s * math.sqrt(2 * math.pi) if s > 8 else sum(math.exp(-y * y / (2 * s * s)) for y in range(-int(40 * s) - 2, int(40 * s) + 3))
    z_laplace = (1 + math.exp(-1 / t)) / (1 - math.exp(-1 / t))
    return _by_blocks(int(size), lambda w: _gaussian_proposals(s, w, words), words,
                      _kept(t) * z_gauss * math.exp(-s * s / (2 * t * t)) / z_laplace)


def _kept(b: float) -> float:
    """The share of proposals that survive the (B = 1, X = 0) rejection."""
    return 1.0 - (1.0 - math.exp(-1.0 / b)) / 2.0


def _check_scale(scale: float, low: float) -> float:
    scale = float(scale)
    if not (scale > 0.0 and low <= scale <= _MAX_SCALE):
        raise ValueError(f"the sampler's scale must lie in [{low:g}, 2^42] and be positive, got {scale!r}")
    return scale


def _by_blocks(size: int, proposals, words: Words, acceptance: float) -> np.ndarray:
    """The accepted proposals, in the order drawn, until ``size`` are kept (they are i.i.d.).

    Each pass draws a little more than the expected need (``acceptance`` is a lower estimate of the
    acceptance rate), so one pass per block is the rule.
    """
    out = np.empty(size, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):  # u = 0: log → −inf, decided exactly
        for start in range(0, size, _BLOCK):
            block = out[start : start + _BLOCK]
            done = 0
            while done < block.size:
                need = block.size - done
                y, accepted = proposals(words(int(need / (0.97 * acceptance)) + 32))
                kept = np.flatnonzero(accepted)[:need]
                block[done : done + kept.size] = y.take(kept)
                done += kept.size
    return out


# Layout of a proposal's 64-bit word: bits 0..52 → U (magnitude), bits 53..62 → the first 10 bits of
# U₂ (Gaussian acceptance), bit 63 → the sign B. Disjoint bits of a uniform word are independent.
_U_MASK = np.uint64((1 << 53) - 1)
_SIGN = np.uint64(1 << 63)
_U2_SHIFT = np.uint64(53)
_U2_MASK = np.uint64((1 << _U2_BITS) - 1)


def _geometric(b: float, w: np.ndarray, words: Words) -> np.ndarray:
    """``X = ⌊−b ln U⌋`` per word, float64; the few the float evaluation cannot certify are decided exactly."""
    top = w & _U_MASK
    u = top.astype(np.float64)
    u *= _ULP53
    y = np.log(u)  # u = 0 → −inf: decided exactly below
    y *= -b
    x = np.floor(y * (1.0 + _LOG_SLACK))
    lo = y * (1.0 - _LOG_SLACK)
    lo -= (2.0 * b * _ULP53) / u
    for i in np.flatnonzero(~(lo >= x)):  # [lo, hi] holds more than one integer part (or u = 0)
        x[i] = _UniformReal(int(top[i]), 53, words).geometric(b, lo[i], x[i])
    return x


def _signed(x: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Y, kept)``: ``Y = (1 − 2B)·X`` with the word's sign bit B, and False where (B = 1, X = 0)."""
    bits = x.view(np.uint64)
    bits |= w & _SIGN  # X ≥ 0: setting the sign bit negates it exactly
    return x, bits != _SIGN  # −0.0 is (B = 1, X = 0)


def _laplace_proposals(b: float, w: np.ndarray, words: Words) -> tuple[np.ndarray, np.ndarray]:
    return _signed(_geometric(b, w, words), w)


def _gaussian_proposals(s: float, w: np.ndarray, words: Words) -> tuple[np.ndarray, np.ndarray]:
    t = math.floor(s) + 1.0
    x = _geometric(t, w, words)
    # U₂ ∈ [a, a + 2⁻¹⁰) from the word's bits 53..62; more bits are drawn only when these leave it open
    a_int = (w >> _U2_SHIFT) & _U2_MASK
    a = a_int.astype(np.float64)
    a *= 2.0**-_U2_BITS
    d = x - s * s / t
    d *= d
    d *= -1.0 / (2.0 * s * s)
    e = np.exp(d)  # |e − exp(−x_exact)| ≤ 2⁻³⁷ (module docstring)
    e -= a
    accepted = e >= 2.0**-_U2_BITS + _EXP_MARGIN  # U₂ < a + 2⁻¹⁰ ≤ e^{−x}
    e -= 2.0 ** -(_U2_BITS + 1)
    np.abs(e, out=e)
    open_ = np.flatnonzero(e < 2.0 ** -(_U2_BITS + 1) + _EXP_MARGIN)  # neither accepted nor U₂ ≥ a > e^{−x}
    if open_.size:
        accepted[open_] = _accept_exactly(s, t, x[open_], a_int[open_], words)
    y, kept = _signed(x, w)
    accepted &= kept
    return y, accepted


def _accept_exactly(s: float, t: float, x: np.ndarray, a_int: np.ndarray, words: Words) -> np.ndarray:
    """The acceptance ``U₂ < exp(−(X − s²/t)²/(2s²))`` for the few proposals the first bits left open."""
    low = words(x.size) & _U_MASK
    num = (a_int << _U2_SHIFT) | low  # the first 63 bits of U₂
    u2 = a_int.astype(np.float64) * 2.0**-_U2_BITS + low.astype(np.float64) * 2.0**-63  # error ≤ 2⁻⁵³
    d = x - s * s / t
    e = np.exp(-(d * d) / (2.0 * s * s))
    accepted = (u2 + 2.0**-52) <= (e - _EXP_MARGIN)
    decided = accepted | (u2 - 2.0**-52 >= e + _EXP_MARGIN)
    for i in np.flatnonzero(~decided):
        z = (Fraction(int(x[i])) - Fraction(s) ** 2 / Fraction(t)) ** 2 / (2 * Fraction(s) ** 2)
        accepted[i] = _UniformReal(int(num[i]), 63, words).below(z)
    return accepted


class _UniformReal:
    """A uniform real ``U ∈ [0, 1)`` of which the first ``bits`` binary digits are known (``num / 2^bits``);
    more digits are drawn from ``words`` only when a comparison needs them."""

    def __init__(self, num: int, bits: int, words: Words):
        self.num, self.bits, self.words = int(num), int(bits), words

    def _refine(self) -> None:
        self.num = (self.num << 64) | int(self.words(1)[0])
        self.bits += 64

    def below(self, x: Fraction) -> bool:
        """Exactly whether ``U < e^{−x}`` (``x ≥ 0``); equality has probability zero."""
        while True:
            q = self.bits + 8
            lo, hi = _exp_neg_fixed(x, q)  # lo ≤ e^{−x}·2^q ≤ hi
            if (self.num + 1) << q <= lo << self.bits:  # all of [num, num + 1)·2^{−bits} lies below e^{−x}
                return True
            if self.num << q >= hi << self.bits:
                return False
            self._refine()

    def geometric(self, b: float, lower: float, upper: float) -> int:
        """Exactly ``⌊−b ln U⌋`` = the largest k with ``U ≤ e^{−k/b}``, given float bounds ``lower ≤ −b ln U ≤ upper``.

        Between finite bounds only the integers they straddle are tested; without them (``u = 0``) the
        search gallops up from 0 and bisects.
        """
        rb = Fraction(b)
        if math.isfinite(lower) and math.isfinite(upper):
            k = max(0, math.floor(lower))
            while k < math.floor(upper) and self.below((k + 1) / rb):
                k += 1
            return k
        k, step = 0, 1
        while self.below((k + step) / rb):  # gallop up: U ≤ e^{−(k+step)/b}
            k += step
            step *= 2
        while step > 1:  # now the answer lies in [k, k + step): bisect
            step //= 2
            if self.below((k + step) / rb):
                k += step
        if k >= 2**52:  # probability below e^{-1000} at any admissible scale: refuse rather than round
            raise ArithmeticError("a geometric draw beyond 2^52; draw again")
        return k


def _exp_neg_fixed(x: Fraction, q: int) -> tuple[int, int]:
    """Integers ``lo ≤ e^{−x}·2^q ≤ hi`` with ``hi − lo`` a few units, for rational ``x ≥ 0`` (exact integer arithmetic)."""
    if x < 0:
        raise ValueError("x must be ≥ 0")
    n = math.floor(x)
    if n > q:  # e^{−x} ≤ e^{−n} < 2^{−q}
        return 0, 1
    g = q + 2 * (n + 1).bit_length() + 8  # guard bits for the roundings below
    r = x - n
    a_lo, a_hi = _exp_neg_one(g)
    b_lo, b_hi = _exp_neg_series(r.numerator, r.denominator, g)  # e^{−r}, 0 ≤ r < 1
    p_lo = p_hi = 1 << g
    while n:  # (e^{−1})^n by squaring, rounded outward
        if n & 1:
            p_lo, p_hi = (p_lo * a_lo) >> g, -((-p_hi * a_hi) >> g)
        a_lo, a_hi = (a_lo * a_lo) >> g, -((-a_hi * a_hi) >> g)
        n >>= 1
    shift = 2 * g - q
    return (p_lo * b_lo) >> shift, -((-p_hi * b_hi) >> shift)


@functools.lru_cache(maxsize=32)
def _exp_neg_one(g: int) -> tuple[int, int]:
    """Bounds of ``e^{−1}·2^g`` (cached: every exact comparison needs them)."""
    return _exp_neg_series(1, 1, g)


def _exp_neg_series(p: int, d: int, g: int) -> tuple[int, int]:
    """Integers ``lo ≤ e^{−p/d}·2^g ≤ hi`` for ``0 ≤ p/d ≤ 1``, ``hi − lo`` ≤ a few dozen units.

    ``Σ (−r)^k / k!`` alternates with non-increasing terms (r ≤ 1), so the value lies between any two
    consecutive partial sums; every term is bounded below / above by floor / ceiling in fixed point,
    and the sum stops once a term is below 2^{−g}.
    """
    t_lo = t_hi = s_lo = s_hi = 1 << g
    k = 0
    while True:
        k += 1
        t_lo, t_hi = (t_lo * p) // (d * k), -((-t_hi * p) // (d * k))
        n_lo, n_hi = (s_lo - t_hi, s_hi - t_lo) if k % 2 else (s_lo + t_lo, s_hi + t_hi)
        if t_hi <= 1:
            return min(s_lo, n_lo), max(s_hi, n_hi)
        s_lo, s_hi = n_lo, n_hi
