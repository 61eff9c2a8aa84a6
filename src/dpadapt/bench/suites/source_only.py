"""Source-only baselines: train on the labelled source, test on the target."""

from __future__ import annotations

from dpadapt.baselines import SourceOnly
from dpadapt.bench.common import amazon_pairs, cached_pair, task_name
from dpadapt.bench.registry import BenchTask, RunOutcome, register_suite


def _runner(dataset: str, source: str, target: str, head: str):
    def run(seed: int) -> RunOutcome:
        pair = cached_pair(dataset, source, target)
        model = SourceOnly(head=head, random_state=seed).fit_domains(pair.Xs, pair.ys)
        return RunOutcome(model.score(pair.Xt_test, pair.yt_test))

    return run


@register_suite("source-only", "Source-only logistic regression and MLP on Office-Caltech DeCAF6 D↔W and the 12 Amazon pairs")
def build(quick: bool, epsilons=None) -> list[BenchTask]:
    office = [("decaf6", "dslr", "webcam"), ("decaf6", "webcam", "dslr")]
    amazon = [("bow5000", s, t) for s, t in amazon_pairs()]
    pairs = office + (amazon[:2] if quick else amazon)
    heads = ("logreg",) if quick else ("logreg", "mlp")
    return [
        BenchTask(
            suite="source-only",
            task=task_name(ds, s, t),
            method=f"source-only-{head}",
            mode="non-private",
            run=_runner(ds, s, t, head),
        )
        for ds, s, t in pairs
        for head in heads
    ]
