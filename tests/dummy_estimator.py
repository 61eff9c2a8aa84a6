"""A dummy private estimator and CLI method for ``tests/test_attacks.py`` (test-only, never shipped).

:class:`DummyMeans` releases the source's per-class sums and counts of unit-ball rows as ONE Gaussian
(the class-statistics mechanism) and classifies by the nearest noisy class mean. Each ``defect`` flag
plants one of the breaks the attack suite must catch.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from dpadapt import api
from dpadapt.api import ConfigEstimator, param
from dpadapt.privacy.families.classstats import labelled_gaussian_plan
from dpadapt.privacy.mechanisms import CLASS_STATISTICS_SENSITIVITY, NoiseSource, class_sums, clip_rows, gaussian, random_streams
from dpadapt.release import Release
from dpadapt.validation import check_features, check_labels

DEFECTS = ("one_class_refused", "nan_passes", "refuses_zero_rows", "noise_from_seed", "understated_sensitivity", "n_in_release")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DummyConfig(api.Config):
    family = "dummy"
    relation: str = param("replace_one", choices=("replace_one", "add_remove"), help="neighbouring relation")
    one_class_refused: bool = param(False, choices=(False, True), help="defect: refuse a source holding one class")
    nan_passes: bool = param(False, choices=(False, True), help="defect: the target's rows are not checked")
    refuses_zero_rows: bool = param(False, choices=(False, True), help="defect: refuse a source row of zeros")
    noise_from_seed: bool = param(False, choices=(False, True), help="defect: noise from the public seed")
    understated_sensitivity: bool = param(False, choices=(False, True), help="defect: calibrate to Δ = 1, not 2")
    n_in_release: bool = param(False, choices=(False, True), help="defect: the release states n")


def release_statistics(c: DummyConfig, Xs, ys) -> Release:
    """The source's step: ONE Gaussian on the class sums and counts (with the planted defects)."""
    classes = c.required_classes()
    ys = check_labels(ys, Xs.shape[0], "ys", classes=None if c.one_class_refused else classes)
    if c.refuses_zero_rows and np.any(np.all(Xs == 0, axis=1)):
        raise ValueError("a source row is all zeros")
    true_sensitivity = CLASS_STATISTICS_SENSITIVITY[c.relation]
    stated = {c.relation: 1.0 if c.understated_sensitivity else true_sensitivity}
    sigma, guarantee = labelled_gaussian_plan(c.epsilon, c.resolved_delta(Xs.shape[0]), sensitivities=stated,
                                              theorem="dummy", classes=classes, party="source", relation=c.relation,
                                              extra_theorem="")
    _, noise = random_streams(c.random_state, reproducible_noise=c.reproducible_noise)
    if c.noise_from_seed:
        noise = NoiseSource(int(c.random_state or 0), reproducible=True)
    sums, counts = class_sums(clip_rows(Xs, 1.0), ys, len(classes))
    joint = gaussian(np.concatenate([sums.ravel(), counts]), sigma=sigma, sensitivity=stated[c.relation], noise=noise).value
    K, k = sums.shape
    params = {"classes": list(classes), "sigma": sigma, **({"n": int(Xs.shape[0])} if c.n_in_release else {})}
    return Release("dummy", "class_sums", "source", {"sums": joint[: K * k].reshape(K, k), "counts": joint[K * k:]},
                   guarantee, params)


class DummyMeans(ConfigEstimator):
    """Nearest noisy class mean (the target's rows are only checked)."""

    config_class = DummyConfig

    def fit_domains(self, Xs, ys, Xt, yt=None):
        self.config_ = c = self.make_config()
        Xs = check_features(Xs, "Xs")
        Xt = np.asarray(Xt, dtype=np.float64) if c.nan_passes else check_features(Xt, "Xt")
        self.release_ = release_statistics(c, Xs, ys)
        counts = np.maximum(self.release_["counts"], 1.0)
        self.centers_ = self.release_["sums"] / counts[:, None]
        if c.nan_passes:  # the defect: unchecked target rows shift the means
            self.centers_ = self.centers_ + np.mean(Xt, axis=0) * 1e-3
        self.classes_ = np.asarray(c.classes)
        self._set_guarantees(self.release_.guarantee)
        return self

    def predict_proba(self, X):
        d = -((np.asarray(X, dtype=float)[:, None, :] - self.centers_[None]) ** 2).sum(-1)
        e = np.exp(d - d.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def predict(self, X):
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def register_cli(name: str, **defects: bool):
    """Register ``dpadapt release NAME`` for the dummy release (a test plugin: ``--n-classes`` as the public label set)."""
    from dpadapt.cli.methods import AdaptOutcome, MethodCommands, PlannedRelease, register

    def add_release_arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("--n-classes", type=int, required=True)

    def plan_release(args, table) -> PlannedRelease:
        c = DummyConfig(epsilon=args.epsilon, delta=args.delta, classes=tuple(range(args.n_classes)), **defects)
        X = check_features(table.X, "source data")
        sigma_plan = labelled_gaussian_plan(c.epsilon, c.delta, sensitivities=CLASS_STATISTICS_SENSITIVITY, theorem="dummy",
                                            classes=c.classes, party="source", relation=c.relation, extra_theorem="")
        return PlannedRelease(sigma_plan[1], lambda: release_statistics(c, X, table.y))

    def adapt(args, table, releases) -> AdaptOutcome:
        raise ValueError("the dummy method has no adapt step")

    return register(MethodCommands(name=name, help="test dummy", add_release_arguments=add_release_arguments,
                                   plan_release=plan_release, add_adapt_arguments=lambda p: None, adapt=adapt,
                                   example_release_args=lambda files: ["--data", str(files["source"]), "--n-classes", "3"]))
