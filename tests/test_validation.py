"""Shared input validation: clear errors for bad data and privacy parameters."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from dpadapt.validation import (
    PrivacyWarning,
    check_delta,
    check_epsilon,
    check_features,
    check_labels,
    check_positive,
    check_privacy_mode,
    check_random_state,
    check_same_features,
    split_domains,
)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_inf_rejected(bad):
    X = np.ones((4, 3))
    X[2, 1] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        check_features(X)
    with pytest.raises(ValueError, match="NaN or infinite"):
        check_features(sp.csr_matrix(X), allow_sparse=True)


def test_feature_shapes():
    with pytest.raises(ValueError, match="1-D"):
        check_features(np.ones(5))
    with pytest.raises(ValueError, match="2-D"):
        check_features(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="empty"):
        check_features(np.ones((0, 3)))
    with pytest.raises(ValueError, match="no features"):
        check_features(np.ones((3, 0)))
    with pytest.raises(ValueError, match="None"):
        check_features(None)
    with pytest.raises(TypeError, match="numeric"):
        check_features(np.array([["a", 1]], dtype=object))
    out = check_features([[1, 2], [3, 4]])
    assert out.dtype == np.float64 and out.shape == (2, 2)
    # sparse: kept as CSR when allowed, densified otherwise
    S = sp.random(5, 4, density=0.5, format="coo", random_state=0)
    assert sp.isspmatrix_csr(check_features(S, allow_sparse=True))
    assert isinstance(check_features(S), np.ndarray)


def test_mismatched_feature_dims():
    with pytest.raises(ValueError, match="source has 3 features but target has 4"):
        check_same_features(np.ones((2, 3)), np.ones((2, 4)))
    check_same_features(np.ones((2, 3)), np.ones((5, 3)))


def test_labels():
    with pytest.raises(ValueError, match="1 class"):
        check_labels(np.zeros(5), 5)
    with pytest.raises(ValueError, match="labels for"):
        check_labels(np.array([0, 1]), 3)
    with pytest.raises(ValueError, match="integer"):
        check_labels(np.array([0.5, 1.0]), 2)
    with pytest.raises(ValueError, match="NaN"):
        check_labels(np.array([0.0, np.nan]), 2)
    y = check_labels(np.array([0.0, 1.0, 2.0]), 3)
    assert y.dtype == np.int64


@pytest.mark.parametrize("eps", [0, -1, np.nan, np.inf])
def test_epsilon_must_be_positive_finite(eps):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(eps)


def test_epsilon_types_and_inf():
    with pytest.raises(TypeError):
        check_epsilon("a lot")
    assert check_epsilon(np.inf, allow_inf=True) == np.inf
    assert check_epsilon(2) == 2.0


@pytest.mark.parametrize("delta", [0, 1, -0.1, 1.5, np.nan])
def test_delta_outside_unit_interval(delta):
    with pytest.raises(ValueError, match="delta"):
        check_delta(delta)


def test_delta_warns_when_at_least_one_over_n():
    with pytest.warns(PrivacyWarning, match="1/n"):
        check_delta(0.01, n=100)
    with pytest.warns(PrivacyWarning):
        check_delta(0.5, n=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_delta(1e-5, n=100) == 1e-5
        check_delta(0.01)  # no n, no warning


def test_other_checks():
    with pytest.raises(ValueError):
        check_positive(0, "C")
    with pytest.raises(ValueError):
        check_positive(np.inf, "C")
    assert check_privacy_mode("paper") == "paper"
    with pytest.raises(ValueError, match="privacy_mode"):
        check_privacy_mode("fast")
    g = np.random.default_rng(1)
    assert check_random_state(g) is g
    assert check_random_state(3).random() == np.random.default_rng(3).random()
    assert isinstance(check_random_state(None), np.random.Generator)
    with pytest.raises(TypeError):
        check_random_state(np.random.RandomState(0))


def test_split_domains():
    X = np.arange(12.0).reshape(6, 2)
    y = np.array([0, 1, 0, -1, -1, -1])
    dom = np.array([1, 1, 1, -2, -2, -2])
    Xs, ys, Xt, yt = split_domains(X, y, dom)
    assert Xs.shape == (3, 2) and Xt.shape == (3, 2) and yt is None
    np.testing.assert_array_equal(ys, [0, 1, 0])
    _, _, _, yt = split_domains(X, np.array([0, 1, 0, 1, 0, 1]), dom)
    np.testing.assert_array_equal(yt, [1, 0, 1])
    with pytest.raises(ValueError, match="no target"):
        split_domains(X, y, np.ones(6))
    with pytest.raises(ValueError, match="no source"):
        split_domains(X, y, -np.ones(6))
    with pytest.raises(ValueError, match="required"):
        split_domains(X, y, None)
    with pytest.raises(ValueError, match="entries"):
        split_domains(X, y, np.ones(5))


def test_mechanisms_use_validation(rng):
    from dpadapt.privacy import gaussian_mechanism, laplace_mechanism, randomized_response

    with pytest.raises(ValueError, match="epsilon"):
        gaussian_mechanism(np.zeros(2), 1.0, 0.0, 1e-5, rng, party="source")
    with pytest.raises(ValueError, match="delta"):
        gaussian_mechanism(np.zeros(2), 1.0, 1.0, 1.0, rng, party="source")
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_mechanism(np.zeros(2), -1.0, 1.0, 1e-5, rng, party="source")
    with pytest.raises(ValueError, match="epsilon"):
        laplace_mechanism(np.zeros(2), 1.0, -1.0, rng, party="source")
    with pytest.raises(ValueError, match="labels"):
        randomized_response(np.array([0, 5]), 3, 1.0, rng)
