"""Our estimators inside skada (pipelines, splitters, unsupervised DA scorers); skada's baselines beside them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

skada = pytest.importorskip("skada")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import cross_validate  # noqa: E402
from skada import make_da_pipeline  # noqa: E402
from skada.datasets import make_shifted_datasets  # noqa: E402
from skada.metrics import MixValScorer, PredictionEntropyScorer  # noqa: E402
from skada.model_selection import SourceTargetShuffleSplit  # noqa: E402

from dpadapt.alignment import CORAL, PRIMA  # noqa: E402
from dpadapt.baselines import SKADA_BASELINES, SourceOnly, skada_baseline  # noqa: E402
from dpadapt.transport import DPOTAdapter  # noqa: E402


@pytest.fixture(scope="module")
def shifted():
    return make_shifted_datasets(n_samples_source=20, n_samples_target=15, shift="covariate_shift",
                                 noise=None, random_state=0)


def _cv(estimator, data, scorer):
    X, y, sd = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cross_validate(
            make_da_pipeline(estimator), X, y, params={"sample_domain": sd},
            cv=SourceTargetShuffleSplit(n_splits=2, random_state=0), scoring=scorer, error_score="raise",
        )


@pytest.mark.parametrize("make", [lambda: SourceOnly(random_state=0), lambda: DPOTAdapter(epsilon=8.0, classes=(0, 1), head="logreg", random_state=0)],
                         ids=["SourceOnly", "DPOTAdapter"])
def test_probabilistic_estimators_cross_validate_with_prediction_entropy(make, shifted):
    scores = _cv(make(), shifted, PredictionEntropyScorer())["test_score"]
    assert scores.shape == (2,) and np.all(np.isfinite(scores)) and np.all(scores <= 1e-6)  # −entropy, up to rounding


@pytest.mark.parametrize("make", [lambda: CORAL(random_state=0), lambda: PRIMA(epsilon=None, random_state=0)],
                         ids=["CORAL", "PRIMA"])
def test_alignment_estimators_cross_validate_with_mixval(make, shifted):
    scores = _cv(make(), shifted, MixValScorer(random_state=0))["test_score"]
    assert scores.shape == (2,) and np.all((0 <= scores) & (scores <= 1))


def test_our_estimator_fits_in_a_pipeline_and_is_cloneable(shifted):
    X, y, sd = shifted
    pipe = make_da_pipeline(SourceOnly(random_state=0))
    pipe.fit(X, y, sample_domain=sd)
    target = sd < 0
    assert pipe.predict_proba(X[target]).shape == (target.sum(), 2)
    assert clone(pipe).get_params()["sourceonly__scaling"] == "cv"


@pytest.mark.parametrize("name", SKADA_BASELINES)
def test_skada_baselines_run_beside_ours(name, shifted):
    X, y, sd = shifted
    kwargs = {"n_components": 2} if name == "subspace_alignment" else {}
    pipe = skada_baseline(name, random_state=0, **kwargs)
    scores = _cv(pipe, shifted, PredictionEntropyScorer())["test_score"]
    assert np.all(np.isfinite(scores))
    target = sd < 0
    pred = pipe.fit(X, y, sample_domain=sd).predict(X[target], sample_domain=sd[target])
    assert pred.shape == (target.sum(),) and set(pred) <= set(y)


def test_unknown_skada_baseline_is_refused():
    with pytest.raises(ValueError, match="unknown skada baseline"):
        skada_baseline("dann")


def test_skadas_dann_needs_skorch_so_ours_is_kept():
    """skada's DANN lives in skada.deep, which needs skorch (not a dependency); the DANN baseline stays ours."""
    try:
        import skorch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="skorch"):
            import skada.deep  # noqa: F401
    else:  # pragma: no cover - only where skorch happens to be installed
        pytest.skip("skorch is installed here: skada's DANN could be compared with ours")
