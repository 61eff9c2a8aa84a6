"""Noise-adding mechanisms: the only place privacy noise is drawn, from a :class:`NoiseSource`.

A fresh :class:`NoiseSource` draws from OpenDP's vetted samplers; the public one-release mechanisms
(:func:`gaussian_mechanism`, :func:`gaussian_matrix_release`, :func:`laplace_mechanism`,
:func:`randomized_response`) also accept a caller's :class:`numpy.random.Generator` for audits, and
then return a Guarantee marked invalid that says why (replayable noise, numpy's float sampler).

Every mechanism here releases a quantity whose sensitivity the *caller* bounds (by clipping rows
to a public norm with :func:`clip_rows`, by counting, ...) and returns the noisy value with the
:class:`~dpadapt.privacy.guarantee.Guarantee` of that one release. Calibrations:

* Gaussian: analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) — exact for one
  release, valid for every ε > 0 (the classic sqrt(2 ln(1.25/δ))/ε is not, for ε ≥ 1).
* Laplace: scale Δ₁/ε gives ε-DP (Dwork et al. 2006).
* k-ary randomized response: keep with probability e^ε/(e^ε + k − 1), else a uniformly drawn
  *other* label; ε-DP for one label (Warner 1965; Kairouz et al. 2016).
* Report-noisy-min: Laplace scale 2Δ/ε₀ for non-monotone queries (Dwork & Roth, Claim 3.9).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from dpadapt.privacy import accounting
from dpadapt.privacy.discrete import discrete_gaussian, discrete_laplace
from dpadapt.privacy.guarantee import Guarantee, Party, Unit, analytic_gaussian_guarantee, closed_form_guarantee
from dpadapt.validation import check_epsilon, check_positive, issparse

if TYPE_CHECKING:  # dp-accounting is imported where an event is built or accounted (dpadapt.privacy.accounting)
    import dp_accounting


class NoiseSource:
    """Secret randomness for privacy noise; only the mechanisms in this module draw from it.

    A release must not let anyone replay its noise. Public randomness (projection matrices,
    slicing directions, partitions, shuffles) is released or reproducible by design, so it comes
    from a *different* stream (:func:`random_streams`). By default the noise stream is seeded
    from fresh OS entropy, whatever ``random_state`` the caller gave; it is reproducible only when
    the caller asks for it (``reproducible=True``), and the guarantee then records that the noise
    is as secret as the caller's seed.

    The vetted samplers (:func:`vetted_gaussian`, :func:`vetted_laplace`) read 64-bit words from a
    :class:`SecretWords` stream (ChaCha20 keyed from ``os.urandom``); the other mechanisms use a
    numpy ``Generator`` seeded from fresh OS entropy. Reproducible noise takes both from the seed.
    """

    __slots__ = ("_generator", "_words", "reproducible")

    def __init__(self, seed: int | np.random.SeedSequence | None = None, *, reproducible: bool = False) -> None:
        if reproducible and seed is None:
            raise ValueError("reproducible noise needs an explicit integer seed")
        if not reproducible:
            seed = None  # fresh OS entropy: nothing released can reveal it
        self._generator = np.random.default_rng(seed)
        self._words = None if reproducible else SecretWords()
        self.reproducible = bool(reproducible)

    def __repr__(self) -> str:  # never print the state
        return f"NoiseSource(reproducible={self.reproducible})"

    def __reduce__(self):
        raise TypeError("a NoiseSource cannot be pickled or saved")

    def spawn(self) -> NoiseSource:
        """An independent child stream (for a worker or a torch generator)."""
        _announce_draw()  # the child may draw where no hook runs (another thread or process)
        child = NoiseSource.__new__(NoiseSource)
        child._generator = self._generator.spawn(1)[0]
        child._words = None if self.reproducible else SecretWords()
        child.reproducible = self.reproducible
        return child

    def torch_generator(self):
        """A ``torch.Generator`` seeded from this stream (for the torch mechanisms below)."""
        import torch

        g = torch.Generator()
        g.manual_seed(int(_noise_generator(self).integers(2**63 - 1)))
        return g


class SecretWords:
    """Uniform 64-bit words from a cryptographically strong stream: the ChaCha20 keystream
    (RFC 8439, through ``cryptography``/OpenSSL) under a 256-bit key and nonce from ``os.urandom``.

    Why a cipher and not numpy's generator: the words become released noise, and a generator
    whose state can be recovered from its outputs (PCG, Mersenne Twister) would let someone who
    learns some noise (e.g. from a public row) predict the rest; a ChaCha20 keystream cannot be
    predicted without the key (the same construction as Linux's ``getrandom``). It runs at about
    numpy's speed (~1–3 ns a word). A process that forks gets a fresh key in the child (the pid is
    checked on every draw), so parent and child never share a keystream.
    """

    __slots__ = ("_cipher", "_pid", "_zeros")

    def __init__(self) -> None:
        self._pid = None

    def __repr__(self) -> str:
        return "SecretWords()"

    def __reduce__(self):
        raise TypeError("a secret stream cannot be pickled or saved")

    def __call__(self, n: int) -> np.ndarray:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

        if self._pid != os.getpid():  # first use, or a forked child: a key of its own
            self._cipher = Cipher(algorithms.ChaCha20(os.urandom(32), os.urandom(16)), mode=None).encryptor()
            self._pid = os.getpid()
            self._zeros = np.zeros(0, dtype=np.uint8)
        nbytes = 8 * int(n)
        if self._zeros.size < nbytes:
            self._zeros = np.zeros(max(nbytes, 1 << 16), dtype=np.uint8)
        out = np.empty(nbytes + 64, dtype=np.uint8)
        self._cipher.update_into(self._zeros[:nbytes], out)  # keystream XOR zeros = keystream
        return out[:nbytes].view(np.uint64)


def recorded(guarantee: Guarantee, noise) -> Guarantee:
    """``guarantee`` as it holds for noise drawn from ``noise``: invalid (with the reason) when the noise
    is reproducible from a seed or came from a caller's numpy Generator."""
    from dpadapt.privacy.guarantee import CALLER_GENERATOR_REASON, REPRODUCIBLE_NOISE_REASON

    if isinstance(noise, np.random.Generator):
        return guarantee.invalidated(CALLER_GENERATOR_REASON)
    return guarantee.invalidated(REPRODUCIBLE_NOISE_REASON) if _reproducible(noise) else guarantee


_NOISE_SPAWN_KEY = (0x6E6F697365,)  # "noise": keeps reproducible noise apart from the public stream


def random_streams(random_state=None, *, reproducible_noise: bool = False) -> tuple[np.random.Generator, NoiseSource]:
    """Split a caller's ``random_state`` into a public generator and a secret :class:`NoiseSource`.

    The public generator is ``np.random.default_rng(random_state)``: two runs with the same integer
    ``random_state`` draw the same projections, directions and partitions. The noise source is fresh
    OS entropy unless ``reproducible_noise`` is set, in which case it is derived from the integer
    seed through a separate ``SeedSequence`` spawn key (never the public stream's draws).
    """
    from dpadapt.validation import check_random_state

    public = check_random_state(random_state)
    if not reproducible_noise:
        return public, NoiseSource()
    if not isinstance(random_state, (int, np.integer)):
        raise ValueError("reproducible_noise=True needs an integer random_state")
    seq = np.random.SeedSequence(int(random_state), spawn_key=_NOISE_SPAWN_KEY)
    return public, NoiseSource(seq, reproducible=True)


#: Callbacks run before the first secret draw of the process (a stack: the innermost runs). The
#: privacy ledger registers :meth:`~dpadapt.privacy.ledger.Reservation.publish` here, so a spend is
#: final before any noise exists: a process that dies after drawing is never refunded.
_BEFORE_NOISE: list = []


@contextlib.contextmanager
def _hooked(hooks: list, callback) -> Iterator[None]:
    """``callback`` in ``hooks`` for the duration of the block."""
    hooks.append(callback)
    try:
        yield
    finally:
        hooks.remove(callback)


def before_noise(callback) -> contextlib.AbstractContextManager[None]:
    """Run ``callback()`` before every secret draw made inside the block (it must be idempotent)."""
    return _hooked(_BEFORE_NOISE, callback)


def _announce_draw() -> None:
    for callback in _BEFORE_NOISE:
        callback()


@dataclasses.dataclass(frozen=True)
class Draw:
    """What one noise draw was about to perturb (for :func:`observe_draws`): the exact ``value`` (a copy,
    flattened), the noise ``scale``, the ``sensitivity`` the calibration states for ``value`` (None where the
    call site states none) and its ``norm`` ("l2", "l1" or "linf")."""

    kind: str
    value: np.ndarray
    scale: float
    sensitivity: float | None
    norm: str


#: Observers of the exact values about to be noised (a test hook of the attack suite: D vs D′ moves
#: the first draw by at most its stated Δ). Empty in normal use; nothing is copied then.
_OBSERVERS: list = []


def observe_draws(callback) -> contextlib.AbstractContextManager[None]:
    """Call ``callback(Draw)`` with the exact value of every noise draw made inside the block (tests only)."""
    return _hooked(_OBSERVERS, callback)


def _observe(kind: str, value, scale: float, sensitivity: float | None, norm: str) -> None:
    if _OBSERVERS:
        if hasattr(value, "detach"):  # a torch tensor
            value = value.detach().cpu().double().numpy()
        draw = Draw(kind, np.array(value, dtype=np.float64).ravel(), float(scale),
                    None if sensitivity is None else float(sensitivity), norm)
        for callback in _OBSERVERS:
            callback(draw)


def _noise_generator(noise: NoiseSource | np.random.Generator) -> np.random.Generator:
    """The generator behind a noise source, for one secret draw (announced to :func:`before_noise` first)."""
    _announce_draw()
    if isinstance(noise, NoiseSource):
        return noise._generator
    if isinstance(noise, np.random.Generator):
        return noise
    raise TypeError(f"noise must be a NoiseSource, got {type(noise).__name__}")


@dataclasses.dataclass(frozen=True)
class MechanismOutput:
    """A noisy value, the noise scale used and the guarantee of this single release."""

    value: np.ndarray
    noise_scale: float
    guarantee: Guarantee


@dataclasses.dataclass(frozen=True)
class Noised:
    """The output of a plan-calibrated mechanism and the dp-accounting event of that one release."""

    value: np.ndarray
    event: "dp_accounting.DpEvent"


# --- the vetted samplers ---------------------------------------
#
# Every one-release mechanism adds its noise through :func:`vetted_gaussian` / :func:`vetted_laplace`:
# the value is rounded onto a public lattice and exactly sampled discrete noise is added there
# (:mod:`dpadapt.privacy.discrete`, Canonne, Kamath & Steinke 2020), so the output has none of the
# support gaps of ``value + float noise`` that Mironov (CCS 2012) turned into an attack on the
# Laplace mechanism. The random words come from the secret ChaCha20 stream of the NoiseSource
# (:class:`SecretWords`; numpy's generator when the noise is reproducible, already marked invalid in
# the Guarantee). The vectorised sampler runs within about 2x numpy's own float samplers (
# it replaced OpenDP's measurements, 65–78 µs a value). Iterative mechanisms that add noise at every
# step (noisy GD, Frank–Wolfe, DP-SWD rounds, DP-SGD) still use numpy's / torch's float samplers and
# say so in their theorems.

#: Words for the theorem text of mechanisms that keep numpy's or torch's float sampler.
FAST_SAMPLER_WORDS = ("noise from numpy's/torch's float Gaussian samplers (not floating-point vetted: "
                      "per-step noise does not use the lattice sampler)")

#: The rounding onto the lattice may add at most this fraction to the noise's scale (see :func:`lattice`).
LATTICE_SLACK = 2.0**-12


def _reproducible(noise) -> bool:
    return isinstance(noise, np.random.Generator) or getattr(noise, "reproducible", False)


def _noise_words(noise: NoiseSource | np.random.Generator):
    """The stream of uniform 64-bit words behind a noise source, for one secret draw (announced first)."""
    _announce_draw()
    if isinstance(noise, NoiseSource):
        return noise._words if noise._words is not None else noise._generator.bit_generator.random_raw
    if isinstance(noise, np.random.Generator):
        return noise.bit_generator.random_raw
    raise TypeError(f"noise must be a NoiseSource, got {type(noise).__name__}")


def lattice(scale: float, sensitivity: float, spread: float) -> tuple[float, float]:
    """The public lattice step ``g`` (a power of two) and the integer-unit scale ``s`` of the discrete noise.

    ``scale``: σ (Gaussian) or b (Laplace) as planned for sensitivity Δ; ``spread``: the largest norm
    of a difference of rounding errors in lattice units (√m for ℓ2 over m values, m for ℓ1, 1 for
    ℓ∞). Rounding each value to the nearest multiple of ``g`` moves it by at most g/2, so neighbouring
    inputs round to integer vectors at distance at most Δ/g + spread; the integer noise scale
    ``s = (scale/Δ)·(Δ/g + spread)`` keeps the ratio scale/sensitivity of the plan exactly. ``g`` is
    chosen from public numbers only (σ, Δ, m), never from the values, with ``g·spread/Δ ≤``
    :data:`LATTICE_SLACK`: the noise is at most that fraction larger than planned.
    """
    ratio = scale / sensitivity
    bits = min(40, max(16, math.ceil(math.log2(ratio * spread / LATTICE_SLACK))))
    step = 2.0 ** (math.floor(math.log2(scale)) - bits)
    return step, ratio * (sensitivity / step + spread) * (1.0 + 2.0**-40)  # rounded up: never less noise


def vetted_gaussian(values, sigma: float, noise: NoiseSource, *, sensitivity: float) -> np.ndarray:
    """``values`` + discrete Gaussian noise of scale σ on a public lattice: the analytic-Gaussian release
    of a vector whose ℓ2 sensitivity is ``sensitivity`` (:func:`_vetted` states the argument)."""
    return _vetted("gaussian", values, sigma, noise, sensitivity, math.sqrt(np.size(values)))


def vetted_laplace(values, scale: float, noise: NoiseSource, *, sensitivity: float, norm: str = "l1") -> np.ndarray:
    """``values`` + discrete Laplace noise of scale b on a public lattice, for a vector whose ``norm``
    (``"l1"``: the Laplace mechanism; ``"linf"``: each value alone, report-noisy-min) sensitivity is ``sensitivity``."""
    if norm not in ("l1", "linf"):
        raise ValueError(f"norm must be 'l1' or 'linf', got {norm!r}")
    return _vetted("laplace", values, scale, noise, sensitivity, float(np.size(values)) if norm == "l1" else 1.0)


def _vetted(kind: str, values, scale: float, noise: NoiseSource, sensitivity: float, spread: float) -> np.ndarray:
    """``values`` plus exactly sampled discrete ``kind`` noise ("gaussian" or "laplace") on a public lattice.

    The mechanism, for a query ``f`` with sensitivity Δ (in the norm ``spread`` belongs to):

    1. ``q = round(f(D) / g)`` with the public power-of-two step ``g`` of :func:`lattice` (exact in
       float64: division by a power of two, then ``rint``);
    2. ``q + Z`` with ``Z`` i.i.d. ``N_ℤ(0, s²)`` / ``DLap(s)`` (:mod:`dpadapt.privacy.discrete`: exact);
    3. the output ``g·(q + Z)``: the float sum is the correctly rounded exact integer sum and the
       product by a power of two is exact, so the output is a function of the integer ``q + Z`` alone.

    Privacy. ``‖q(D) − q(D′)‖ ≤ Δ/g + spread`` (each rounding error is at most 1/2 in lattice units),
    and ``s/(Δ/g + spread) = scale/Δ``, the ratio the plan calibrated. Laplace: adding ``DLap(s)``
    to an integer vector of ℓ1 (or, per value, ℓ∞) sensitivity Δ_ℤ is ε-DP for ε = Δ_ℤ/s (the ratio
    of the pmfs is at most ``e^{‖μ − μ′‖₁/s}``), exactly the continuous Laplace mechanism's ε.
    Gaussian: the multivariate discrete Gaussian on an integer vector of ℓ2 sensitivity Δ_ℤ has the
    Rényi divergences of the continuous one, ``α Δ_ℤ²/(2s²)`` (CKS 2020, the concentrated-DP
    theorem for the discrete Gaussian), which is what ``GaussianDpEvent(σ/Δ)`` composes; its single
    release (ε, δ) is calibrated with the continuous analytic Gaussian (Balle & Wang 2018), which CKS
    2020 show the discrete Gaussian matches up to terms that vanish like ``e^{−2π²s²}`` (here
    ``s ≥ 2¹⁶``) — the convention of the OpenDP measurement this sampler replaced. Step 3 is
    post-processing, and the output lies on ``gℤ`` whatever the input: no support gap.
    """
    values = np.asarray(values, dtype=np.float64)
    check_positive(scale, "the noise scale")
    check_positive(sensitivity, "sensitivity")
    _require_finite(values, "the values to release")
    if values.size == 0:
        return values.copy()
    step, s = lattice(float(scale), float(sensitivity), float(spread))
    if np.max(np.abs(values)) + 64.0 * scale > 1e300:
        raise NonFiniteError("the values to release are too large to add noise to in float64; refused before any noise was drawn")
    q = np.rint(values / step)
    draw = discrete_gaussian if kind == "gaussian" else discrete_laplace
    z = draw(s, values.size, _noise_words(noise)).reshape(values.shape)
    z += q
    z *= step
    return z


def gaussian(
    value, *, sigma: float, sensitivity: float, noise: NoiseSource, symmetric: bool = False, vetted: bool = True
) -> Noised:
    """Release ``value + N(0, σ²)`` for a σ fixed by a plan; the event is ``GaussianDpEvent(σ/Δ)``.

    ``sensitivity`` is the ℓ2 sensitivity Δ of ``value`` under the plan's neighbouring relation
    (for ``symmetric``, of the upper triangle with diagonal); the caller's plan must have enforced it.
    The noise comes from the vetted sampler (:func:`vetted_gaussian`); ``vetted=False`` is for
    iterative mechanisms only (one draw per step), whose theorem text says so (:data:`FAST_SAMPLER_WORDS`).
    """
    check_positive(sigma, "sigma")
    check_positive(sensitivity, "sensitivity")
    value = np.asarray(value, dtype=np.float64)
    _require_finite(value, "the values to release")
    _observe("gaussian", value[np.triu_indices(value.shape[0])] if symmetric and value.ndim == 2 else value, sigma,
             sensitivity, "l2")
    if not vetted:
        noisy = value + _noise_generator(noise).normal(0.0, sigma, size=value.shape)
    elif symmetric:
        noisy = _symmetric(value, lambda upper: vetted_gaussian(upper, sigma, noise, sensitivity=sensitivity))
    else:
        noisy = vetted_gaussian(value, sigma, noise, sensitivity=sensitivity)
    return Noised(noisy, accounting.gaussian_event(sigma / sensitivity))


def _symmetric(value: np.ndarray, release) -> np.ndarray:
    """A symmetric matrix whose upper triangle (with diagonal) is released once and mirrored."""
    if value.ndim != 2 or value.shape[0] != value.shape[1]:
        raise ValueError(f"symmetric noise needs a square matrix, got shape {value.shape}")
    return _mirrored_upper(release(value[np.triu_indices(value.shape[0])]), value.shape[0])


class NonFiniteError(ValueError):
    """A value about to be released (or clipped) is NaN or infinite: refused before any noise is drawn."""


def _require_finite(value: np.ndarray, what: str) -> None:
    """Raise :class:`NonFiniteError` unless every entry of ``value`` is finite (in its own dtype).

    NaN slips through comparisons (``NaN > 1`` is false), so a clip or a sensitivity bound does not
    hold for it; a NaN or ∞ in a released value would mark exactly the runs that used the bad row.
    """
    if not np.all(np.isfinite(value)):
        raise NonFiniteError(
            f"{what} contain NaN or infinite values (an overflow of the computation, or hostile input); "
            "refused before any noise was drawn"
        )


def clip_rows(X, max_norm: float):
    """Scale every row with ℓ2 norm above ``max_norm`` down to ``max_norm`` (a per-record operation).

    ``max_norm`` must be public (fixed before seeing the data); rows below it are unchanged. A
    non-finite entry raises :class:`NonFiniteError` (a NaN row would otherwise pass the clip
    unchanged). Every finite row is clipped, even one whose norm overflows float64 (1e200 entries):
    the norm is taken of the row divided by its largest entry (:func:`_clip_factors`), so refusing
    such a row — which would reveal it — is never needed. A scipy sparse matrix gives a
    canonical float64 CSR copy (:func:`_clip_csr`).
    """
    check_positive(max_norm, "max_norm")
    if issparse(X):
        return _clip_csr(X, max_norm)
    X = np.asarray(X, dtype=np.float64)
    _require_finite(X, "rows to clip")
    if X.ndim != 2:
        raise ValueError(f"rows to clip must be a 2-D array, got shape {X.shape}")
    return X * _clip_factors(np.max(np.abs(X), axis=1, initial=0.0), X, max_norm)[:, None]


def _clip_csr(Z, max_norm: float):
    """A canonical float64 CSR copy of ``Z`` with its rows clipped to ``max_norm``, overflow-free.

    Canonical first (entries stored twice for one column are summed — a row storing one
    column m times has norm m, not √m), then its stored values are scaled row by row (:func:`_clip_factors`).
    """
    import scipy.sparse as sp

    Z = sp.csr_matrix(Z, dtype=np.float64, copy=True)
    Z.sum_duplicates()  # canonical CSR: the norm below is the norm of the row the matrix represents
    _require_finite(Z.data, "rows to clip")
    rows = np.repeat(np.arange(Z.shape[0]), np.diff(Z.indptr))
    peak = np.zeros(Z.shape[0])
    np.maximum.at(peak, rows, np.abs(Z.data))
    Z.data *= _clip_factors(peak, Z.data, max_norm, rows)[rows]
    return Z


def _clip_factors(peak: np.ndarray, X, max_norm: float, rows: np.ndarray | None = None) -> np.ndarray:
    """Per-row factors min(1, C/‖x‖) without overflow: ‖x‖ = m·‖x/m‖ with m = max|x_j| (``peak``), and
    min(1, (C/m)/‖x/m‖) never forms m·‖x/m‖. ``X`` dense rows, or CSR stored values with their ``rows``."""
    safe = np.where(peak > 0, peak, 1.0)
    if rows is None:
        scaled = X / safe[:, None]
        r = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    else:
        r = np.sqrt(np.bincount(rows, (X / safe[rows]) ** 2, minlength=peak.shape[0]))
    with np.errstate(over="ignore", divide="ignore"):
        return np.minimum(1.0, (max_norm / safe) / np.where(r > 0, r, 1.0))


def gaussian_sigma_for(epsilon: float, delta: float, sensitivity: float) -> float:
    """Analytic-Gaussian σ for one release with ℓ2 sensitivity Δ at (ε, δ)."""
    return accounting.analytic_gaussian_sigma(epsilon, delta, sensitivity)


def gaussian_mechanism(
    value,
    sensitivity: float,
    epsilon: float,
    delta: float,
    noise: NoiseSource | np.random.Generator,
    *,
    party: Party,
    unit: Unit = "record",
    relation: accounting.Relation = "replace_one",
    symmetric: bool = False,
    theorem: str = "Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8)",
) -> MechanismOutput:
    """Release ``value + N(0, σ²)`` with σ calibrated so one release is (ε, δ)-DP.

    Parameters
    ----------
    value : array_like
        The exact quantity; its ℓ2 sensitivity under ``relation`` must be at most ``sensitivity``.
    noise : NoiseSource or numpy.random.Generator
        A fresh :class:`NoiseSource` draws from OpenDP's vetted sampler and the Guarantee is valid. A
        numpy Generator (or a reproducible NoiseSource) draws from numpy's float sampler, replayable
        from its seed: the returned Guarantee is then marked invalid and says why.
    symmetric : bool
        For a symmetric matrix: draw the upper triangle (with diagonal) i.i.d. and mirror it, so
        the released matrix is symmetric. ``sensitivity`` must then be the Frobenius sensitivity
        of the upper triangle (Dwork, Talwar, Thakurta, Zhang, STOC 2014 "Analyze Gauss").
    """
    check_positive(sensitivity, "sensitivity")
    sigma = gaussian_sigma_for(epsilon, delta, sensitivity)
    noisy = gaussian(value, sigma=sigma, sensitivity=sensitivity, noise=noise, symmetric=symmetric).value
    guarantee = analytic_gaussian_guarantee(
        epsilon, delta, sigma / sensitivity, party=party, unit=unit, relation=relation, theorem=theorem,
        sensitivity=float(sensitivity), details={"sigma": sigma},
    )
    return MechanismOutput(noisy, sigma, recorded(guarantee, noise))


def gaussian_matrix_release(
    X, l2_sensitivity: float, epsilon: float, delta: float, noise: NoiseSource | np.random.Generator, **options: Any
) -> MechanismOutput:
    """Release a matrix ``X + N(0, σ²)`` whose ℓ2 (Frobenius) sensitivity is ``l2_sensitivity``: the
    whole matrix is one Gaussian release (:func:`gaussian_mechanism`, whose keyword ``options`` and
    ``noise`` rule it takes: a numpy Generator gives an invalid Guarantee)."""
    options.setdefault("theorem", "Analytic Gaussian mechanism (Balle & Wang, ICML 2018, Thm. 8) on the whole matrix")
    return gaussian_mechanism(X, l2_sensitivity, epsilon, delta, noise, **options)


def laplace_mechanism(
    value,
    l1_sensitivity: float,
    epsilon: float,
    noise: NoiseSource | np.random.Generator,
    *,
    party: Party,
    unit: Unit = "record",
    relation: accounting.Relation = "replace_one",
) -> MechanismOutput:
    """Release ``value + Lap(Δ₁/ε)`` (ε-DP, Dwork, McSherry, Nissim, Smith 2006).

    ``noise``: as in :func:`gaussian_mechanism` (a numpy Generator gives an invalid Guarantee saying why).
    """
    check_epsilon(epsilon)
    check_positive(l1_sensitivity, "l1_sensitivity")
    scale = l1_sensitivity / epsilon
    _observe("laplace", value, scale, l1_sensitivity, "l1")
    noisy = vetted_laplace(value, scale, noise, sensitivity=l1_sensitivity)
    guarantee = closed_form_guarantee(
        float(epsilon), 0.0, party=party, unit=unit, relation=relation, accounting="pure",
        events=(accounting.laplace_event(1.0 / epsilon),), theorem="Laplace mechanism (Dwork, McSherry, Nissim, Smith 2006)",
        sensitivity=float(l1_sensitivity), details={"scale": scale},
    )
    return MechanismOutput(noisy, scale, recorded(guarantee, noise))


def randomized_response(
    labels,
    num_classes: int,
    epsilon: float,
    noise: NoiseSource | np.random.Generator,
    *,
    party: Party = "source",
) -> MechanismOutput:
    """k-ary randomized response on integer labels in ``0..k-1`` (ε-DP for each record's label).

    Each label is kept with probability e^ε/(e^ε + k − 1) and otherwise replaced by one of the
    k − 1 other labels uniformly. Labels are perturbed independently, so releasing a whole
    vector is ε-DP with respect to changing one record's label (parallel composition).
    ``noise``: as in :func:`gaussian_mechanism` (a numpy Generator gives an invalid Guarantee saying why).
    """
    check_epsilon(epsilon)
    if num_classes < 2:
        raise ValueError(f"randomized response needs at least 2 classes, got {num_classes}")
    labels = np.asarray(labels)
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must lie in 0..{num_classes - 1}")
    keep = math.exp(epsilon) / (math.exp(epsilon) + num_classes - 1)
    flip = _noise_generator(noise).random(labels.shape) >= keep
    shift = _noise_generator(noise).integers(1, num_classes, size=labels.shape)
    noisy = np.where(flip, (labels + shift) % num_classes, labels).astype(np.int64)
    guarantee = Guarantee(
        party=party,
        unit="label",
        relation="replace_one",
        epsilon=float(epsilon),
        delta=0.0,
        events=(accounting.randomized_response_event(epsilon, num_classes),),
        accounting="pure",
        theorem="k-ary randomized response (Warner 1965; Kairouz, Oh, Viswanath 2016)",
        sensitivity=None,
        details={"keep_probability": keep, "num_classes": num_classes},
    )
    return MechanismOutput(noisy, keep, recorded(guarantee, noise))


def report_noisy_min(
    scores,
    sensitivity: float,
    epsilon: float,
    noise: NoiseSource,
    *,
    monotone: bool = False,
) -> tuple[int, float]:
    """Index of the smallest of ``scores + Lap(b)`` — ε-DP for scores of ℓ∞ sensitivity Δ.

    b = Δ/ε suffices only for monotone queries (counts); in general b = 2Δ/ε (Dwork & Roth,
    Claim 3.9; spec overview convention 6). Returns the index and the Laplace scale used. It returns
    no Guarantee to mark, so ``noise`` must be a :class:`NoiseSource` (a numpy Generator is refused,
   ); the caller records a reproducible one in its own Guarantee (:func:`recorded`).
    """
    check_epsilon(epsilon)
    check_positive(sensitivity, "sensitivity")
    if not isinstance(noise, NoiseSource):
        raise TypeError(f"report_noisy_min draws only from a NoiseSource (it returns no Guarantee to mark), got {type(noise).__name__}")
    scale = (1.0 if monotone else 2.0) * sensitivity / epsilon
    _observe("report_noisy_min", scores, scale, sensitivity, "linf")
    noisy = vetted_laplace(scores, scale, noise, sensitivity=sensitivity, norm="linf")
    return int(np.argmin(noisy)), scale


# --- class statistics and moments: aggregates with O(1) sensitivity ---------------------------

#: ℓ2 sensitivity of the joint vector (S_1..S_K, c_1..c_K) of per-class sums and counts of rows
#: with norm ≤ 1. Replace-one: a record that changes class moves ≤ 1 + 1 in the squared sums and
#: 1 + 1 in the squared counts (√4 = 2); one that keeps its class moves its sum by ≤ 2. Add/remove:
#: one row (≤ 1) and one count (1), √2.
CLASS_STATISTICS_SENSITIVITY = {"replace_one": 2.0, "add_remove": math.sqrt(2.0)}

#: ℓ2 sensitivity of (n, Σx, upper triangle of Σxxᵀ) for rows with norm ≤ 1. Add/remove: 1 + 1 + 1
#: (‖xxᵀ‖_F = ‖x‖² ≤ 1). Replace-one: count 0, sum ≤ 2, ‖xxᵀ − x′x′ᵀ‖_F² = ‖x‖⁴ + ‖x′‖⁴ − 2(xᵀx′)² ≤ 2.
MOMENT_STATISTICS_SENSITIVITY = {"replace_one": math.sqrt(6.0), "add_remove": math.sqrt(3.0)}

#: ℓ2 sensitivity of the joint vector (S_1..S_K, c_1..c_K, upper triangle of the pooled Σxxᵀ) of
#: rows with norm ≤ 1 (:func:`class_moment_statistics`, the sufficient statistics of LDA / ridge).
#: Replace-one (x, a) → (x′, b): a ≠ b moves the sums by ‖x‖² + ‖x′‖² ≤ 2, the counts by 1 + 1 = 2
#: and the second moment by ‖x′x′ᵀ − xxᵀ‖_F² ≤ ‖x‖⁴ + ‖x′‖⁴ − 2(xᵀx′)² ≤ 2 (squared norms), 6 in
#: all; a = b moves the sums by ‖x′ − x‖² ≤ 4, the counts by 0 and the moment by ≤ 2, 6 again — √6,
#: attained by orthogonal unit rows that change class. Add/remove: ‖x‖² + 1 + ‖x‖⁴ ≤ 3 — √3.
CLASS_MOMENT_SENSITIVITY = {"replace_one": math.sqrt(6.0), "add_remove": math.sqrt(3.0)}


@dataclasses.dataclass(frozen=True)
class ClassStatistics:
    """Noisy per-class sums (K, k) and counts (K,) of unit-ball rows, and the event of the release."""

    sums: np.ndarray
    counts: np.ndarray
    event: "dp_accounting.DpEvent"


@dataclasses.dataclass(frozen=True)
class MomentStatistics:
    """Noisy count, sum (k,) and symmetric second moment (k, k) of unit-ball rows, and the event."""

    count: float
    total: np.ndarray
    second: np.ndarray
    event: "dp_accounting.DpEvent"


def _unit_ball_rows(Z):
    """Rows projected onto the unit ℓ2 ball: the bound the sensitivities above rest on, enforced here.

    A scipy sparse matrix stays sparse (CSR, float64): it is first put in canonical form (entries stored
    twice for one column are summed — a row storing one column m times has norm m, not √m),
    then its stored values are scaled row by row.
    """
    if issparse(Z):
        return _clip_csr(Z, 1.0)
    Z = np.asarray(Z, dtype=np.float64)
    if Z.ndim != 2:
        raise ValueError(f"rows must be a 2-D array, got shape {Z.shape}")
    # One pass for the norms, and a copy only if a row is outside the ball. A NaN or ±∞ entry makes its
    # row's norm NaN or ∞ (a sum of squares): such rows are refused, as checking every entry would, in
    # 1/d of the work; a finite row whose norm overflows float64 is clipped overflow-free (never refused:
    # a refusal would reveal it), like :func:`clip_rows`.
    # The ball is the float64 one: the computed norm of a d-vector is within (d/2 + 2)·2⁻⁵³ (relative)
    # of the exact norm of the stored values, so rows are kept only below ``target`` and scaled to it,
    # and every row handed on has an EXACT norm ≤ 1 (not just a computed one).
    target = 1.0 - (Z.shape[1] + 16) * 2.0**-52
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", Z, Z))
    unbounded = ~np.isfinite(norms)
    if unbounded.any():
        _require_finite(Z[unbounded], "rows to clip")
    over = unbounded | (norms > target)
    if not over.any():
        return Z
    factors = np.ones(Z.shape[0])
    factors[over] = _clip_factors(np.max(np.abs(Z[over]), axis=1, initial=0.0), Z[over], target)
    return Z * factors[:, None]


def class_sums(Z, labels, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact per-class sums (K, k) and counts (K,) of the rows clipped to the unit ball — no noise.

    The rows are clipped HERE, so the sums of any number of calls (one per chunk of the data, or per
    partition on a cluster) are the sums of unit-ball rows and :func:`release_class_sums` of their
    total has the sensitivity it states. ``labels`` are indices into a *public* label set of size
    ``num_classes`` (an index outside ``0..num_classes-1`` is an error). Sparse rows stay sparse; the
    sums are one matrix product with the one-hot label matrix.
    """
    Z = _unit_ball_rows(Z)
    return _sums_by_class(Z, _public_label_indices(labels, Z.shape[0], num_classes), num_classes)


def _public_label_indices(labels, n: int, num_classes: int) -> np.ndarray:
    """``labels`` checked to be ``n`` indices into a public label set of size ``num_classes``."""
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"labels has shape {labels.shape}; expected ({n},)")
    if num_classes < 1:
        raise ValueError("the public label set is empty")
    if labels.size and (not np.issubdtype(labels.dtype, np.integer) or labels.min() < 0 or labels.max() >= num_classes):
        raise ValueError(f"labels must be indices into the public label set 0..{num_classes - 1}")
    return labels


def _sums_by_class(Z, labels: np.ndarray, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-class sums (K, k) and counts (K,) of already clipped rows: one product with the one-hot labels."""
    import scipy.sparse as sp

    n = labels.size
    onehot = sp.csc_matrix((np.ones(n), labels.astype(np.int64), np.arange(n + 1)), shape=(num_classes, n))
    sums = onehot @ Z
    sums = np.asarray(sums.toarray() if issparse(sums) else sums, dtype=np.float64)
    return sums, np.bincount(labels, minlength=num_classes).astype(np.float64)


def _second_moment(Z) -> np.ndarray:
    """Σxxᵀ (k, k) of already clipped rows, dense float64 (sparse rows are multiplied sparse)."""
    second = Z.T @ Z
    return np.asarray(second.toarray() if issparse(second) else second, dtype=np.float64)


def _mirrored_upper(values: np.ndarray, k: int) -> np.ndarray:
    """The symmetric (k, k) matrix whose upper triangle (diagonal included, row-major) is ``values``."""
    out = np.zeros((k, k))
    out[np.triu_indices(k)] = values
    return out + np.triu(out, 1).T


def release_class_sums(
    sums, counts, *, sigma: float, relation: accounting.Relation, noise: NoiseSource
) -> ClassStatistics:
    """Release per-class sums and counts made by :func:`class_sums` (summed over chunks) as ONE Gaussian.

    The joint vector (S_1..S_K, c_1..c_K) of unit-ball rows has sensitivity
    ``CLASS_STATISTICS_SENSITIVITY[relation]`` (2 replace-one, √2 add/remove) whatever n is; the
    release is one Gaussian mechanism with noise multiplier σ/Δ (the event returned). The bound holds
    only for sums that :func:`class_sums` produced (it clips every row): callers never pass other sums.
    """
    if relation not in CLASS_STATISTICS_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(CLASS_STATISTICS_SENSITIVITY)}, got {relation!r}")
    sums = np.asarray(sums, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    if sums.ndim != 2 or counts.shape != (sums.shape[0],):
        raise ValueError(f"sums (K, k) and counts (K,) do not match: {sums.shape}, {counts.shape}")
    num_classes, k = sums.shape
    joint = np.concatenate([sums.ravel(), counts])
    out = gaussian(joint, sigma=sigma, sensitivity=CLASS_STATISTICS_SENSITIVITY[relation], noise=noise)
    return ClassStatistics(out.value[: num_classes * k].reshape(num_classes, k), out.value[num_classes * k :], out.event)


def class_statistics(
    Z, labels, num_classes: int, *, sigma: float, relation: accounting.Relation, noise: NoiseSource
) -> ClassStatistics:
    """Release per-class sums and counts of rows clipped to the unit ball as ONE Gaussian.

    ``labels`` are indices into a *public* label set of size ``num_classes`` (never inferred from
    the data: a label outside ``0..num_classes-1`` is an error). Each row is clipped to ℓ2 norm 1
    here, so the joint vector (S_1..S_K, c_1..c_K) has sensitivity
    ``CLASS_STATISTICS_SENSITIVITY[relation]`` (2 replace-one, √2 add/remove) whatever n is; the
    release is one Gaussian mechanism with noise multiplier σ/Δ (the event returned). Labels are
    covered by the same release: no randomized response is needed. The same as
    :func:`release_class_sums` of :func:`class_sums` (the streaming path sums chunks in between).
    """
    if relation not in CLASS_STATISTICS_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(CLASS_STATISTICS_SENSITIVITY)}, got {relation!r}")
    sums, counts = class_sums(Z, labels, num_classes)
    return release_class_sums(sums, counts, sigma=sigma, relation=relation, noise=noise)


def moment_sums(Z) -> tuple[float, np.ndarray, np.ndarray]:
    """Exact count, sum (k,) and second moment Σxxᵀ (k, k) of the rows clipped to the unit ball — no noise.

    Rows are clipped HERE, so the totals of several calls (chunks, partitions) are moments of
    unit-ball rows and :func:`release_moment_sums` of them has the sensitivity it states.
    """
    Z = _unit_ball_rows(Z)
    return float(Z.shape[0]), np.asarray(Z.sum(axis=0), dtype=np.float64).ravel(), _second_moment(Z)


def release_moment_sums(count: float, total, second, *, sigma: float, relation: accounting.Relation,
                        noise: NoiseSource) -> MomentStatistics:
    """Release moments made by :func:`moment_sums` (summed over chunks) as ONE Gaussian.

    The joint vector (n, Σx, upper triangle of Σxxᵀ) has sensitivity
    ``MOMENT_STATISTICS_SENSITIVITY[relation]`` (√6 replace-one, √3 add/remove) for unit-ball rows,
    which only :func:`moment_sums` guarantees. The noisy second moment is symmetric (upper triangle
    drawn once and mirrored, as in "Analyze Gauss", Dwork, Talwar, Thakurta & Zhang, STOC 2014).
    """
    if relation not in MOMENT_STATISTICS_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(MOMENT_STATISTICS_SENSITIVITY)}, got {relation!r}")
    total = np.asarray(total, dtype=np.float64)
    second = np.asarray(second, dtype=np.float64)
    k = total.shape[0]
    if second.shape != (k, k):
        raise ValueError(f"second moment has shape {second.shape}; expected ({k}, {k})")
    iu = np.triu_indices(k)
    joint = np.concatenate([[float(count)], total, second[iu]])
    out = gaussian(joint, sigma=sigma, sensitivity=MOMENT_STATISTICS_SENSITIVITY[relation], noise=noise)
    return MomentStatistics(float(out.value[0]), out.value[1 : 1 + k], _mirrored_upper(out.value[1 + k :], k), out.event)


def moment_statistics(Z, *, sigma: float, relation: accounting.Relation, noise: NoiseSource) -> MomentStatistics:
    """Release the count, sum and second moment Σxxᵀ of unit-ball rows as ONE Gaussian.

    Rows are clipped to ℓ2 norm 1 here; the joint vector (n, Σx, upper triangle of Σxxᵀ) has
    sensitivity ``MOMENT_STATISTICS_SENSITIVITY[relation]`` (√6 replace-one, √3 add/remove). The
    noisy second moment is symmetric (upper triangle drawn once and mirrored, as in "Analyze Gauss",
    Dwork, Talwar, Thakurta & Zhang, STOC 2014). A mean and covariance follow by post-processing.
    The same as :func:`release_moment_sums` of :func:`moment_sums`.
    """
    if relation not in MOMENT_STATISTICS_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(MOMENT_STATISTICS_SENSITIVITY)}, got {relation!r}")
    return release_moment_sums(*moment_sums(Z), sigma=sigma, relation=relation, noise=noise)


# --- DPOT per-row release (dpot-classstats) -------------------------------------------------


def public_gaussian_matrix(shape: tuple[int, int], scale: float, seed: int) -> np.ndarray:
    """A *public* random matrix with i.i.d. N(0, scale²) entries from ``seed`` (e.g. DPOT's JL matrix).

    Not privacy noise: it is regenerated by the receiver from the released seed. It lives here only
    so that every Gaussian draw of the library is in this module.
    """
    return np.random.default_rng(seed).normal(0.0, scale, size=shape)


def secret_order(n: int, noise: NoiseSource, batch_size: int | None = None, steps: int = 1) -> np.ndarray:
    """Positions of the released rows, drawn from the secret stream (their secrecy is part of the accounting).

    ``batch_size=None``: one uniformly random permutation of ``0..n-1``; otherwise ``steps`` batches
    of ``batch_size`` distinct indices each (sampling without replacement within a batch),
    concatenated. Nothing released may reveal them, so they never come from public randomness.
    """
    gen = _noise_generator(noise)
    if batch_size is None:
        return gen.permutation(n)
    return np.concatenate([gen.choice(n, size=batch_size, replace=False) for _ in range(steps)])
# --- torch / DP-SWD mechanisms (deep) ---
#
# Everything the deep families (dpswd, dpda) draw *secretly* lives here: the Gaussian noise of
# DP-SWD projections and of DP-SGD sums, and the private mini-batch samples whose secrecy the
# accounting's amplification by subsampling assumes (Poisson for DP-SGD, fixed-size without
# replacement for DP-SWD). Public randomness (directions U, source batches, latent codes) is the
# caller's business and comes from the public stream of :func:`random_streams`.


def torch_noise_generator(noise):
    """A torch.Generator for the noise: from a NoiseSource, or an already derived torch.Generator."""
    import torch

    if isinstance(noise, torch.Generator):
        return noise
    if isinstance(noise, NoiseSource):
        return noise.torch_generator()
    raise TypeError(f"noise must be a NoiseSource or a torch.Generator from one, got {type(noise).__name__}")


def secret_subsample(n: int, size: int, noise: NoiseSource) -> np.ndarray:
    """``size`` of ``n`` row indices uniformly without replacement, drawn from the secret stream.

    The sampled-without-replacement accounting (Wang, Balle & Kasiviswanathan 2019) assumes
    the adversary does not know which rows were sampled; a public seed would reveal it.
    """
    if not 1 <= int(size) <= int(n):
        raise ValueError(f"sample size must be in [1, n={n}], got {size}")
    return _noise_generator(noise).choice(int(n), size=int(size), replace=False)


def secret_permutation(n: int, noise: NoiseSource) -> np.ndarray:
    """A uniformly random order of ``n`` rows from the secret stream (released rows carry no index)."""
    return _noise_generator(noise).permutation(int(n))


def poisson_subsample(n: int, rate: float, noise: NoiseSource) -> np.ndarray:
    """Indices of a Poisson sample (each of ``n`` rows independently with probability ``rate``), secret.

    Amplification by Poisson subsampling (Abadi et al. 2016; Mironov, Talwar & Zhang 2019) needs
    the sample, and its size, to stay secret: callers must not keep the realised size.
    """
    if not 0 < rate <= 1:
        raise ValueError(f"sampling rate must be in (0, 1], got {rate}")
    return np.flatnonzero(_noise_generator(noise).random(int(n)) < rate)


def noisy_projections(F, U, *, sigma: float, noise: NoiseSource) -> np.ndarray:
    """DP-SWD's release ``F U + N(0, σ²)`` of already clipped rows F on directions U.

    The caller's plan fixed σ = z·Δ with Δ the Frobenius sensitivity of FU (2R‖U‖op for rows
    clipped to R under replace-one; spec 02). ``sigma = 0`` is the non-private projection.
    """
    P = np.asarray(F, dtype=np.float64) @ np.asarray(U, dtype=np.float64)
    if sigma < 0 or not math.isfinite(sigma):
        raise ValueError(f"sigma must be a finite number ≥ 0, got {sigma}")
    if sigma == 0:
        return P
    _require_finite(P, "the projections to release")
    _observe("noisy_projections", P, sigma, None, "l2")
    return P + _noise_generator(noise).normal(0.0, sigma, size=P.shape)


def torch_gaussian_noise(total, std: float, noise):
    """``total + N(0, std²I)`` for a torch tensor (DP-SGD's noisy clipped sum; Abadi et al. 2016).

    ``noise`` is a :class:`NoiseSource` or a ``torch.Generator`` obtained from one with
    :meth:`NoiseSource.torch_generator` (derive it once per run: deriving costs a draw).
    """
    import torch

    if std < 0 or not math.isfinite(std):
        raise ValueError(f"noise std must be a finite number ≥ 0, got {std}")
    if std == 0:
        return total
    # in the tensor's own dtype (a float64-finite 1e39 is inf in float32); a "meta" tensor holds no values to check or release
    if total.device.type != "meta" and not bool(torch.isfinite(total).all()):
        raise NonFiniteError("the clipped sum to release contains NaN or infinite values; refused before any noise was drawn")
    if total.device.type != "meta":
        _observe("torch_gaussian_noise", total, std, None, "l2")
    g = torch_noise_generator(noise)  # a CPU generator: drawn on the CPU, then moved to the tensor's device
    return total + std * torch.randn(total.shape, generator=g, dtype=total.dtype).to(total.device)


def sliced_histogram(F, U, edges, labels=None, n_classes: int | None = None) -> np.ndarray:
    """Counts of the projections ``F U`` in fixed public bins, per direction: (k, bins) array.

    Each row adds exactly one count to each of the k directions (values outside the public range
    are put in the first/last bin), so under replace-one the ℓ2 sensitivity is sqrt(2k) whatever n
    is, and under add/remove it is sqrt(k).

    With ``labels`` (indices into a *public* label set of size ``n_classes``) the counts are kept
    per class, a (n_classes, k, bins) array: a row still adds one count per direction, to its own
    class's histograms, so a replacement (whatever its old and new label) changes at most two
    counts per direction by one each — the same sqrt(2k) (add/remove: sqrt(k)).
    """
    P = np.asarray(F, dtype=np.float64) @ np.asarray(U, dtype=np.float64)
    edges = np.asarray(edges, dtype=np.float64)
    nb = edges.size - 1
    idx = np.clip(np.searchsorted(edges, P, side="right") - 1, 0, nb - 1)
    k = P.shape[1]
    flat = idx + nb * np.arange(k)[None, :]
    if labels is None:
        return np.bincount(flat.ravel(), minlength=k * nb).reshape(k, nb).astype(np.float64)
    labels = np.asarray(labels)
    if n_classes is None or labels.shape != (P.shape[0],) or labels.size and not (0 <= labels.min() and labels.max() < n_classes):
        raise ValueError("labels must be one index per row into the public label set of size n_classes")
    flat = flat + (k * nb) * labels.astype(np.int64)[:, None]
    return np.bincount(flat.ravel(), minlength=n_classes * k * nb).reshape(n_classes, k, nb).astype(np.float64)


def sliced_histogram_release(F, U, edges, *, sigma: float, noise: NoiseSource, labels=None,
                             n_classes: int | None = None) -> Noised:
    """One Gaussian release of :func:`sliced_histogram` (replace-one, ℓ2 sensitivity sqrt(2k)),
    per class when ``labels`` are given (same sensitivity; the label set is public).

    The event is ``GaussianDpEvent(σ / sqrt(2k))``; σ comes from the caller's plan. Everything
    computed from it afterwards (training a generator against the marginals) is post-processing.
    """
    counts = sliced_histogram(F, U, edges, labels, n_classes)
    return release_sliced_counts(counts, sigma=sigma, noise=noise)


def release_sliced_counts(counts, *, sigma: float, noise: NoiseSource) -> Noised:
    """One Gaussian release of histogram counts summed from :func:`sliced_histogram` calls (chunks).

    Every row adds exactly one count per direction whichever chunk it is in, so the total over
    chunks has the sensitivity of one call: sqrt(2k) replace-one, k = ``counts.shape[-2]``.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim not in (2, 3):
        raise ValueError(f"counts must be (k, bins) or (classes, k, bins), got shape {counts.shape}")
    return gaussian(counts, sigma=sigma, sensitivity=math.sqrt(2.0 * counts.shape[-2]), noise=noise)


def unbias_randomized_response_counts(noisy_labels, num_classes: int, epsilon: float) -> np.ndarray:
    """Unbiased estimate of the true class counts from randomized-response labels (post-processing)."""
    check_epsilon(epsilon)
    n = len(noisy_labels)
    observed = np.bincount(np.asarray(noisy_labels, dtype=np.int64), minlength=num_classes).astype(float)
    keep = math.exp(epsilon) / (math.exp(epsilon) + num_classes - 1)
    other = (1.0 - keep) / (num_classes - 1)
    return (observed - n * other) / (keep - other)


# --- class sums, counts and pooled second moment (the sound default's discriminant design) ----------


@dataclasses.dataclass(frozen=True)
class ClassMomentStatistics:
    """Noisy per-class sums (K, k), counts (K,) and pooled second moment Σxxᵀ (k, k), and the event."""

    sums: np.ndarray
    counts: np.ndarray
    second: np.ndarray
    event: "dp_accounting.DpEvent"


def class_moment_sums(Z, labels, num_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact per-class sums (K, k), counts (K,) and pooled second moment Σxxᵀ (k, k) of unit-ball rows — no noise.

    Every row is checked finite and clipped to ℓ2 norm 1 HERE, so the totals of any number of calls
    (chunks, partitions) are sums of unit-ball rows and :func:`release_class_moment_sums` of them has
    the sensitivity it states. ``labels`` index a *public* label set of size ``num_classes``.
    """
    Z = _unit_ball_rows(Z)
    sums, counts = _sums_by_class(Z, _public_label_indices(labels, Z.shape[0], num_classes), num_classes)
    return sums, counts, _second_moment(Z)


def release_class_moment_sums(
    sums, counts, second, *, sigma: float, relation: accounting.Relation, noise: NoiseSource
) -> ClassMomentStatistics:
    """Release statistics made by :func:`class_moment_sums` (summed over chunks) as ONE Gaussian.

    The joint vector (S_1..S_K, c_1..c_K, upper triangle of Σxxᵀ with its diagonal) of unit-ball rows
    has ℓ2 sensitivity ``CLASS_MOMENT_SENSITIVITY[relation]`` (√6 replace-one, √3 add/remove; proof
    beside the constant) whatever n is — a bound only :func:`class_moment_sums` guarantees (it clips
    every row): callers never pass other sums. One Gaussian mechanism of multiplier σ/Δ (the event
    returned); the noisy second moment is the drawn upper triangle mirrored (symmetric).
    """
    if relation not in CLASS_MOMENT_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(CLASS_MOMENT_SENSITIVITY)}, got {relation!r}")
    sums = np.asarray(sums, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    second = np.asarray(second, dtype=np.float64)
    if sums.ndim != 2 or counts.shape != (sums.shape[0],) or second.shape != (sums.shape[1],) * 2:
        raise ValueError(f"sums (K, k), counts (K,) and second (k, k) do not match: {sums.shape}, {counts.shape}, {second.shape}")
    num_classes, k = sums.shape
    joint = np.concatenate([sums.ravel(), counts, second[np.triu_indices(k)]])
    out = gaussian(joint, sigma=sigma, sensitivity=CLASS_MOMENT_SENSITIVITY[relation], noise=noise)
    m = num_classes * k
    return ClassMomentStatistics(out.value[:m].reshape(num_classes, k), out.value[m : m + num_classes],
                                 _mirrored_upper(out.value[m + num_classes :], k), out.event)


def class_moment_statistics(
    Z, labels, num_classes: int, *, sigma: float, relation: accounting.Relation, noise: NoiseSource
) -> ClassMomentStatistics:
    """Release per-class sums S_c, counts c_c and the pooled second moment Σxxᵀ as ONE Gaussian.

    The sufficient statistics of LDA and of ridge regression on one-hot labels (sufficient-statistics
    perturbation; Dwork, Talwar, Thakurta & Zhang 2014, Wang 2018). Rows are clipped to ℓ2 norm 1
    here and ``labels`` index a *public* label set of size ``num_classes``, so the joint vector
    (S_1..S_K, c_1..c_K, upper triangle of Σxxᵀ with its diagonal) has ℓ2 sensitivity
    ``CLASS_MOMENT_SENSITIVITY[relation]`` (√6 replace-one, √3 add/remove; proof beside the constant)
    whatever n is. The same as :func:`release_class_moment_sums` of :func:`class_moment_sums` (the
    streaming path, :class:`dpadapt.stream.ClassMomentSums`, sums chunks in between).
    """
    if relation not in CLASS_MOMENT_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(CLASS_MOMENT_SENSITIVITY)}, got {relation!r}")
    return release_class_moment_sums(*class_moment_sums(Z, labels, num_classes), sigma=sigma, relation=relation, noise=noise)


# --- per-class histograms of a public score (the sound default's second, calibrating release) ----------

#: ℓ2 sensitivity of the (K, B) table of counts of rows by (class, bin of a public score). Every row adds
#: exactly 1 to exactly one cell, whatever its values (the bin of any finite or clipped score is one of B,
#: its label one of the public K). Replace-one: the old row's cell loses 1 and the new row's cell gains 1 —
#: ℓ1 ≤ 2, ℓ2 ≤ √2, attained whenever the two cells differ (0 when they coincide). Add/remove: one cell by 1.
SCORE_HISTOGRAM_SENSITIVITY = {"replace_one": math.sqrt(2.0), "add_remove": 1.0}


def score_histogram(bins, labels, num_classes: int, num_bins: int) -> np.ndarray:
    """Exact counts (K, B) of rows by (label, bin) — no noise. ``bins``: one index per row into the public
    bins ``0..B-1``; ``labels``: one index per row into the public label set ``0..K-1`` (anything else refused)."""
    bins = np.asarray(bins)
    labels = _public_label_indices(labels, bins.shape[0] if bins.ndim == 1 else -1, num_classes)
    if num_bins < 1 or (bins.size and (not np.issubdtype(bins.dtype, np.integer) or bins.min() < 0 or bins.max() >= num_bins)):
        raise ValueError(f"bins must be indices into the public bins 0..{num_bins - 1}")
    flat = labels.astype(np.int64) * num_bins + bins.astype(np.int64)
    return np.bincount(flat, minlength=num_classes * num_bins).reshape(num_classes, num_bins).astype(np.float64)


def release_score_histogram(counts, *, sigma: float, relation: accounting.Relation, noise: NoiseSource) -> Noised:
    """ONE Gaussian release of a (K, B) table made by :func:`score_histogram` (summed over chunks or sources' rows).

    Every row adds one count to one cell, so the table has ℓ2 sensitivity ``SCORE_HISTOGRAM_SENSITIVITY[relation]``
    (√2 replace-one, 1 add/remove; proof beside the constant) whatever n is. The noise is the vetted discrete
    Gaussian on a public lattice (:func:`vetted_gaussian`); the event is ``GaussianDpEvent(σ/Δ)``.
    """
    if relation not in SCORE_HISTOGRAM_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(SCORE_HISTOGRAM_SENSITIVITY)}, got {relation!r}")
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2:
        raise ValueError(f"counts must be a (classes, bins) table, got shape {counts.shape}")
    return gaussian(counts, sigma=sigma, sensitivity=SCORE_HISTOGRAM_SENSITIVITY[relation], noise=noise)


# --- the candidate histogram (the selection design for tiny sources) ---------------------------------

#: ℓ1 sensitivity of the (K, M) table of counts of rows by (label, nearest public candidate)
#: (:func:`score_histogram` with the candidate index as the bin). Add/remove: one row adds or removes one count in
#: one cell, 1. Replace-one: one count leaves a cell and one enters another (or the same), ≤ 2 — attained whenever
#: the label or the nearest candidate changes.
CANDIDATE_HISTOGRAM_SENSITIVITY = {"replace_one": 2.0, "add_remove": 1.0}


def release_candidate_histogram(counts, *, epsilon: float, relation: accounting.Relation, noise: NoiseSource) -> Noised:
    """ONE Laplace release of a (K, M) table of counts by (label, nearest public candidate): ε-DP (δ = 0).

    Every row adds one count to one cell, so the table has ℓ1 sensitivity Δ₁ =
    ``CANDIDATE_HISTOGRAM_SENSITIVITY[relation]`` (2 replace-one, 1 add/remove) whatever n, d and the row values;
    noise ``DLap(Δ₁/ε)`` on every cell from the vetted sampler (:func:`vetted_laplace`, exact discrete Laplace,
    Canonne, Kamath & Steinke 2020) is ε-DP (the Laplace mechanism, Dwork, McSherry, Nissim & Smith 2006). Report-
    noisy-max of each class's row (Dwork & Roth 2014, Claim 3.9) and any matching of classes to candidates are
    post-processing of this one release: the selection costs ε whatever the number of candidates or the dimension.
    The event is ``LaplaceDpEvent(1/ε)`` (the noise scale over Δ₁).
    """
    if relation not in CANDIDATE_HISTOGRAM_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(CANDIDATE_HISTOGRAM_SENSITIVITY)}, got {relation!r}")
    check_epsilon(epsilon)
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2:
        raise ValueError(f"counts must be a (classes, candidates) table, got shape {counts.shape}")
    sensitivity = CANDIDATE_HISTOGRAM_SENSITIVITY[relation]
    scale = sensitivity / float(epsilon)
    _require_finite(counts, "the candidate counts")
    _observe("laplace", counts, scale, sensitivity, "l1")
    noisy = vetted_laplace(counts, scale, noise, sensitivity=sensitivity)
    return Noised(noisy, accounting.laplace_event(1.0 / float(epsilon)))


# --- the smallest eigenvalue of the second moment (AdaSSP's adaptive ridge, Wang 2018) ----------

#: ℓ2 sensitivity of λ_min(Σxxᵀ) for rows with norm ≤ 1, both relations. Add/remove changes the matrix by
#: ±xxᵀ, a PSD rank-one matrix of spectral norm ‖x‖² ≤ 1, so by Weyl's inequality λ_min moves by at most 1.
#: Replace-one (x → x′): λ_min(M − xxᵀ) ∈ [λ_min(M) − 1, λ_min(M)] and adding x′x′ᵀ moves it up by [0, 1],
#: so |Δλ_min| ≤ 1 — attained (base row e₁; e₀ → e₁ turns I into diag(0, 2)).
MIN_EIGENVALUE_SENSITIVITY = {"replace_one": 1.0, "add_remove": 1.0}


def min_eigenvalue(second) -> float:
    """λ_min of a symmetric second moment Σxxᵀ (k, k), exact (the smallest eigenvalue only) — no noise."""
    import scipy.linalg

    second = np.asarray(second, dtype=np.float64)
    if second.ndim != 2 or second.shape[0] != second.shape[1] or second.shape[0] == 0:
        raise ValueError(f"the second moment must be a non-empty square matrix, got shape {second.shape}")
    _require_finite(second, "the second moment")
    k = second.shape[0]
    return float(scipy.linalg.eigh((second + second.T) / 2.0, eigvals_only=True, subset_by_index=[0, 0])[0]) if k > 1 \
        else float(second[0, 0])


def release_min_eigenvalue(second, *, sigma: float, relation: accounting.Relation, noise: NoiseSource) -> Noised:
    """Release λ_min of a second moment made by :func:`class_moment_sums` / :func:`moment_sums` as ONE Gaussian.

    For unit-ball rows (which only those functions guarantee: callers never pass another matrix) λ_min(Σxxᵀ)
    has sensitivity ``MIN_EIGENVALUE_SENSITIVITY[relation]`` = 1 (Weyl; proof beside the constant). The
    privately estimated smallest eigenvalue sets AdaSSP's ridge (Wang, NeurIPS 2018, Alg. 2).
    """
    if relation not in MIN_EIGENVALUE_SENSITIVITY:
        raise ValueError(f"relation must be one of {tuple(MIN_EIGENVALUE_SENSITIVITY)}, got {relation!r}")
    return gaussian(np.array([min_eigenvalue(second)]), sigma=sigma, sensitivity=MIN_EIGENVALUE_SENSITIVITY[relation],
                    noise=noise)
