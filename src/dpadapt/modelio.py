"""Saving and loading trained models without pickle: only what predicts, as arrays + JSON.

A model file is a :mod:`dpadapt.container` (format ``dpadapt-model``): the arrays of the fitted
predictor, a JSON *spec* saying how to rebuild it, the guarantees per protected party and free
metadata. Loading never unpickles and never imports a class named in the file: every spec names a
*kind* from a fixed registry, and only the registered ``load`` of that kind rebuilds the object.
Optimiser state, training logs and private data are never saved.

API
---
``save_model(path, predictor, guarantees, meta=None, sign_key=None)`` writes a model;
``load_model(path, trusted=()) -> LoadedModel`` reads one (``predict``, ``predict_proba``,
``score``, ``guarantees``, ``meta``, ``model``: the rebuilt predictor).

Registering a new kind
----------------------
A kind is a name, a test ``matches(obj)``, ``save(obj, put) -> dict`` (a JSON-able spec; store
each array with ``key = put(array)`` and nested objects with ``dump(child, put)``) and
``load(spec, get) -> obj`` (read arrays with ``get(key)``, nested objects with ``build(child, get)``)::

    from dpadapt import modelio

    modelio.register_kind(modelio.Kind(
        "class-prototypes",
        matches=lambda m: isinstance(m, PrototypeClassifier),
        save=lambda m, put: {"prototypes": put(m.prototypes_), "head": modelio.dump(m.head_, put)},
        load=lambda s, get: PrototypeClassifier.from_parts(get(s["prototypes"]), modelio.build(s["head"], get)),
    ))

Kinds are tried newest first, so a specific kind registered later wins over a generic one. A
torch network is saved as its ``state_dict`` arrays plus an architecture name from
:func:`register_architecture` (a builder from JSON parameters), never as code.

Built-in kinds: JSON values, ndarrays, flat dataclass records, scikit-learn ``Pipeline``,
``StandardScaler``, ``LogisticRegression``, ``MLPClassifier``, ``LinearRegression``/``Ridge``;
DANN-family networks (``network_`` built by ``mlp_network``), DP-SWD's g → h networks
(architecture ``"dpswd-net"``, :mod:`dpadapt.deep.swd_publicmap`), linear regressors with ``coef_``
only (discrepancy), and classifiers that wrap a :class:`~dpadapt.release.Release` (PRIMA vote).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpadapt import __version__, container
from dpadapt.jsonutil import to_jsonable

FORMAT = "dpadapt-model"
FORMAT_VERSION = 1

Put = Callable[[np.ndarray], str]
Get = Callable[[str], np.ndarray]


class ModelFileError(container.ContainerError):
    """A model file is unreadable, not a model, or of a kind this installation cannot rebuild."""


@dataclasses.dataclass(frozen=True)
class Kind:
    """How to save and rebuild one kind of fitted object (see the module docstring)."""

    name: str
    matches: Callable[[Any], bool]
    save: Callable[[Any, Put], dict[str, Any]]
    load: Callable[[dict[str, Any], Get], Any]


_KINDS: list[Kind] = []
_ARCHITECTURES: dict[str, Callable[..., Any] | str] = {}


def register_kind(kind: Kind) -> Kind:
    """Add (or replace) a kind; later registrations are tried first."""
    _KINDS[:] = [k for k in _KINDS if k.name != kind.name]
    _KINDS.append(kind)
    return kind


def register_architecture(name: str, builder: Callable[..., Any] | str) -> None:
    """A torch architecture: ``builder(**params)`` returns an untrained ``nn.Module``.

    ``builder`` may be a ``"module:function"`` reference, imported when such a network is first loaded
    (for builders in modules that themselves use this one).
    """
    _ARCHITECTURES[name] = builder


def dump(obj: Any, put: Put) -> dict[str, Any]:
    """The spec of ``obj`` (arrays stored through ``put``); raises ``TypeError`` for an unknown kind."""
    for kind in reversed(_KINDS):
        if kind.matches(obj):
            return {"kind": kind.name, **kind.save(obj, put)}
    raise TypeError(
        f"a model of type {type(obj).__name__} cannot be saved: register a kind for it in dpadapt.modelio"
    )


def build(spec: dict[str, Any], get: Get) -> Any:
    """Rebuild an object from its spec (only through registered kinds)."""
    name = spec.get("kind") if isinstance(spec, dict) else None
    for kind in _KINDS:
        if kind.name == name:
            return kind.load(spec, get)
    raise ModelFileError(f"model part of kind {name!r} is not known to this dpadapt installation")


# -- the file ------------------------------------------------------------------------------


@dataclasses.dataclass
class LoadedModel:
    """A model read back from a file: the rebuilt predictor, its guarantees and metadata."""

    model: Any
    guarantees: dict[str, Any]
    meta: dict[str, Any]
    signer: str | None = None
    trusted: bool = False

    def _need(self, name: str) -> Callable:
        fn = getattr(self.model, name, None)
        if fn is None:
            raise ValueError(f"this {self.meta.get('method', '')} model file holds no predictor (it cannot {name})")
        return fn

    def _check_width(self, X) -> None:
        expected = self.meta.get("n_features")
        width = X.shape[1] if getattr(X, "ndim", 0) == 2 else None
        if expected is not None and width is not None and width != int(expected):
            raise ValueError(f"the data have {width} features, the model was trained on {expected}")

    def predict(self, X) -> np.ndarray:
        self._check_width(X)
        return np.asarray(self._need("predict")(X))

    def predict_proba(self, X) -> np.ndarray:
        self._check_width(X)
        return np.asarray(self._need("predict_proba")(X))

    def score(self, X, y) -> float:
        self._check_width(X)
        return float(self._need("score")(X, y))

    def authenticity(self) -> str:
        return container.Container({}, {}, self.signer, self.trusted).authenticity()


def save_model(
    path: str | os.PathLike,
    predictor: Any,
    guarantees: dict[str, Any],
    meta: dict[str, Any] | None = None,
    sign_key: Any = None,
) -> Path:
    """Write ``predictor`` (only what predicts) with its guarantees, atomically."""
    arrays: dict[str, np.ndarray] = {}

    def put(array: np.ndarray) -> str:
        key = f"a{len(arrays)}"
        arrays[key] = np.asarray(array)
        return key

    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "model": dump(predictor, put),
        "guarantees": {k: g.to_dict() for k, g in guarantees.items()},
        "meta": to_jsonable(meta or {}),
    }
    return container.write_atomic(path, container.encode(header, arrays, sign_key=sign_key))


def load_model(path: str | os.PathLike, trusted: Sequence[Any] = ()) -> LoadedModel:
    """Read and verify a model file (never unpickles; see the module docstring)."""
    from dpadapt.privacy.guarantee import Guarantee

    c = container.open_versioned(path, str(path), FORMAT, FORMAT_VERSION, ModelFileError, trusted)
    meta = c.meta

    def get(key: str) -> np.ndarray:
        if key not in c.arrays:
            raise ModelFileError(f"{path}: array {key!r} is missing")
        return c.arrays[key]

    try:
        guarantees = {k: Guarantee.from_dict(v) for k, v in meta["guarantees"].items()}
        model = build(meta["model"], get)
    except ModelFileError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, RuntimeError) as exc:
        raise ModelFileError(f"{path}: malformed model file ({type(exc).__name__}: {exc})") from None
    info = dict(meta.get("meta", {}), version=meta.get("version"), created=meta.get("created"))
    return LoadedModel(model, guarantees, info, c.signer, c.trusted)


# -- built-in kinds ------------------------------------------------------------------------


def _is_json(obj: Any) -> bool:
    try:
        to_jsonable(obj)
    except TypeError:
        return False
    return not isinstance(obj, np.ndarray) and not isinstance(obj, np.generic)


register_kind(Kind("json", _is_json, lambda o, put: {"value": to_jsonable(o)}, lambda s, get: s["value"]))
register_kind(Kind("ndarray", lambda o: isinstance(o, np.ndarray) and not o.dtype.hasobject,
                   lambda o, put: {"array": put(o)}, lambda s, get: get(s["array"])))


def _is_record(obj: Any) -> bool:
    """A plain dataclass of JSON values that does not predict (a predictor needs its own kind)."""
    return (dataclasses.is_dataclass(obj) and not isinstance(obj, type) and not hasattr(obj, "predict")
            and _is_json(dataclasses.asdict(obj)))


register_kind(Kind(
    "record", _is_record,
    lambda o, put: {"type": type(o).__name__, "fields": to_jsonable(dataclasses.asdict(o))},
    lambda s, get: dict(s["fields"]),
))


def _sk(name: str) -> Callable[[Any], bool]:
    """Match an object whose class is exactly scikit-learn's ``name`` (without importing sklearn)."""
    return lambda o: type(o).__module__.startswith("sklearn.") and type(o).__name__ == name


def _plain_params(est: Any) -> dict[str, Any]:
    return {k: v for k, v in est.get_params(deep=False).items() if _is_json(v)}


def _save_pipeline(p: Any, put: Put) -> dict[str, Any]:
    return {"steps": [[name, dump(step, put)] for name, step in p.steps]}


def _load_pipeline(s: dict[str, Any], get: Get) -> Any:
    from sklearn.pipeline import Pipeline

    return Pipeline([(str(name), build(step, get)) for name, step in s["steps"]])


def _save_scaler(m: Any, put: Put) -> dict[str, Any]:
    out = {"params": _plain_params(m), "n_features_in": int(m.n_features_in_)}
    for attr in ("mean_", "scale_", "var_"):
        value = getattr(m, attr, None)
        out[attr] = None if value is None else put(value)
    return out


def _load_scaler(s: dict[str, Any], get: Get) -> Any:
    from sklearn.preprocessing import StandardScaler

    m = StandardScaler(**s["params"])
    for attr in ("mean_", "scale_", "var_"):
        setattr(m, attr, None if s[attr] is None else get(s[attr]))
    m.n_features_in_ = int(s["n_features_in"])
    return m


def _save_linear(m: Any, put: Put) -> dict[str, Any]:
    out = {"params": _plain_params(m), "coef": put(m.coef_), "intercept": put(np.asarray(m.intercept_)),
           "n_features_in": int(m.n_features_in_)}
    if hasattr(m, "classes_"):
        out["classes"] = put(m.classes_)
    return out


def _load_linear(cls_name: str) -> Callable[[dict[str, Any], Get], Any]:
    def load(s: dict[str, Any], get: Get) -> Any:
        import sklearn.linear_model as lm

        m = getattr(lm, cls_name)(**s["params"])
        m.coef_, m.n_features_in_ = get(s["coef"]), int(s["n_features_in"])
        intercept = get(s["intercept"])
        m.intercept_ = intercept if intercept.ndim else float(intercept)
        if "classes" in s:
            m.classes_ = get(s["classes"])
        return m

    return load


def _save_mlp(m: Any, put: Put) -> dict[str, Any]:
    return {
        "params": _plain_params(m),
        "coefs": [put(c) for c in m.coefs_],
        "intercepts": [put(b) for b in m.intercepts_],
        "classes": put(m.classes_),
        "out_activation": m.out_activation_,
        "n_features_in": int(m.n_features_in_),
        "n_outputs": int(m.n_outputs_),
    }


def _load_mlp(s: dict[str, Any], get: Get) -> Any:
    from sklearn.neural_network import MLPClassifier
    from sklearn.preprocessing import LabelBinarizer

    m = MLPClassifier(**s["params"])
    m.coefs_ = [get(k) for k in s["coefs"]]
    m.intercepts_ = [get(k) for k in s["intercepts"]]
    m.n_layers_ = len(m.coefs_) + 1
    m.classes_ = get(s["classes"])
    m._label_binarizer = LabelBinarizer().fit(m.classes_)
    m.out_activation_, m.n_features_in_, m.n_outputs_ = s["out_activation"], int(s["n_features_in"]), int(s["n_outputs"])
    return m


register_kind(Kind("sklearn-pipeline", _sk("Pipeline"), _save_pipeline, _load_pipeline))
register_kind(Kind("sklearn-standard-scaler", _sk("StandardScaler"), _save_scaler, _load_scaler))
for _name in ("LogisticRegression", "LinearRegression", "Ridge"):
    register_kind(Kind(f"sklearn-{_name}", _sk(_name), _save_linear, _load_linear(_name)))
register_kind(Kind("sklearn-mlp-classifier", _sk("MLPClassifier"), _save_mlp, _load_mlp))


class LinearPredictor:
    """``X @ coef`` (a regressor fitted elsewhere, e.g. discrepancy minimisation); ``score`` is R²."""

    def __init__(self, coef: np.ndarray) -> None:
        self.coef_ = np.asarray(coef, dtype=np.float64)

    def predict(self, X) -> np.ndarray:
        from dpadapt.validation import check_features

        X = check_features(X, allow_sparse=True)
        if X.shape[1] != self.coef_.shape[0]:
            raise ValueError(f"X has {X.shape[1]} features, the model was fitted with {self.coef_.shape[0]}")
        return np.asarray(X @ self.coef_)

    def score(self, X, y) -> float:
        from sklearn.metrics import r2_score

        return float(r2_score(np.asarray(y, dtype=np.float64), self.predict(X)))


register_kind(Kind(
    "linear-regressor",
    lambda o: type(o).__name__ in ("DiscrepancyRegressor", "LinearPredictor") and hasattr(o, "coef_"),
    lambda o, put: {"coef": put(o.coef_)},
    lambda s, get: LinearPredictor(get(s["coef"])),
))


#: Dataclass predictors rebuilt field by field: class name → the dpadapt module defining it. A file
#: can only name one of these; the module is ours and imported by this fixed table, never by the file.
PREDICTOR_RECORDS = {
    "ClassStatsModel": "dpadapt.classstats.adapt",
    "ClassStatisticsClassifier": "dpadapt.alignment.prima",
    "SoundModel": "dpadapt.sound.receiver",
}


def _is_predictor_record(obj: Any) -> bool:
    name = type(obj).__name__
    return dataclasses.is_dataclass(obj) and PREDICTOR_RECORDS.get(name) == type(obj).__module__


def _save_predictor_record(o: Any, put: Put) -> dict[str, Any]:
    fields = {f.name: dump(getattr(o, f.name), put) for f in dataclasses.fields(o)}
    return {"type": type(o).__name__, "fields": fields}


def _load_predictor_record(s: dict[str, Any], get: Get) -> Any:
    import importlib

    module = PREDICTOR_RECORDS.get(s.get("type"))
    if module is None:
        raise ModelFileError(f"unknown predictor type {s.get('type')!r}")
    cls = getattr(importlib.import_module(module), s["type"])
    return cls(**{name: build(spec, get) for name, spec in s["fields"].items()})


register_kind(Kind("predictor-record", _is_predictor_record, _save_predictor_record, _load_predictor_record))


def _save_release_wrapper(o: Any, put: Put) -> dict[str, Any]:
    return {"release": put(np.frombuffer(o.release.to_bytes(), dtype=np.uint8))}


def _load_release_wrapper(s: dict[str, Any], get: Get) -> Any:
    from dpadapt.alignment.prima import PrimaVoteClassifier
    from dpadapt.release import Release

    return PrimaVoteClassifier(Release.from_bytes(get(s["release"]).tobytes(), "embedded release"))


register_kind(Kind("prima-vote", lambda o: type(o).__name__ == "PrimaVoteClassifier", _save_release_wrapper, _load_release_wrapper))


class TorchClassifier:
    """A torch network mapping rows to class logits, with ``classes``; what a DANN-family model predicts with."""

    def __init__(self, network: Any, classes: np.ndarray, n_features: int, architecture: str, params: dict[str, Any]) -> None:
        self.network_, self.classes_, self.n_features_in_ = network, np.asarray(classes), int(n_features)
        self.architecture, self.params = architecture, params
        network.eval()

    def decision_function(self, X) -> np.ndarray:
        """The network's logits: (n, K); for two classes (scikit-learn's shape) the 1-D ``z₁ − z₀``, > 0 exactly where
        ``predict`` picks ``classes_[1]``."""
        from dpadapt.base import binary_scores

        return binary_scores(self._logits(X))

    def _logits(self, X) -> np.ndarray:
        import torch

        from dpadapt.validation import check_fitted_features

        X = check_fitted_features(self, X, allow_sparse=True)
        X = X.toarray() if hasattr(X, "toarray") else X
        with torch.no_grad():
            out = [self.network_(torch.as_tensor(np.asarray(X[i : i + 2048], dtype=np.float32))).numpy()
                   for i in range(0, X.shape[0], 2048)]
        return np.concatenate(out) if out else np.zeros((0, len(self.classes_)))

    def predict_proba(self, X) -> np.ndarray:
        z = self._logits(X)
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self._logits(X), axis=1)]

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


def _dann_mlp(n_features: int, n_classes: int, hidden: list[int], activation: str) -> Any:
    from dpadapt.deep.dann import mlp_network

    return mlp_network(n_features, n_classes, tuple(hidden), activation)


register_architecture("dann-mlp", _dann_mlp)


register_architecture("dpswd-net", "dpadapt.deep.swd_publicmap:build_network")


def _is_dann_mlp(o: Any) -> bool:
    net = getattr(o, "network_", None)
    return (hasattr(o, "classes_") and net is not None and getattr(o, "network", None) is None
            and hasattr(net, "label_head") and hasattr(o, "hidden") and hasattr(o, "activation"))


def _save_torch(o: Any, put: Put) -> dict[str, Any]:
    state = {k: v for k, v in o.network_.state_dict().items() if not k.startswith("domain_head.")}
    if isinstance(o, TorchClassifier):
        architecture, params = o.architecture, o.params
    else:
        architecture = "dann-mlp"
        params = {"n_features": int(o.n_features_in_), "n_classes": len(o.classes_),
                  "hidden": [int(h) for h in o.hidden], "activation": str(o.activation)}
    return {"architecture": architecture, "params": params, "classes": put(np.asarray(o.classes_)),
            "state": {k: put(v.detach().cpu().numpy()) for k, v in state.items()}}


def _load_torch(s: dict[str, Any], get: Get) -> Any:
    import torch

    builder = _ARCHITECTURES.get(s["architecture"])
    if builder is None:
        raise ModelFileError(f"network architecture {s['architecture']!r} is not known to this dpadapt installation")
    if isinstance(builder, str):
        import importlib

        module, _, name = builder.partition(":")
        builder = getattr(importlib.import_module(module), name)
    net = builder(**s["params"])
    state = {k: torch.as_tensor(get(v)) for k, v in s["state"].items()}
    missing, unexpected = net.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith("domain_head.") for k in missing):
        raise ModelFileError(f"network weights do not fit architecture {s['architecture']!r}")
    return TorchClassifier(net, get(s["classes"]), s["params"]["n_features"], s["architecture"], s["params"])


register_kind(Kind("torch-classifier", lambda o: isinstance(o, TorchClassifier) or _is_dann_mlp(o), _save_torch, _load_torch))
