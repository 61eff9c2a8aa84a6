"""Input validation shared by every method: clear errors for inputs that would break a guarantee or a solver."""

from __future__ import annotations

import math
import sys
import warnings

import numpy as np


def issparse(X) -> bool:
    """``scipy.sparse.issparse(X)`` without importing SciPy (~0.2 s): a sparse matrix or array exists only once
    ``scipy.sparse`` has been imported, so until then nothing is sparse."""
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


class PrivacyWarning(UserWarning):
    """A setting that is allowed but weakens the meaning of the guarantee (e.g. δ ≥ 1/n)."""


def check_epsilon(eps: float, name: str = "epsilon", allow_inf: bool = False) -> float:
    """Validate a privacy parameter ε > 0 (``inf`` only where non-private runs are meaningful)."""
    try:
        value = float(eps)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {eps!r}") from None
    if math.isnan(value) or value <= 0:
        raise ValueError(f"{name} must be > 0, got {eps!r}")
    if math.isinf(value) and not allow_inf:
        raise ValueError(f"{name} must be finite (use the non-private baseline for ε = ∞)")
    return value


def check_delta(delta: float, n: int | None = None, name: str = "delta", *, sound: bool | None = None) -> float:
    """Validate δ ∈ (0, 1) and compare it with 1/n for a dataset of public size ``n``.

    δ ≥ 1/n allows publishing one whole record in the clear. With ``sound=True`` (a sound-mode
    guarantee) it is refused with a ``ValueError``; otherwise (``sound`` not given, or paper mode)
    it only raises a :class:`PrivacyWarning`.
    """
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {delta!r}") from None
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {delta!r}")
    if n is not None and n > 0 and value >= 1.0 / n:
        if sound:
            raise ValueError(
                f"{name}={value:g} is ≥ 1/n = {1.0 / n:g}: a mechanism that publishes one random record "
                "in the clear satisfies such a guarantee; use δ ≤ 1/(10 n)"
            )
        warnings.warn(
            f"{name}={value:g} is ≥ 1/n = {1.0 / n:g}: a mechanism that publishes one random record "
            "in the clear satisfies this guarantee. Use δ ≪ 1/n.",
            PrivacyWarning,
            stacklevel=2,
        )
    return value


def check_features(X, name: str = "X", allow_sparse: bool = False, min_rows: int = 1) -> np.ndarray:
    """Return X as a 2-D float array (or CSR when ``allow_sparse``), rejecting NaN/inf and empty input."""
    if X is None:
        raise ValueError(f"{name} is None")
    if issparse(X):
        if not allow_sparse:
            X = X.toarray()
        else:
            import scipy.sparse as sp

            X = sp.csr_matrix(X, dtype=np.float64)
            if not X.has_canonical_format:  # one column stored twice in a row: sum it (a copy; the caller's is kept)
                X = X.copy()
                X.sum_duplicates()
            values = X.data
    if not issparse(X):
        X = np.asarray(X)
        if X.dtype == object:
            raise TypeError(f"{name} must be numeric, got dtype object")
        X = X.astype(np.float64, copy=False)
        if X.ndim == 1:
            raise ValueError(f"{name} must be 2-D (n_samples, n_features); got a 1-D array, reshape it")
        if X.ndim != 2:
            raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
        values = X
    if X.shape[0] < min_rows:
        raise ValueError(f"{name} is empty: {X.shape[0]} rows (need at least {min_rows}); is a domain missing?")
    if X.shape[1] == 0:
        raise ValueError(f"{name} has no features")
    if not np.all(np.isfinite(values)):
        bad = int(np.size(values) - np.isfinite(values).sum())
        if issparse(X):
            coo = X.tocoo()
            k = int(np.flatnonzero(~np.isfinite(coo.data))[0])
            i, j, v = int(coo.row[k]), int(coo.col[k]), coo.data[k]
        else:
            i, j = (int(t) for t in np.argwhere(~np.isfinite(X))[0])
            v = X[i, j]
        raise ValueError(f"{name} contains {bad} NaN or infinite values (the first at row {i}, column {j}: {v}); "
                         "impute or drop them first")
    return X


def check_finite_in(X, dtype, name: str = "X") -> None:
    """Refuse ``X`` (dense array or scipy sparse) if any value is not finite once cast to ``dtype``,
    the dtype the computation runs in: a row finite in float64 (1e39) is ∞ in float32, and a clip or
    a norm bound computed on it is NaN. Call it on the whole dataset, before any secret sampling or noise."""
    values = X.data if issparse(X) else X
    with np.errstate(over="ignore"):
        cast = np.asarray(values).astype(dtype)
    if not np.all(np.isfinite(cast)):
        raise ValueError(
            f"{name} has values that are NaN or overflow {np.dtype(dtype).name} (the dtype the computation runs in); "
            "rescale the features"
        )


def check_fitted_features(estimator, X, fitted: str | None = None, *, allow_sparse: bool = False):
    """``X`` checked (:func:`check_features`) for a fitted ``estimator``: as many features as it was fitted
    on (``n_features_in_``); with ``fitted``, that attribute must exist (scikit-learn's ``check_is_fitted``)."""
    if fitted is not None:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(estimator, fitted)
    X = check_features(X, allow_sparse=allow_sparse)
    if X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, the model was fitted with {estimator.n_features_in_}")
    return X


def check_labels(y, n: int, name: str = "y", min_classes: int = 2, *, classes=None) -> np.ndarray:
    """Return integer labels of length n.

    With a public label set ``classes`` every label must belong to it, and any number of observed
    classes (one included) is valid: refusing a one-class source would make the refusal itself
    depend on one record (δ = 1 for a record alone in its class). Without ``classes`` (a
    non-private fit reading the label set off the labels) at least ``min_classes`` must be present.
    """
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.ravel()
    if y.shape[0] != n:
        raise ValueError(f"{name} has {y.shape[0]} labels for {n} rows")
    if y.size and y.dtype.kind not in "iub" and not np.all(np.isfinite(y.astype(float))):
        raise ValueError(f"{name} contains NaN")
    if y.size and y.dtype.kind not in "iub" and not np.all(np.equal(np.mod(y.astype(float), 1), 0)):
        raise ValueError(f"{name} must hold integer class labels")
    y = y.astype(np.int64)
    if classes is not None:
        public = np.asarray(list(classes)).ravel()
        outside = np.setdiff1d(np.unique(y), public)
        if outside.size:
            raise ValueError(f"{name}: label(s) {outside[:5].tolist()} are not in the public label set classes={public.tolist()}")
        return y
    observed = np.unique(y)
    if observed.size < min_classes:
        raise ValueError(
            f"{name} has {observed.size} class(es) ({observed.tolist()}); at least {min_classes} are needed to train a "
            "classifier (give the public label set, classes=, if a source may hold one class)"
        )
    return y


def check_untrusted_array(a, name: str, shape: tuple[int | None, ...] | None = None) -> np.ndarray:
    """An array received from the other party, as a finite float64 array of the expected ``shape``.

    ``None`` in ``shape`` matches any length. Everything the other party sends is untrusted input:
    a non-numeric, wrongly shaped or non-finite array is refused with one line, before it can touch
    private rows.
    """
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} from the other party is not a numeric array") from None
    if shape is not None and (arr.ndim != len(shape) or any(e is not None and e != g for e, g in zip(shape, arr.shape))):
        want = "(" + ", ".join("any" if e is None else str(e) for e in shape) + ")"
        raise ValueError(f"{name} from the other party has shape {arr.shape}, expected {want}; refused")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} from the other party contains NaN or infinite values; refused")
    return arr


#: Probability with which :func:`check_plausible_statistics` refuses an honest release (union bound over its checks).
HONEST_REFUSAL_PROBABILITY = 1e-9

#: Largest magnitude :func:`check_plausible_statistics` accepts for a released entry: its square and the sums of
#: its squares over any array a receiver forms stay finite in float64 (the dtype of the computation). An honest
#: release reaches it only with σ or n above 1e149.
MAX_PLAUSIBLE_MAGNITUDE = 1e150


def check_plausible_statistics(
    sums,
    counts,
    *,
    sigma: float,
    n: float | None = None,
    second=None,
    row_norm: float = 1.0,
    false_refusal: float = HONEST_REFUSAL_PROBABILITY,
    name: str = "class statistics",
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Noisy per-class statistics from the other party, refused unless the declared mechanism could produce them.

    The declared mechanism (:func:`dpadapt.privacy.mechanisms.class_statistics` /
    :func:`~dpadapt.privacy.mechanisms.class_moment_statistics` and their streaming forms) releases, for n
    rows of ℓ2 norm ≤ R (``row_norm``) with labels in a public set of K classes, ``S̃_c = S_c + N`` (k-dim),
    ``c̃_c = c_c + N`` and optionally ``M̃ = Σ xxᵀ + N`` (symmetric, upper triangle drawn), every noise entry
    N(0, σ²) independent. Exactly, 0 ≤ c_c ≤ n, Σ_c c_c = n, ‖S_c‖ ≤ R·c_c, |M_ij| ≤ R²n and 0 ≤ tr M ≤ R²n.
    With ``t = √(2 ln(m / p))`` for the ``m`` checks below and ``p = false_refusal``, each check fails for an
    honest release with probability ≤ p/m (Gaussian tail P(|Z| > t) ≤ e^{−t²/2} for t ≥ 1; for the norm of a
    k-dim Gaussian, P(‖N‖ > σ(√k + t)) ≤ e^{−t²/2} by Gaussian concentration), so an honest release is
    refused with probability ≤ p (union bound). The checks:

    * every entry finite and of magnitude ≤ :data:`MAX_PLAUSIBLE_MAGNITUDE` (computations stay finite in float64);
    * ``n`` unknown (add/remove: it is not released) is bounded by ``n ≤ Σ c̃_c + tσ√K``; ``n`` known
      (replace-one: public) needs ``|Σ c̃_c − n| ≤ tσ√K``;
    * each count ``−tσ ≤ c̃_c ≤ n + tσ``;
    * each sum ``‖S̃_c‖ ≤ R·min(n, c̃_c + tσ) + σ(√k + t)``;
    * with ``second``: symmetric, ``|M̃_ij| ≤ R²n + tσ`` and ``−tσ√k ≤ tr M̃ ≤ R²n + tσ√k``.

    ``sigma`` is the σ the release declares (check it against its Guarantee with
    :func:`check_declared_sigma`); σ = 0 (a non-private release) makes every bound exact (up to 1e-9·n
    for rounding). Returns ``(sums, counts, second)`` as float64 arrays; raises a one-line ``ValueError``.
    Used by every receiver of class statistics / class moments (classstats, dpot, sound, prima).
    """
    sums = check_untrusted_array(sums, f"the released {name} 'sums'", (None, None))
    K, k = sums.shape
    counts = check_untrusted_array(counts, f"the released {name} 'counts'", (K,))
    if second is not None:
        second = check_untrusted_array(second, f"the released {name} 'second'", (k, k))
    sigma = float(sigma)
    if not (math.isfinite(sigma) and sigma >= 0.0):
        raise ValueError(f"the released {name} declare σ = {sigma!r}: not a finite σ ≥ 0; refused")
    arrays = [sums, counts] + ([second] if second is not None else [])
    biggest = max(float(np.max(np.abs(a))) if a.size else 0.0 for a in arrays)
    if biggest > MAX_PLAUSIBLE_MAGNITUDE or sigma > MAX_PLAUSIBLE_MAGNITUDE:
        raise ValueError(f"the released {name} hold a value of magnitude {max(biggest, sigma):.3g} > "
                         f"{MAX_PLAUSIBLE_MAGNITUDE:g}: no honest release of unit-ball rows does; refused")
    m = 2 * K + 1 + ((k * (k + 1)) // 2 + 2 if second is not None else 0)
    t = math.sqrt(2.0 * math.log(max(m / false_refusal, math.e)))
    total = float(np.sum(counts))
    spread = t * sigma * math.sqrt(K)
    if n is None:
        n = max(total + spread, 0.0)
    elif abs(total - float(n)) > spread + 1e-9 * max(float(n), 1.0):
        _implausible(name, f"the counts add up to {total:.6g}, not n = {float(n):.6g} ± {spread:.3g}", false_refusal)
    n = float(n)
    slack = t * sigma + 1e-9 * max(n, 1.0)
    bad = np.flatnonzero((counts < -slack) | (counts > n + slack))
    if bad.size:
        c = int(bad[0])
        _implausible(name, f"class {c}'s count {counts[c]:.6g} is outside [{-slack:.3g}, {n + slack:.6g}]", false_refusal)
    R = float(row_norm)
    norms = np.linalg.norm(sums, axis=1)
    limit = R * np.minimum(n, counts + slack) + sigma * (math.sqrt(k) + t) + 1e-9 * max(R * n, 1.0)
    bad = np.flatnonzero(norms > limit)
    if bad.size:
        c = int(bad[0])
        _implausible(name, f"class {c}'s sum has norm {norms[c]:.6g} > {limit[c]:.6g} (its count and σ allow no more)",
                     false_refusal)
    if second is not None:
        if not np.allclose(second, second.T, rtol=1e-9, atol=1e-12):
            raise ValueError(f"the released {name} 'second' is not symmetric; refused")
        tol = 1e-9 * max(R * R * n, 1.0)
        worst = float(np.max(np.abs(second))) if second.size else 0.0
        if worst > R * R * n + slack:
            _implausible(name, f"an entry of the second moment is {worst:.6g} > R²n + tσ = {R * R * n + slack:.6g}", false_refusal)
        trace, trace_slack = float(np.trace(second)), t * sigma * math.sqrt(k) + tol
        if not -trace_slack <= trace <= R * R * n + trace_slack:
            _implausible(name, f"the second moment's trace {trace:.6g} is outside [{-trace_slack:.3g}, "
                               f"{R * R * n + trace_slack:.6g}]", false_refusal)
    return sums, counts, second


def check_released_size(params, key: str = "n_source") -> float | None:
    """The public size n a replace-one release states under ``key`` (finite, ≥ 1), or None when it states none
    (add/remove: n is private and not released). Refused with one line when impossible."""
    if params.get(key) is None:
        return None
    n = float(check_untrusted_array(params[key], f"the released {key!r}", ()))
    if n < 1:
        raise ValueError(f"the released {key!r} = {n:g} is impossible; refused")
    return n


def check_class_statistics(release, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, float]:
    """The noisy class sums (K, k) and counts (K,) of a class-statistics ``release`` from the other party, as
    untrusted input: finite float64 of the planned ``shape``, a σ equal to its Guarantee's
    (:func:`check_declared_sigma`) and values its declared mechanism can produce from the n rows it states
    (:func:`check_plausible_statistics`). Returns (sums, counts, σ); raises ``ValueError`` (one line) otherwise."""
    params = release.params
    sums = check_untrusted_array(release["sums"], "the released 'sums'", shape)
    counts = check_untrusted_array(release["counts"], "the released 'counts'", shape[:1])
    sigma = check_declared_sigma(params.get("sigma") or 0.0, release.guarantee)
    sums, counts, _ = check_plausible_statistics(sums, counts, sigma=sigma, n=check_released_size(params))
    return sums, counts, sigma


def _implausible(name: str, what: str, false_refusal: float) -> None:
    raise ValueError(f"the released {name} cannot come from the declared mechanism: {what} (an honest release is "
                     f"refused with probability ≤ {false_refusal:g}); refused")


def check_declared_sigma(sigma, guarantee) -> float:
    """The σ a class-statistics release declares, checked against its own Guarantee (one Gaussian release).

    A non-private release (ε = ∞) must declare σ = 0; a private one the σ of its Guarantee
    (``details["sigma"]``, equal to ``noise_multiplier × sensitivity``) within 1e-9 relative. A forged σ
    would widen the bounds of :func:`check_plausible_statistics`; refused with one line.
    """
    try:
        sigma = float(sigma)
    except (TypeError, ValueError):
        raise ValueError(f"the released σ {sigma!r} is not a number; refused") from None
    if math.isinf(guarantee.epsilon):
        expected = 0.0
    else:
        details = guarantee.details
        expected = float(details.get("sigma", math.nan))
        z, sens = details.get("noise_multiplier"), guarantee.sensitivity
        if z is not None and sens is not None and not math.isclose(float(z) * float(sens), expected, rel_tol=1e-9):
            expected = math.nan
    if not (math.isfinite(sigma) and math.isclose(sigma, expected, rel_tol=1e-9, abs_tol=0.0 if expected else 1e-300)):
        raise ValueError(f"the release declares σ = {sigma:.6g}, its Guarantee σ = {expected:.6g}; refused")
    return sigma


#: Tolerance on ‖CᵀC − I‖ (max entry, float64) for a received basis: an SVD's orthonormal columns
#: are orthonormal to ~1e-15; the bound of the guarantee tolerates this slack (see :func:`check_basis`).
BASIS_ORTHONORMAL_TOL = 1e-8


def check_basis(mean, components, n_features: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A basis (``mean`` (d,), ``components`` (d, k)) received from the other party, validated.

    The class-statistics theorem maps every row ``x`` (norm ≤ 1 after the public row map) to
    ``(x − mean) C`` and re-normalises it; the computation stays finite and the map stays a
    per-record function of ``x`` only if ``C`` has orthonormal columns (‖CᵀC − I‖ ≤ 1e-8, checked
    in float64, the dtype of the computation) and ``‖mean‖ ≤ 1`` (the mean of unit-norm rows):
    then ‖(x − mean) C‖ ≤ 2 and no entry can overflow. Anything else — non-finite, a huge finite
    entry, a crafted mean, mismatched shapes — is refused with one line before any private row is read.
    """
    components = check_untrusted_array(components, "the basis 'components'", (n_features, None))
    d, k = components.shape
    if not 1 <= k <= d:
        raise ValueError(f"the basis 'components' has shape {components.shape}: need 1 ≤ k ≤ d; refused")
    mean = check_untrusted_array(mean, "the basis 'mean'", (d,))
    with np.errstate(over="ignore", invalid="ignore"):
        gram_error = float(np.max(np.abs(components.T @ components - np.eye(k))))
    if not gram_error <= BASIS_ORTHONORMAL_TOL:
        raise ValueError(f"the basis 'components' do not have orthonormal columns (max |CᵀC − I| = {gram_error:.3g}); refused")
    with np.errstate(over="ignore"):
        mean_norm = float(np.linalg.norm(mean))
    if not mean_norm <= 1.0 + BASIS_ORTHONORMAL_TOL:
        raise ValueError(f"the basis 'mean' has norm {mean_norm:.3g} > 1 (the mean of unit-norm rows); refused")
    return mean, components


def check_same_features(Xs, Xt, names: tuple[str, str] = ("source", "target")) -> None:
    """Both domains must share the feature space."""
    if Xs.shape[1] != Xt.shape[1]:
        raise ValueError(
            f"{names[0]} has {Xs.shape[1]} features but {names[1]} has {Xt.shape[1]}: the domains must share a feature space"
        )


def check_positive(value: float, name: str) -> float:
    value = float(value)
    if not value > 0 or math.isinf(value):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_privacy_mode(mode: str) -> str:
    if mode not in ("sound", "paper"):
        raise ValueError(f"privacy_mode must be 'sound' or 'paper', got {mode!r}")
    return mode


def check_random_state(random_state) -> np.random.Generator:
    """A :class:`numpy.random.Generator` from None / int / Generator (never the legacy global state)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    raise TypeError(f"random_state must be None, an int or a numpy Generator, got {type(random_state).__name__}")


def split_domains(X, y, sample_domain):
    """Split skada-style ``(X, y, sample_domain)`` into source (domain ≥ 0) and target (domain < 0).

    Returns ``Xs, ys, Xt, yt`` where ``yt`` is ``None`` when every target label is −1 (unlabelled).
    """
    if sample_domain is None:
        raise ValueError("sample_domain is required: source rows ≥ 0, target rows < 0 (skada convention)")
    sample_domain = np.asarray(sample_domain)
    n = X.shape[0]
    if sample_domain.shape[0] != n:
        raise ValueError(f"sample_domain has {sample_domain.shape[0]} entries for {n} rows")
    src, tgt = sample_domain >= 0, sample_domain < 0
    if not src.any():
        raise ValueError("no source rows (sample_domain ≥ 0)")
    if not tgt.any():
        raise ValueError("no target rows (sample_domain < 0)")
    y = None if y is None else np.asarray(y)
    ys = None if y is None else y[src]
    yt = None if y is None else y[tgt]
    if yt is not None and np.all(yt == -1):
        yt = None
    return X[src], ys, X[tgt], yt
