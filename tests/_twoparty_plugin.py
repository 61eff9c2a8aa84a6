"""Test-only method plugin "noisy-mean" for the generic two-party driver (never shipped in src).

Release (source): per-class sums of rows clipped to ℓ2 norm C, and per-class counts, all with one
Gaussian noise draw. Under add/remove of one record, one class's sum moves by ≤ C and its count
by 1, so the ℓ2 sensitivity of the concatenation is sqrt(C² + 1); the noise multiplier is
calibrated with the RDP accountant (Gaussian mechanism; Mironov 2017).

Adapt (target): noisy class centroids, translated by (target mean − noisy source mean), then a
nearest-centroid classifier. Optional return leg (``--return-mean``): the target releases its own
noisy clipped mean (Gaussian, sensitivity C under replace-one with n public: 2C/n).

Loaded through ``$DPADAPT_PLUGINS=_twoparty_plugin`` with ``tests/`` on ``PYTHONPATH``.
``$NOISY_MEAN_TRACE`` (a file) gets one line each time noise is drawn.
"""

from __future__ import annotations

import argparse
import math
import os

import numpy as np

from dpadapt import modelio
from dpadapt.cli.methods import AdaptOutcome, MethodCommands, PlannedRelease, register
from dpadapt.io import Table
from dpadapt.privacy import accounting
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.mechanisms import clip_rows
from dpadapt.release import Release

NAME = "noisy-mean"


def _dense(X) -> np.ndarray:
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)


def _trace(what: str) -> None:
    path = os.environ.get("NOISY_MEAN_TRACE")
    if path:
        with open(path, "a") as fh:
            fh.write(what + "\n")


def add_release_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clip", type=float, default=8.0, help="public ℓ2 clipping bound C of the rows")
    p.add_argument("--in-the-clear", action="store_true", help="release the exact class sums (no noise, no guarantee)")


def plan_release(args: argparse.Namespace, table: Table) -> PlannedRelease:
    if table.y is None:
        raise ValueError("noisy-mean needs labelled source data")
    X = clip_rows(_dense(table.X), args.clip)
    y = np.asarray(table.y, dtype=np.int64)
    k = int(y.max()) + 1
    if args.in_the_clear:
        g = Guarantee.non_private("source", "exact class sums, no noise")
        sums = np.stack([X[y == c].sum(axis=0) for c in range(k)])
        return PlannedRelease(g, lambda: Release(NAME, "class_sums", "source", {"sums": sums, "counts": np.bincount(y, minlength=k)}, g))
    sensitivity = math.sqrt(args.clip**2 + 1.0)
    z = accounting.calibrate_noise_multiplier(accounting.gaussian_event, args.epsilon, args.delta, "add_remove", "rdp")
    guarantee = Guarantee.from_event(
        accounting.gaussian_event(z),
        party="source",
        unit="record",
        relation="add_remove",
        delta=args.delta,
        theorem="Gaussian mechanism, RDP (Mironov 2017)",
        sensitivity=sensitivity,
        details={"clip": args.clip, "sigma": z * sensitivity},
    )

    def execute() -> Release:
        _trace("source noise")
        rng = np.random.default_rng(args.seed)
        sums = np.stack([X[y == c].sum(axis=0) for c in range(k)])
        counts = np.bincount(y, minlength=k).astype(np.float64)
        sigma = z * sensitivity
        return Release(
            method=NAME,
            kind="class_sums",
            owner="source",
            arrays={"sums": sums + rng.normal(scale=sigma, size=sums.shape), "counts": counts + rng.normal(scale=sigma, size=k)},
            guarantee=guarantee,
            params={"clip": args.clip},
        )

    return PlannedRelease(guarantee, execute)


class ShiftedCentroids:
    """Nearest centroid after translating the source centroids to the target mean."""

    def __init__(self, centroids: np.ndarray) -> None:
        self.centroids = centroids

    def predict(self, X) -> np.ndarray:
        X = _dense(X)
        d = ((X[:, None, :] - self.centroids[None, :, :]) ** 2).sum(axis=2)
        return d.argmin(axis=1)

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))


# How the model is saved without pickle (only its centroids) and rebuilt (see dpadapt.modelio).
modelio.register_kind(modelio.Kind(
    "noisy-mean-centroids",
    matches=lambda m: isinstance(m, ShiftedCentroids),
    save=lambda m, put: {"centroids": put(m.centroids)},
    load=lambda spec, get: ShiftedCentroids(get(spec["centroids"])),
))


def add_adapt_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--return-mean", action="store_true", help="release the target's noisy mean back to the source")
    p.add_argument("--clip", type=float, default=8.0)


def adapt(args: argparse.Namespace, table: Table, releases: list[Release]) -> AdaptOutcome:
    (r,) = releases
    counts = np.maximum(r["counts"], 1.0)
    centroids = r["sums"] / counts[:, None]
    source_mean = r["sums"].sum(axis=0) / max(r["counts"].sum(), 1.0)
    Xt = clip_rows(_dense(table.X), r.params["clip"])
    model = ShiftedCentroids(centroids + (Xt.mean(axis=0) - source_mean))
    metrics = {}
    if table.y is not None:
        metrics["target_accuracy"] = float(np.mean(model.predict(table.X) == table.y))
    back = None
    if args.return_mean:
        if args.epsilon is None or args.delta is None:
            raise ValueError("--return-mean needs --epsilon and --delta")
        n = Xt.shape[0]
        sensitivity = 2.0 * args.clip / n
        z = accounting.calibrate_noise_multiplier(accounting.gaussian_event, args.epsilon, args.delta, "replace_one", "rdp")
        g = Guarantee.from_event(
            accounting.gaussian_event(z), party="target", unit="record", relation="replace_one", delta=args.delta,
            theorem="Gaussian mechanism, RDP (Mironov 2017)", sensitivity=sensitivity,
        )
        mean = clip_rows(_dense(table.X), args.clip).mean(axis=0)

        def execute() -> Release:
            _trace("target noise")
            rng = np.random.default_rng(args.seed)
            return Release(NAME, "target_mean", "target", {"mean": mean + rng.normal(scale=z * sensitivity, size=mean.shape)}, g)

        back = PlannedRelease(g, execute)
    return AdaptOutcome(model=model, metrics=metrics, return_release=back)


register(MethodCommands(NAME, "test-only: noisy class means", add_release_arguments, plan_release, add_adapt_arguments, adapt))
