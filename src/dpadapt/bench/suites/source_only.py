"""Source-only baselines: train on the labelled source, test on the target.

Non-private logistic regression / MLP, and the DP source-only baselines (``dp-ncm``: DP nearest class
mean; ``dp-logreg``: noisy full-batch GD) at ε ∈ {2, 20}, δ = 1/(1.2 n_s) on the DeCAF6 pairs — the
reference a sound adaptation method must beat at the same (ε, δ); full suite only.
"""

from __future__ import annotations

from dpadapt.classstats import DPLogisticRegression, DPNearestClassMean
from dpadapt.bench.common import amazon_pairs, cached_pair, source_only_runner, task_name
from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite


def _dp_runner(dataset: str, source: str, target: str, estimator, eps: float):
    def run(seed: int) -> RunOutcome:
        pair = cached_pair(dataset, source, target)
        model = estimator(epsilon=eps, delta=1.0 / (1.2 * len(pair.ys)), classes=tuple(range(pair.n_classes)),
                          random_state=seed).fit_domains(pair.Xs, pair.ys)
        return RunOutcome(model.score(pair.Xt_test, pair.yt_test), dict(model.guarantees_))

    return run


@register_suite("source-only", "Source-only logistic regression and MLP on Office-Caltech DeCAF6 D↔W and the 12 Amazon pairs")
def build(quick: bool, epsilons=None) -> list[BenchTask]:
    office = [("decaf6", "dslr", "webcam"), ("decaf6", "webcam", "dslr")]
    amazon = [("bow5000", s, t) for s, t in amazon_pairs()]
    pairs = office if quick else office + amazon  # quick: the two DeCAF6 pairs (seconds, not minutes)
    heads = ("logreg",) if quick else ("logreg", "mlp")
    dp = [
        BenchTask(suite="source-only", task=task_name(ds, s, t), method=name, mode="sound",
                  run=_dp_runner(ds, s, t, est, eps), epsilon=eps,
                  delta=1.0 / (1.2 * len(cached_pair(ds, s, t).ys)))
        for ds, s, t in office
        for name, est in (("dp-ncm", DPNearestClassMean), ("dp-logreg", DPLogisticRegression))
        for eps in (2.0, 20.0)
    ] if not quick else []  # quick: the non-private rows only (the dpot quick suite has the DP rows)
    return dp + [
        BenchTask(
            suite="source-only",
            task=task_name(ds, s, t),
            method=f"source-only-{head}",
            mode="non-private",
            run=source_only_runner(ds, s, t, head),
        )
        for ds, s, t in pairs
        for head in heads
    ]
