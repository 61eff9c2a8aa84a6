"""scikit-learn's binary ``decision_function`` shape on every public classifier with one: (n,) for two classes, the
score of ``classes_[1]`` (> 0 ⇒ ``classes_[1]``), so that scorers ("roc_auc") and ``CalibratedClassifierCV`` take
it; (n, K) for K > 2; the K-column paths behind ``predict`` / ``predict_proba`` unchanged."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import get_scorer, roc_auc_score

from dpadapt.alignment import PRIMA, PRISA
from dpadapt.deep import DANN, DPDA, GDPDA
from dpadapt.deep.families import ReleasedNetwork, model_release
from dpadapt.deep.swd_da import DPSWDAdapter
from dpadapt.discrepancy import DiscrepancyClassifier
from dpadapt.modelio import load_model, save_model
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.sound import SoundDA

DEEP = {"epochs": 1, "batch_size": 8, "hidden": (4,), "random_state": 0}


def _draw(rng, n: int, k: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, k, n)
    X = rng.normal(size=(n, 6)) + shift
    X[:, :k] += 2.0 * np.eye(k)[y]
    return X, y


def _released_network(classes, **kw):
    """The dpda route's receiver model (a ``ReleasedNetwork``), from a small fitted DANN."""

    class Fit:
        def fit_domains(self, Xs, ys, Xt):
            est = DANN(classes=classes, **DEEP).fit_domains(Xs, ys, Xt)
            return ReleasedNetwork(model_release(est, Guarantee.non_private("target", "test")))

    return Fit()


def _loaded_dann(classes, tmp_path):
    """A saved DANN read back (``load_model(...).model``: a ``TorchClassifier``)."""

    class Fit:
        def fit_domains(self, Xs, ys, Xt):
            est = DANN(classes=classes, **DEEP).fit_domains(Xs, ys, Xt)
            return load_model(save_model(tmp_path / "dann.model", est, est.guarantees_)).model

    return Fit()


def _makers(classes):
    k = dict(classes=classes, random_state=0)
    return {
        "SoundDA": lambda _: SoundDA(epsilon=4.0, **k),
        "PRIMA-statistics": lambda _: PRIMA(epsilon=2.0, delta=1e-5, basis_dim=4, **k),
        "PRIMA-votes": lambda _: PRIMA(epsilon=None, source_release="dpsgd_heads", subspace_size=3, epochs=1, **k),
        "PRISA": lambda _: PRISA(epsilon=None, source_release="dpsgd_heads", subspace_size=3, epochs=1, sa_dim=2, **k),
        "DiscrepancyClassifier": lambda _: DiscrepancyClassifier(epsilon=8.0, **k),
        "DANN": lambda _: DANN(classes=classes, **DEEP),
        "DPDA": lambda _: DPDA(classes=classes, epsilon=8.0, noise_multiplier=1.0, **DEEP),
        "GDPDA": lambda _: GDPDA(classes=classes, epsilon=8.0, source_epsilon=8.0, noise_multiplier=1.0, **DEEP),
        "DPSWDAdapter": lambda _: DPSWDAdapter(epsilon=None, device="cpu", epochs=1, min_steps=3, batch_size=8, random_state=0),
        "ReleasedNetwork": lambda _: _released_network(classes),
        "TorchClassifier": lambda tmp: _loaded_dann(classes, tmp),
    }


def _fit(name, classes, tmp_path, rng):
    Xs, ys = _draw(rng, 160, len(classes))
    Xt, yt = _draw(rng, 160, len(classes), shift=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _makers(classes)[name](tmp_path).fit_domains(Xs, ys, Xt), Xt, yt


@pytest.mark.parametrize("name", list(_makers((0, 1))))
def test_binary_decision_function_is_one_score_and_works_in_sklearn(name, tmp_path, rng):
    est, Xt, yt = _fit(name, (0, 1), tmp_path, rng)
    s = est.decision_function(Xt)
    assert s.shape == (Xt.shape[0],)
    if name == "SoundDA":  # at the DP source prior: the sign is the released model's argmax there (predict is at the target's prior)
        np.testing.assert_array_equal(np.where(s > 0, 1, 0), np.argmax(est.model_.decision_function(Xt), axis=1))
    else:
        np.testing.assert_array_equal(est.classes_[(s > 0).astype(int)], est.predict(Xt))
    assert roc_auc_score(yt, s) > 0.7  # > 0 means classes_[1]: the score ranks the positives first
    if hasattr(est, "get_params"):  # a scikit-learn estimator: its scorers and calibration take it as it is
        auc = get_scorer("roc_auc")(est, Xt, yt)
        reference = est.predict_proba(Xt)[:, 1] if hasattr(est, "predict_proba") else s
        assert auc == pytest.approx(roc_auc_score(yt, reference))
        lab = np.arange(60)
        cal = CalibratedClassifierCV(FrozenEstimator(est), method="sigmoid").fit(Xt[lab], yt[lab])
        p = cal.predict_proba(Xt[60:])
        assert p.shape == (Xt.shape[0] - 60, 2) and np.allclose(p.sum(axis=1), 1.0)
        assert roc_auc_score(yt[60:], p[:, 1]) == pytest.approx(roc_auc_score(yt[60:], s[60:]))  # a monotone map of s


@pytest.mark.parametrize("name", ["SoundDA", "PRIMA-statistics", "PRIMA-votes", "DiscrepancyClassifier", "DANN",
                                  "DPSWDAdapter", "ReleasedNetwork", "TorchClassifier"])
def test_three_classes_keep_one_column_per_class(name, tmp_path, rng):
    est, Xt, _ = _fit(name, (0, 1, 2), tmp_path, rng)
    s = est.decision_function(Xt)
    assert s.shape == (Xt.shape[0], 3)
    if name != "SoundDA":
        np.testing.assert_array_equal(est.classes_[s.argmax(axis=1)], est.predict(Xt))


@pytest.mark.parametrize("name", ["SoundDA", "PRIMA-votes", "DANN", "DPSWDAdapter", "ReleasedNetwork", "TorchClassifier"])
def test_binary_score_is_the_k_column_difference_and_predictions_are_unchanged(name, tmp_path, rng):
    """The K-column paths behind predict / predict_proba are the ones the old (n, 2) decision_function gave."""
    est, Xt, _ = _fit(name, (0, 1), tmp_path, rng)
    inner = est.model_.decision_function if hasattr(est, "model_") else est._logits
    z = inner(Xt)
    assert z.shape == (Xt.shape[0], 2)
    np.testing.assert_allclose(est.decision_function(Xt), z[:, 1] - z[:, 0])
    if name != "SoundDA":  # SoundDA predicts at the target's prior through its model (tests/test_decisions.py)
        np.testing.assert_array_equal(est.predict(Xt), est.classes_[z.argmax(axis=1)])
    if name in ("DANN", "TorchClassifier"):  # the label head's softmax
        np.testing.assert_allclose(est.predict_proba(Xt), softmax(z, axis=1), rtol=1e-5)


def test_every_exported_classifier_with_a_decision_function_is_covered():
    import importlib
    import inspect

    from sklearn.base import BaseEstimator, RegressorMixin

    found = set()
    for pkg in ("alignment", "baselines", "classstats", "deep", "discrepancy", "sound", "transport"):
        module = importlib.import_module(f"dpadapt.{pkg}")
        found |= {name for name in module.__all__ if inspect.isclass(obj := getattr(module, name))
                  and issubclass(obj, BaseEstimator) and not issubclass(obj, RegressorMixin)
                  and hasattr(obj, "decision_function")}
    assert found and found <= {name.split("-")[0] for name in _makers((0, 1))}


def test_roc_auc_scorer_through_a_skada_pipeline(rng):
    skada = pytest.importorskip("skada")
    Xs, ys = _draw(rng, 160, 2)
    Xt, yt = _draw(rng, 160, 2, shift=0.3)
    X, y = np.vstack([Xs, Xt]), np.concatenate([ys, np.full(160, -1)])
    sample_domain = np.r_[np.ones(160, int), -np.ones(160, int)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe = skada.make_da_pipeline(SoundDA(epsilon=4.0, classes=(0, 1), random_state=0)).fit(X, y, sample_domain=sample_domain)
    assert pipe.decision_function(Xt).shape == (160,)
    assert get_scorer("roc_auc")(pipe, Xt, yt) == pytest.approx(roc_auc_score(yt, pipe.predict_proba(Xt)[:, 1]))
