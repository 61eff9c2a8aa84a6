"""Base classes for domain-adaptation estimators (scikit-learn / skada conventions): :class:`DAEstimator`, and
:class:`ConfigEstimator`, whose hyper-parameters are its family's Config (:mod:`dpadapt.api`).

Labels of a public label set may be any hashable values (strings included) on every estimator: at
the estimator boundary (:meth:`DAEstimator.__init_subclass__`) a subclass's ``fit_domains`` gets the
labels as indices 0..K-1 of the declared ``classes`` (and fits with ``classes=range(K)``), and its
``predict`` turns indices back into the declared labels; ``classes_`` holds the declared labels and
``predict_proba``'s columns follow their order. Integer label sets go through unchanged.

``decision_function`` follows scikit-learn's shape (:func:`binary_scores`): (n, K) for K > 2 classes, and for two
classes the 1-D score of ``classes_[1]`` against ``classes_[0]`` (so scorers such as ``"roc_auc"`` and
``CalibratedClassifierCV`` take it as it is).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, is_classifier
from sklearn.utils import check_array
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from dpadapt.configs.base import Config, resolve_epsilon
from dpadapt.privacy.guarantee import REPRODUCIBLE_NOISE_REASON, Guarantee
from dpadapt.validation import check_features, check_labels, check_same_features, split_domains


class DAEstimator(ClassifierMixin, BaseEstimator):
    """A domain-adaptation classifier that runs both party steps in one process.

    Subclasses implement :meth:`fit_domains` (explicit source/target arrays) and
    :meth:`predict`. :meth:`fit` accepts skada's ``X, y, sample_domain`` (source rows have
    ``sample_domain ≥ 0``, target rows ``< 0`` with ``y = −1`` when unlabelled).

    After fitting, ``guarantees_`` maps each protected party to its
    :class:`~dpadapt.privacy.Guarantee` (empty for non-private baselines), and
    :meth:`privacy_report` prints them.

    ``fit`` requests ``sample_domain`` through scikit-learn's metadata routing, so the estimator
    runs as the last step of skada's ``make_da_pipeline`` and inside ``cross_validate`` with
    ``params={"sample_domain": ...}`` (skada's own estimators make the same request).
    """

    __metadata_request__fit = {"sample_domain": True}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "fit_domains" in cls.__dict__:
            cls.fit_domains = _named_labels_fit(cls.__dict__["fit_domains"])
        if "predict" in cls.__dict__:
            cls.predict = _named_labels_predict(cls.__dict__["predict"])
        for name in ("predict_proba", "predict_log_proba", "decision_function"):
            if name in cls.__dict__:
                setattr(cls, name, _fitted_first(cls.__dict__[name]))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        classes = getattr(self, "classes", None)
        if tags.classifier_tags is not None and classes is not None:
            tags.classifier_tags.multi_class = len(tuple(classes)) > 2  # a public label set of two: binary only
        return tags

    def fit(self, X, y=None, sample_domain=None, **fit_params):
        """Fit on skada-style inputs; see :meth:`fit_domains`.

        Without ``sample_domain``, skada's convention: rows labelled ``-1`` are the target, the others the
        source. With no target row at all, :meth:`fit_source_only` runs (by default an error).
        """
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None "
                             "(source labels; target rows may carry -1)")
        _check_fit_inputs(self, X, y)
        if sample_domain is None:
            target = _unlabelled(y)
            if not target.any():
                return self.fit_source_only(X, y, **fit_params)
            sample_domain = np.where(target, -2, 1)
        names = column_names(X)
        X = check_features(X, allow_sparse=True)
        Xs, ys, Xt, yt = split_domains(X, y, sample_domain)
        self.fit_domains(Xs, ys, Xt, yt, **fit_params)
        _record_names(self, names)
        return self

    def fit_source_only(self, X, y, **fit_params):
        """``fit(X, y)`` with no target row (no ``sample_domain``, no label -1): a domain-adaptation estimator
        has nothing to adapt to. Subclasses that have a source-only form override this; the default refuses."""
        raise ValueError(f"{type(self).__name__} adapts to target rows and got none: pass sample_domain (source rows "
                         "≥ 0, target rows < 0) or label the target rows -1 (skada's convention)")

    def fit_domains(self, Xs, ys, Xt, yt=None, **fit_params):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- prediction: the fitted classifier ``model_`` on the receiver's features ----------------

    def _has_model_input(self) -> bool:
        return hasattr(type(self), "_model_input")

    def _predict(self, X):
        """Labels of ``X`` (subclasses define ``_model_input(X)``: raw rows → ``model_``'s input)."""
        check_is_fitted(self, "model_")
        return self.model_.predict(self._model_input(by_name(self, X)))

    @available_if(_has_model_input)
    def predict_proba(self, X):
        """Class probabilities of ``X`` (columns in the order of ``classes_``)."""
        check_is_fitted(self, "model_")
        return self.model_.predict_proba(self._model_input(by_name(self, X)))

    predict = available_if(_has_model_input)(functools.wraps(_predict)(lambda self, X: _decode(self, self._predict(X))))

    # -- helpers for subclasses --------------------------------------------------------------

    def _check_domains(self, Xs, ys, Xt, yt=None, allow_sparse: bool = False):
        """Validate and return dense (or CSR) source/target arrays with integer labels.

        With the estimator's public label set (its ``classes`` parameter) a one-class source is valid.
        """
        Xs = check_features(Xs, "Xs (source)", allow_sparse=allow_sparse)
        Xt = check_features(Xt, "Xt (target)", allow_sparse=allow_sparse)
        check_same_features(Xs, Xt)
        ys = check_labels(ys, Xs.shape[0], "ys (source labels)", classes=getattr(self, "classes", None))
        if yt is not None:
            yt = np.asarray(yt)
            if yt.shape[0] != Xt.shape[0]:
                raise ValueError(f"yt has {yt.shape[0]} labels for {Xt.shape[0]} target rows")
            yt = yt.astype(np.int64)
        return Xs, ys, Xt, yt

    def _set_guarantees(self, *guarantees: Guarantee) -> None:
        """Record the fitted guarantees; with ``reproducible_noise=True`` they are marked invalid."""
        if getattr(self, "reproducible_noise", False):
            guarantees = tuple(g.invalidated(REPRODUCIBLE_NOISE_REASON) for g in guarantees)
        self.guarantees_ = {g.party: g for g in guarantees}

    # -- privacy reporting -----------------------------------------------------------------

    @property
    def guarantee_(self) -> Guarantee | None:
        """The guarantee of the single protected party (``None`` for a non-private estimator)."""
        check_is_fitted(self, "guarantees_")
        if not self.guarantees_:
            return None
        if len(self.guarantees_) > 1:
            raise AttributeError("both parties are protected; use guarantees_['source'] / guarantees_['target']")
        return next(iter(self.guarantees_.values()))

    def privacy_report(self) -> str:
        """Every protected party's guarantee in words."""
        check_is_fitted(self, "guarantees_")
        if not self.guarantees_:
            return f"{type(self).__name__}: non-private (no differential-privacy guarantee)."
        return "\n\n".join(g.report() for g in self.guarantees_.values())


class ConfigEstimator(DAEstimator):
    """An estimator whose hyper-parameters are exactly its family's :class:`Config` fields.

    Subclasses set ``config_class``; ``__init__`` (keyword-only, one argument per Config field) is
    generated, so ``get_params``/``set_params``/``clone`` and skada pipelines work unchanged.
    ``config_`` is the validated Config built at fit time.
    """

    config_class: ClassVar[type[Config]] = Config

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            return
        fields = cls.config_class.parameters()

        def __init__(self, **params: Any) -> None:
            unknown = sorted(set(params) - {f.name for f in fields})
            if unknown:
                raise TypeError(f"{type(self).__name__} got unexpected parameter(s): {', '.join(unknown)}")
            for f in fields:
                setattr(self, f.name, params.get(f.name, f.default))

        __init__.__signature__ = inspect.Signature(
            [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default) for f in fields]
        )
        __init__.__doc__ = cls.__doc__
        cls.__init__ = __init__

    def make_config(self, **overrides: Any) -> Config:
        """Validate the current hyper-parameters into the family's Config."""
        values = {f.name: getattr(self, f.name) for f in self.config_class.parameters()}
        values.update(overrides)
        if "epsilon" in values:  # not given: the stated private default, with a warning naming this estimator
            values["epsilon"] = resolve_epsilon(values["epsilon"], type(self).__name__)
        return self.config_class(**values)


def _check_fit_inputs(estimator, X, y) -> None:
    """scikit-learn's input checks (NaN/inf, empty, complex, 1-D, a continuous target for a classifier), run
    before any refusal of the domain split so that a bad input is named as such, in scikit-learn's words."""
    check_array(X, accept_sparse="csr", ensure_all_finite=True, ensure_2d=True)
    if is_classifier(estimator) and np.asarray(y).dtype.kind == "f":
        check_classification_targets(y)  # a continuous target: scikit-learn's "Unknown label type"


#: scikit-learn's estimator checks every domain-adaptation estimator fails by design, with the reason
#: (``check_estimator(est, expected_failed_checks=expected_failed_checks(est))``; skada declares the same).
#: They fit ``X, y`` with no target row, which :meth:`DAEstimator.fit` refuses: there is nothing to adapt to.
NO_TARGET_CHECKS = {name: "fits X, y with no target row (no sample_domain, no label -1); a domain-adaptation "
                          "estimator refuses: it has nothing to adapt to"
                    for name in ("check_fit_score_takes_y", "check_estimators_overwrite_params",
                                 "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
                                 "check_readonly_memmap_input", "check_n_features_in_after_fitting",
                                 "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
                                 "check_pipeline_consistency", "check_estimator_sparse_tag",
                                 "check_estimator_sparse_array", "check_estimator_sparse_matrix", "check_estimators_pickle",
                                 "check_f_contiguous_array_estimator", "check_classifier_data_not_an_array",
                                 "check_classifiers_one_label", "check_classifiers_one_label_sample_weights",
                                 "check_classifiers_classes", "check_classifiers_train", "check_supervised_y_2d",
                                 "check_methods_sample_order_invariance", "check_methods_subset_invariance",
                                 "check_fit2d_1sample", "check_fit2d_1feature", "check_dict_unchanged",
                                 "check_fit_idempotent", "check_fit_check_is_fitted", "check_n_features_in",
                                 "check_fit2d_predict1d", "check_decision_proba_consistency", "check_estimators_nan_inf",
                                 "check_regressors_train", "check_regressor_data_not_an_array",
                                 "check_regressors_no_decision_function", "check_regressors_int")}


def expected_failed_checks(estimator) -> dict[str, str]:
    """The scikit-learn checks ``estimator`` cannot pass, each with its reason (for ``check_estimator``'s
    ``expected_failed_checks``); a check that would not fail is left out."""
    from sklearn.utils.estimator_checks import estimator_checks_generator

    from dpadapt.classstats.baselines import _SourceOnly
    from dpadapt.classstats.baselines import expected_failed_checks as source_only_checks

    if not isinstance(estimator, DAEstimator):
        return {}
    if isinstance(estimator, _SourceOnly) or type(estimator).fit_source_only is not DAEstimator.fit_source_only:
        return source_only_checks(estimator)  # fits X, y without target rows: only the label-set / noise checks fail
    names = {getattr(c, "func", c).__name__ for _, c in estimator_checks_generator(estimator, mark=None)}
    if not (hasattr(estimator, "decision_function") and hasattr(estimator, "predict_proba")):  # nothing to compare
        names.discard("check_decision_proba_consistency")
    return {k: v for k, v in NO_TARGET_CHECKS.items() if k in names}


def _unlabelled(y) -> np.ndarray:
    """Rows whose label is -1 (skada's mark of a target row), for labels of any type."""
    y = np.asarray(y)
    if y.dtype.kind in "iuf":
        return y.ravel() == -1
    return np.fromiter((isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and v == -1
                        for v in y.ravel().tolist()), dtype=bool, count=y.size)


def label_names(classes) -> np.ndarray | None:
    """The declared label set as an array when it holds labels other than integers (names), else ``None``."""
    if classes is None:
        return None
    values = list(np.asarray(list(classes), dtype=object).ravel())
    if all(isinstance(c, (int, np.integer)) and not isinstance(c, (bool, np.bool_)) for c in values):
        return None
    return np.asarray(values)


def _encode(y, names: np.ndarray, what: str, allow_unlabelled: bool = False) -> np.ndarray:
    lookup = {v: i for i, v in enumerate(names.tolist())}
    out = np.empty(np.asarray(y).size, dtype=np.int64)
    for i, v in enumerate(np.asarray(y, dtype=object).ravel().tolist()):
        if v in lookup:
            out[i] = lookup[v]
        elif allow_unlabelled and (v is None or (not isinstance(v, (str, bool)) and v == -1)):
            out[i] = -1
        else:
            outside = sorted({repr(u) for u in np.asarray(y, dtype=object).ravel().tolist() if u not in lookup})[:5]
            binary = ". Only binary classification is supported with a public label set of two classes" if len(names) == 2 else ""
            raise ValueError(f"{what}: label(s) {', '.join(outside)} are not in the public label set "
                             f"classes={names.tolist()}{binary}")
    return out


def several_sources(Xs) -> bool:
    """Whether ``Xs`` holds several sources' rows (a list of 2-D arrays or sparse matrices), not one source's
    rows given as a list of rows."""
    import scipy.sparse as sp

    return isinstance(Xs, (list, tuple)) and len(Xs) > 0 and all(sp.issparse(x) or np.ndim(x) == 2 for x in Xs)


def _named_labels_fit(fit_domains):
    """``fit_domains`` with labels of a declared label set of names encoded to indices on entry (see the module)."""

    @functools.wraps(fit_domains)
    def wrapper(self, Xs, ys, Xt=None, yt=None, **kwargs):
        _record_names(self, None)  # a refit starts afresh (the subclass's own predict runs on arrays while fitting)
        names = None if several_sources(Xs) else column_names(Xs)
        if names is not None and Xt is not None:
            Xt = _take_columns(Xt, names, f"{type(self).__name__}: Xt (target)", "Xs (source)")
        _fit_domains(self, Xs, ys, Xt, yt, **kwargs)
        _record_names(self, names)
        first = Xs[0] if several_sources(Xs) else Xs
        if len(getattr(first, "shape", ())) == 2:  # scikit-learn's n_features_in_: predict checks the width
            self.n_features_in_ = int(first.shape[1])
        return self

    def _fit_domains(self, Xs, ys, Xt=None, yt=None, **kwargs):
        declared = getattr(self, "classes", None)
        names = label_names(declared)
        self._label_names = None  # while fitting, the subclass works with indices (its own predict included)
        several = several_sources(Xs)  # several sources (SoundDA): a list of label arrays
        if several:
            labels = [np.asarray(y).ravel() for y in ys]
            flat = np.concatenate(labels) if labels else np.array([])
        else:
            flat = ys
        if names is None and declared is None and flat is not None and np.asarray(flat).dtype.kind in "OSU":
            if getattr(self, "epsilon", None) is not None:
                raise ValueError(f"{type(self).__name__}: labels that are not whole numbers (e.g. "
                                 f"{np.asarray(flat).ravel()[0]!r}) need the public label set: give classes=(...) "
                                 "(reading it off the private labels would leak them)")
            names = np.unique(np.asarray(flat).ravel())  # non-private: the label set may be read off the labels
        if names is None:
            if declared is not None and _whole_numbers(flat):  # an integer label set: refused here, in one wording
                seen = np.unique(np.asarray(flat).ravel())
                if np.setdiff1d(seen, np.asarray(list(declared), dtype=np.float64)).size:
                    _encode(seen, np.asarray(list(declared)), "ys (source labels)")
            return fit_domains(self, Xs, ys, Xt, yt, **kwargs)
        ys = [_encode(y, names, f"ys[{i}] (source labels)") for i, y in enumerate(labels)] if several else \
            _encode(ys, names, "ys (source labels)")
        yt = None if yt is None else _encode(yt, names, "yt (target labels)", allow_unlabelled=True)
        has_classes = hasattr(self, "classes")
        if has_classes:
            self.classes = tuple(range(len(names)))
        try:
            fit_domains(self, Xs, ys, Xt, yt, **kwargs)
        finally:
            if has_classes:
                self.classes = declared
        self._label_names = names
        self.classes_ = names
        return self

    return wrapper


def _named_labels_predict(predict):
    """``predict`` returning the declared labels (indices decoded) after a fit with named labels."""

    @functools.wraps(predict)
    def wrapper(self, X, *args, **kwargs):
        check_is_fitted(self)
        return _decode(self, predict(self, by_name(self, X), *args, **kwargs))

    return wrapper


def column_names(X) -> tuple[str, ...] | None:
    """A DataFrame's column names (scikit-learn's ``feature_names_in_``: only when every name is text), else ``None``."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "to_numpy") or not all(isinstance(c, str) for c in columns):
        return None
    return tuple(columns)


def _record_names(estimator, names: tuple[str, ...] | None) -> None:
    if names is None:
        estimator.__dict__.pop("feature_names_in_", None)
    else:
        estimator.feature_names_in_ = np.asarray(names, dtype=object)


def _take_columns(X, names: tuple[str, ...], what: str, fitted: str):
    """``X``'s columns by name in the order ``names``; missing / extra columns or no names are refused in one line."""
    have = column_names(X)
    if have is None:
        raise ValueError(f"{what} has no column names, but {fitted} had named columns ({_shown(names)}); pass a "
                         "DataFrame with these columns (rows are never matched to names by position)")
    if have == names:
        return X
    missing, extra = [c for c in names if c not in have], [c for c in have if c not in names]
    if missing or extra:
        parts = ([f"missing column(s) {_shown(missing)}"] if missing else []) + (
            [f"extra column(s) {_shown(extra)}"] if extra else [])
        raise ValueError(f"{what}: {'; '.join(parts)} ({fitted} had columns {_shown(names)}); "
                         "pass exactly these columns, in any order")
    return X[list(names)]


def _shown(names) -> str:
    names = list(names)
    return ", ".join(repr(c) for c in names[:5]) + (f" … ({len(names) - 5} more)" if len(names) > 5 else "")


def by_name(estimator, X):
    """``X`` with its columns taken by name when the estimator was fitted on a DataFrame (``feature_names_in_``):
    another order is mapped by name; a missing or extra column, or an array without names, is refused."""
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None:
        X = _take_columns(X, tuple(names), f"{type(estimator).__name__}: X", "the data it was fitted on")
    width, fitted = getattr(X, "shape", (None, None)), getattr(estimator, "n_features_in_", None)
    if isinstance(fitted, int) and len(width) == 2 and width[1] is not None and width[1] != fitted:
        raise ValueError(f"X has {width[1]} features, but {type(estimator).__name__} is expecting {fitted} features as "
                         "input (the columns it was fitted on)")
    return X


def _whole_numbers(y) -> bool:
    """Labels that are whole numbers (other labels get the estimator's own validation and its words)."""
    if y is None:
        return False
    y = np.asarray(y)
    if y.dtype.kind in "iub":
        return True
    return y.dtype.kind == "f" and bool(np.all(np.isfinite(y))) and bool(np.all(y == np.round(y)))


def binary_scores(scores) -> np.ndarray:
    """Class scores (n, K) in scikit-learn's ``decision_function`` shape: for K = 2 the 1-D ``s₁ − s₀`` (the score of
    ``classes_[1]`` against ``classes_[0]``: > 0 exactly where the argmax picks ``classes_[1]``, a tie going to
    ``classes_[0]`` as in the argmax); otherwise unchanged."""
    s = np.asarray(scores)
    return s[:, 1] - s[:, 0] if s.ndim == 2 and s.shape[1] == 2 else s


def _fitted_first(method):
    """``method`` that raises scikit-learn's ``NotFittedError`` before ``fit``."""

    @functools.wraps(method)
    def wrapper(self, X, *args, **kwargs):
        check_is_fitted(self)
        return method(self, by_name(self, X), *args, **kwargs)

    return wrapper


def _decode(estimator, out):
    """Indices into the declared label set → the declared labels (after a fit with named labels)."""
    names = getattr(estimator, "_label_names", None)
    if names is not None and np.asarray(out).dtype.kind in "iu":
        return names[np.asarray(out)]
    return out
