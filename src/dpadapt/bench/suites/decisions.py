"""``dpadapt bench decisions``: calibration, the target's prevalence and decision rules.

One task per pair × estimator × ε (PhysioNet 2012 unit pairs, the four three-units → one-unit cases, the Heart
pairs where present, and :data:`SYNTHETIC_PAIRS`, a synthetic family with a known, swept prior shift). A run fits the
estimator on the source with the receiver's unlabelled rows, then scores on the target rows (labels for
scoring only), for every candidate of ``benchmarks/decisions/README.md``: calibration (SoundDA: the
stated temperature or the released scores) × prevalence estimator (EM, mean posterior, source prior). Per
candidate: the estimated positive rate with its 90 % interval, ROC-AUC, calibration slope and ECE at the
estimated prior, the mean predicted probability, balanced accuracy of the balanced rule against the best
threshold on the same scores (an oracle, for measurement only), accuracy of ``predict`` (the Bayes rule at
the estimated prior) against the best accuracy. ``value``: the balanced rule's balanced accuracy with the
defaults. With ``--out`` the report writes ``decisions-*.md`` tables and ``reliability.png``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Sequence

import numpy as np
from scipy.special import logsumexp

from dpadapt import prevalence as prev
from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite
from dpadapt.bench.suites.sound_rows import (HEART_PAIRS, PHYSIONET, PHYSIONET_PAIRS, PHYSIONET_UNITS, ROWS, PairSpec,
                                              Problem, _physionet_unit)
from dpadapt.datasets import DomainPair
from dpadapt.metrics import calibration_line, expected_calibration_error, roc_auc

EPSILONS: tuple[float, ...] = (1.0, 4.0)
ESTIMATORS: tuple[str, ...] = ("sound", "sound-scores", "dpot-cs", "dp-ncm", "dp-lr", "dp-lsq", "source-only")
#: The score release's candidates the task's ``value`` and reliability report (its selection: the report).
SCORE_CALIBRATION, SCORE_PREVALENCE = "platt", "gated"
PREVALENCE = prev.METHODS
N_BOOT = 100
#: The key under which a ``sound`` run records the default model's own probabilities (the stated temperature, the
#: target scale of :data:`dpadapt.sound.calibrate.TARGET_SCALE`, at its prevalence estimate): ``default|default|…``.
DEFAULT_MODEL = PREVALENCE_OF_DEFAULT = "default"

#: The synthetic family: two classes of ``SYNTHETIC_D``-dimensional unit-variance Gaussians whose means are
#: ``SYNTHETIC_SEPARATION`` apart (Mahalanobis; ROC-AUC of the Bayes posterior Φ(Δ/√2) ≈ 0.92), the same in
#: source and target (pure label shift: the Bayes posterior at the target's prior is calibrated by construction).
#: Source: ``SYNTHETIC_N`` rows at positive rate ``SYNTHETIC_SOURCE_RATE``; target: ``SYNTHETIC_N`` rows at each
#: rate of ``SYNTHETIC_TARGET_RATES``. The rows are drawn once per pair from a public seed (fresh noise per run).
SYNTHETIC = "synthetic"
SYNTHETIC_D, SYNTHETIC_SEPARATION, SYNTHETIC_N, SYNTHETIC_SOURCE_RATE = 10, 2.0, 2000, 0.3
SYNTHETIC_TARGET_RATES: tuple[float, ...] = (0.02, 0.05, 0.1, 0.2, 0.4, 0.6)
SYNTHETIC_SEED = 36


@dataclasses.dataclass(frozen=True)
class SyntheticShift(PairSpec):
    """A pair of the synthetic family: source rate ``source``, target rate ``target`` (decimal strings)."""

    @property
    def task(self) -> str:
        return f"{SYNTHETIC}:{self.source}->{self.target}"

    def available(self) -> bool:
        return True

    def load(self) -> DomainPair:
        return _synthetic_pair(float(self.source), float(self.target))


@functools.lru_cache(maxsize=8)
def _synthetic_pair(source_rate: float, target_rate: float) -> DomainPair:
    rng = np.random.default_rng([SYNTHETIC_SEED, round(1000 * source_rate), round(1000 * target_rate)])
    mu = np.full(SYNTHETIC_D, SYNTHETIC_SEPARATION / 2.0 / math.sqrt(SYNTHETIC_D))

    def draw(rate: float) -> tuple[np.ndarray, np.ndarray]:
        y = (rng.random(SYNTHETIC_N) < rate).astype(np.int64)
        return rng.normal(size=(SYNTHETIC_N, SYNTHETIC_D)) + np.where(y[:, None] == 1, mu, -mu), y

    (Xs, ys), (Xt, yt) = draw(source_rate), draw(target_rate)
    return DomainPair(Xs=Xs, ys=ys, Xt=Xt, yt=yt, Xt_test=Xt, yt_test=yt, name=f"{source_rate}->{target_rate}",
                      dataset=SYNTHETIC, n_classes=2)


SYNTHETIC_PAIRS: tuple[PairSpec, ...] = tuple(SyntheticShift(SYNTHETIC, f"{SYNTHETIC_SOURCE_RATE:g}", f"{r:g}", "dev")
                                              for r in SYNTHETIC_TARGET_RATES)


@dataclasses.dataclass(frozen=True)
class PooledUnits(PairSpec):
    """PhysioNet 2012: the three other units' rows pooled as one source (``source`` = "a+b+c") → one unit."""

    def available(self) -> bool:
        return all(PairSpec(PHYSIONET, u, self.target, self.split).available() for u in self.source.split("+"))

    def load(self) -> DomainPair:
        return _pooled_pair(self.source, self.target)


@functools.lru_cache(maxsize=4)
def _pooled_pair(sources: str, target: str) -> DomainPair:
    parts = [_physionet_unit(u) for u in sources.split("+")]
    t = _physionet_unit(target)
    Xs = np.vstack([np.asarray(p.X) for p in parts])
    ys = np.concatenate([np.asarray(p.y) for p in parts])
    return DomainPair(Xs=Xs, ys=ys, Xt=t.X, yt=t.y, Xt_test=t.X, yt_test=t.y, name=f"{sources}->{target}",
                      dataset=PHYSIONET, n_classes=2)


#: The four three-units → one-unit cases of PhysioNet 2012 (development).
POOLED_PAIRS: tuple[PairSpec, ...] = tuple(PooledUnits(PHYSIONET, "+".join(u for u in PHYSIONET_UNITS if u != t), t, "dev")
                                           for t in PHYSIONET_UNITS)


def source_probabilities(model, X) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Calibration candidate → (probabilities under the source prior, that prior) of a fitted model."""
    from dpadapt.decision import source_prior_of

    inner = getattr(model, "model_", None)
    details = getattr(inner, "details", None)
    if isinstance(details, dict) and "source_prior" in details:  # a SoundModel: undo the target prior, and the temperature
        s = np.asarray(inner.decision_function(X))
        log_prior = np.log(np.asarray(details["source_prior"]))
        t = float(details.get("temperature", 1.0)) if details.get("temperature_applied") else 1.0
        out = {"temperature": s, "none": (s - log_prior) / t + log_prior}
        return {c: (np.exp(v - logsumexp(v, axis=1, keepdims=True)), np.exp(log_prior)) for c, v in out.items()}
    P = np.asarray(model.predict_proba(X), dtype=np.float64)
    own = source_prior_of(model, P.shape[1])  # none recorded: the prevalence the model implies (as DecisionRule)
    return {"none": (P, prev.normalised(P.mean(axis=0) if own is None else own))}


def best_threshold_scores(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """The best balanced accuracy and the best accuracy over every threshold on ``p`` (an oracle)."""
    order = np.argsort(-p, kind="stable")
    ys = y[order]
    tp = np.concatenate([[0], np.cumsum(ys)])
    fp = np.concatenate([[0], np.cumsum(1 - ys)])
    distinct = np.concatenate([[True], np.diff(p[order]) != 0, [True]])  # cut only between distinct scores
    P, N = max(ys.sum(), 1), max((1 - ys).sum(), 1)
    tpr, tnr = tp / P, (N - fp) / N
    ba = (0.5 * (tpr + tnr))[distinct]
    acc = ((tp + (N - fp)) / y.size)[distinct]
    return float(ba.max()), float(acc.max())


def candidate_metrics(y: np.ndarray, P: np.ndarray, source_prior: np.ndarray, method: str,
                      est: prev.Prevalence | None = None) -> dict[str, float]:
    est = prev.estimate(P, source_prior, method=method, n_boot=N_BOOT) if est is None else est
    Pt = prev.shift(P, source_prior, est.prior)
    p = Pt[:, 1]
    slope, intercept = calibration_line(y, p)
    pi = float(est.prior[1])
    balanced = (p >= pi).astype(int)
    bayes = (p >= 0.5).astype(int)
    sens = float(np.mean(balanced[y == 1])) if (y == 1).any() else math.nan
    spec = float(np.mean(1 - balanced[y == 0])) if (y == 0).any() else math.nan
    best_ba, best_acc = best_threshold_scores(y, p)
    true = float(np.mean(y))
    return {"prevalence": pi, "low": float(est.low[1]), "high": float(est.high[1]), "true_rate": true,
            "abs_error": abs(pi - true), "covered": float(est.low[1] <= true <= est.high[1]),
            "auc": roc_auc(y, p), "slope": slope, "intercept": intercept, "ece": expected_calibration_error(y, p),
            "mean_p": float(p.mean()), "balanced_ba": 0.5 * (sens + spec), "sensitivity": sens, "specificity": spec,
            "best_ba": best_ba, "accuracy": float(np.mean(bayes == y)), "best_accuracy": best_acc}


def reliability(y: np.ndarray, p: np.ndarray, bins: int = 10) -> list[list[float]]:
    """Per equal-width bin: [count, mean predicted, observed rate] (for the figure)."""
    idx = np.clip((p * bins).astype(int), 0, bins - 1)
    return [[float((idx == b).sum()), float(p[idx == b].mean()) if (idx == b).any() else math.nan,
             float(y[idx == b].mean()) if (idx == b).any() else math.nan] for b in range(bins)]


#: The second, calibrating release (``dpadapt.sound.scores``): SoundDA with this share of the budget for the per-class
#: score histograms and this many bins — fixed before the run, not chosen (``benchmarks/decisions/README.md``).
SCORE_SHARE = 0.2
SCORE_BINS = 10


def _sound_scores(p: Problem):
    from dpadapt.sound import SoundDA

    return SoundDA(**{**p.dp_kwargs(), "feature_type": "auto", "score_share": SCORE_SHARE,
                      "score_bins": SCORE_BINS}).fit_domains(p.Xs, p.ys, p.Xt)


def score_release_metrics(model, X, y: np.ndarray) -> dict[str, float]:
    """Every candidate of the score release (calibration × prevalence, :mod:`dpadapt.sound.scores`) on the scored rows
    ``X`` (their labels ``y`` for scoring only), its interval with the release noise."""
    from dpadapt.sound import scores

    rels = model.releases_
    req = scores.ScoreRequest.from_release(next(r for r in rels if r.kind == scores.REQUEST_KIND), X.shape[1])
    H = scores.combine(req, rels)
    Z = req.model().row_map()(X)
    first_prior = np.asarray(model.model_.details["statistics_source_prior"])
    bins = req.bins(X)
    out = dict(zip(("gate|residual", "gate|null"), scores.gate(H, np.bincount(bins, minlength=H.counts.shape[1]))))
    for cal in scores.CALIBRATIONS:
        for method in (m for m in scores.PREVALENCES if m != "gated"):  # "gated" is rebuilt from the rows (its gate above)
            W, b, prior, _, est = scores.estimate(req, H, Z, bins, first_prior, calibration=cal, method=method,
                                                  n_boot=N_BOOT)
            P = scores.posteriors(W, b, Z)
            fixed = prev.Prevalence(np.asarray(est["prior"]), np.asarray(est["low"]), np.asarray(est["high"]), 0.9,
                                    method, prior)
            for key, v in candidate_metrics(y, P, prior, method, fixed).items():
                out[f"{cal}|{method}|{key}"] = v
            out[f"{cal}|{method}|residual"], out[f"{cal}|{method}|separation"] = est["residual"], est["separation"]
        picked = f"{cal}|{scores.gated_choice(out['gate|residual'], out['gate|null'])}|"  # "gated" at its public τ
        out.update({f"{cal}|gated|{k[len(picked):]}": v for k, v in list(out.items()) if k.startswith(picked)})
    return out


def _runner(spec: PairSpec, estimator: str, epsilon: float | None):
    def run(seed: int) -> RunOutcome:
        pair = spec.load()
        delta = None if epsilon is None else spec.delta(len(pair.ys))
        problem = Problem(spec, pair.Xs, pair.ys, pair.Xt, tuple(range(pair.n_classes)), epsilon, delta, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = _sound_scores(problem) if estimator == "sound-scores" else ROWS[estimator].fit(problem)
        y = np.asarray(pair.yt_test)
        extra: dict = {"estimator": estimator}
        if estimator == "sound-scores":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                extra.update(score_release_metrics(model, pair.Xt_test, y))
            default = f"{SCORE_CALIBRATION}|{SCORE_PREVALENCE}|"
            extra["reliability"] = reliability(y, model.predict_proba(pair.Xt_test)[:, 1])
            return RunOutcome(extra[default + "balanced_ba"], dict(getattr(model, "guarantees_", {}) or {}), extra)
        for cal, (P, src) in source_probabilities(model, pair.Xt_test).items():
            for method in PREVALENCE:
                for key, v in candidate_metrics(y, P, src, method).items():
                    extra[f"{cal}|{method}|{key}"] = v
        default = "temperature" if estimator == "sound" else "none"
        P, src = source_probabilities(model, pair.Xt_test)[default]
        est = prev.estimate(P, src, method=prev.DEFAULT, n_boot=0)
        extra["reliability"] = reliability(y, prev.shift(P, src, est.prior)[:, 1])
        stated = getattr(getattr(model, "model_", None), "details", {}).get("prevalence")
        if estimator == "sound" and stated is not None:  # the default model itself (target scale included), at its prior
            Pd = np.asarray(model.predict_proba(pair.Xt_test), dtype=np.float64)
            fixed = prev.Prevalence(*(np.asarray(stated[k]) for k in ("prior", "low", "high")), stated["level"],
                                    stated["method"], np.asarray(stated["prior"]))
            for key, v in candidate_metrics(y, Pd, fixed.prior, stated["method"], fixed).items():
                extra[f"{DEFAULT_MODEL}|{PREVALENCE_OF_DEFAULT}|{key}"] = v
            extra["reliability"] = reliability(y, Pd[:, 1])
        elif estimator != "sound":  # the tables' column for the default model: a baseline at the default estimator
            tag = f"none|{prev.DEFAULT}|"
            extra.update({f"none|{PREVALENCE_OF_DEFAULT}|{k[len(tag):]}": v for k, v in list(extra.items()) if k.startswith(tag)})
        return RunOutcome(extra[f"{default}|em|balanced_ba"], dict(getattr(model, "guarantees_", {}) or {}), extra)

    return run


def tasks_for(pairs: Sequence[PairSpec], epsilons: Sequence[float], estimators: Sequence[str] = ESTIMATORS) -> list[BenchTask]:
    out = []
    for spec in pairs:
        for name in estimators:
            private = name == "sound-scores" or ROWS[name].kind != "non-private"
            for eps in ([*epsilons, None] if private else [None]):
                out.append(BenchTask(
                    suite="decisions", task=spec.task, method=name,
                    mode="non-private" if not private else ("noise-free" if eps is None else "sound"),
                    run=_runner(spec, name, eps), epsilon=math.inf if eps is None else float(eps),
                    delta=None, metric="balanced_accuracy"))
    return out


def _write_report(rows, out):
    from dpadapt.bench.suites.decisions_report import write_report

    return write_report(rows, out)


def write_report_for(rows, out):
    """The suite's tables for a slice of it (``benchmarks/decisions/run_decisions.py``), at the chosen defaults."""
    from dpadapt.bench.suites.decisions_report import write_report
    from dpadapt.sound.calibrate import CALIBRATION, PREVALENCE, TARGET_SCALE

    if TARGET_SCALE != "none" and any(f"{DEFAULT_MODEL}|{PREVALENCE_OF_DEFAULT}|slope" in r for r in rows):
        return write_report(rows, out, selected=(DEFAULT_MODEL, PREVALENCE_OF_DEFAULT))
    return write_report(rows, out, selected=(CALIBRATION, PREVALENCE))


def all_pairs() -> list[PairSpec]:
    """Every pair of the suite that can be loaded here."""
    return [p for p in (*PHYSIONET_PAIRS, *HEART_PAIRS, *POOLED_PAIRS, *SYNTHETIC_PAIRS) if p.available()]


@register_suite("decisions", "calibration, target prevalence with interval, decision rules vs an oracle threshold "
                "(PhysioNet 2012 pairs and 3 → 1 cases, Heart, a synthetic known-shift family)", report=_write_report)
def build(quick: bool, epsilons=None) -> list[BenchTask]:
    pairs = all_pairs()
    if quick:
        pairs = pairs[:2]
    return tasks_for(pairs, tuple(epsilons) if epsilons else ((1.0,) if quick else EPSILONS))
