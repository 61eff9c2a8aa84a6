"""``dpadapt bench sound``: the matrix — every row × development and report pair × ε.

Rows come from :mod:`dpadapt.bench.suites.sound_rows` (sound designs, DP source-only baselines at
the same (ε, δ), non-private baselines); design and DP rows run at ε ∈ {1, 2, 4, 8} (``--epsilon``
overrides) and at ``epsilon=None`` (their noise-free pipeline, reported at ε = ∞). With ``--out`` the
suite also writes the markdown matrix (mean ± std over seeds, flags) and two heat maps
(:mod:`dpadapt.bench.suites.sound_report`). ``--quick``: two development pairs (GoogLeNet A→D, SURF C→W), ε ∈ {1, 8}.

A non-private row marked deterministic (1-NN, skada CORAL, skada OT mapping) gives the same model
for every seed; it is fitted once per pair and that value is recorded for each seed
(``reused_fit`` in the row). The Heart pairs (Cleveland ↔ Hungary) run where their public schema
(``examples/heart.schema.toml``, a file of the source checkout) and the raw tables are present.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite
from dpadapt.bench.suites.sound_report import write_report
from dpadapt.bench.suites.sound_rows import DEV_PAIRS, HEART_PAIRS, REPORT_PAIRS, ROWS, PairSpec, Problem, Row

EPSILONS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)
QUICK_EPSILONS: tuple[float, ...] = (1.0, 8.0)
QUICK_PAIRS: tuple[str, ...] = ("googlenet1024:A->D", "surf:C->W")

_REUSED: dict[tuple[str, str], float] = {}


def _mode(row: Row, epsilon: float | None) -> str:
    if row.kind == "non-private":
        return "non-private"
    return "noise-free" if epsilon is None else "sound"


def _runner(spec: PairSpec, row: Row, epsilon: float | None):
    def run(seed: int) -> RunOutcome:
        extra = {"split": spec.split, "kind": row.kind}
        key = (spec.task, row.name)
        if row.deterministic and key in _REUSED:
            return RunOutcome(_REUSED[key], extra={**extra, "reused_fit": True})
        pair = spec.load()
        delta = None if epsilon is None else spec.delta(len(pair.ys))
        problem = Problem(spec, pair.Xs, pair.ys, pair.Xt, tuple(range(pair.n_classes)), epsilon, delta, seed)
        model = row.fit(problem)
        value = float(np.mean(np.asarray(model.predict(pair.Xt_test)) == pair.yt_test))
        if row.deterministic:
            _REUSED[key] = value
        return RunOutcome(value, dict(getattr(model, "guarantees_", {}) or {}), extra)

    return run


def tasks_for(pairs: Sequence[PairSpec], epsilons: Sequence[float], rows: Sequence[Row] | None = None) -> list[BenchTask]:
    """The matrix's tasks: every row × pair × (ε list + None for design and DP rows; None alone otherwise)."""
    out = []
    for spec in pairs:
        n_s = None
        for row in rows if rows is not None else ROWS.values():
            eps_list: list[float | None] = [None] if row.kind == "non-private" else [*epsilons, None]
            for eps in eps_list:
                if eps is not None and n_s is None:
                    n_s = len(spec.load().ys)
                out.append(BenchTask(
                    suite="sound", task=spec.task, method=row.name, mode=_mode(row, eps),
                    run=_runner(spec, row, eps), epsilon=math.inf if eps is None else float(eps),
                    delta=None if eps is None else spec.delta(n_s), params={"split": spec.split, "kind": row.kind},
                ))
    return out


@register_suite("sound", "the sound matrix: sound designs vs DP and non-private source-only and skada baselines, dev + report pairs × ε",
                report=write_report)
def build(quick: bool, epsilons=None) -> list[BenchTask]:
    heart = [p for p in HEART_PAIRS if p.available()]  # needs the schema file of a source checkout
    pairs = [p for p in (*DEV_PAIRS, *heart, *REPORT_PAIRS) if not quick or p.task in QUICK_PAIRS]
    return tasks_for(pairs, tuple(epsilons) if epsilons else (QUICK_EPSILONS if quick else EPSILONS))
