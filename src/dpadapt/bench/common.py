"""Helpers shared by the benchmark suites: cached task data and the standard task lists."""

from __future__ import annotations

import functools
import itertools

from dpadapt.datasets import DomainPair, available_datasets, dataset_info, load_pair

AMAZON_DOMAINS = ("books", "dvd", "electronics", "kitchen")
AMAZON_ABBREV = {"books": "B", "dvd": "D", "electronics": "E", "kitchen": "K"}
OFFICE_ABBREV = {"amazon": "A", "caltech": "C", "dslr": "D", "webcam": "W"}


@functools.lru_cache(maxsize=32)
def cached_pair(dataset: str, source: str, target: str, resize: int | None = None) -> DomainPair:
    """:func:`dpadapt.datasets.load_pair`, cached across the runs of a suite."""
    return load_pair(dataset, source, target, resize=resize)


def task_name(dataset: str, source: str, target: str) -> str:
    """Short row label, e.g. ``decaf6:D->W`` or ``bow5000:K->D``."""
    info = dataset_info(dataset)
    abbrev = AMAZON_ABBREV if info.n_classes == 2 else OFFICE_ABBREV
    short = info.name.split("/")[-1]
    return f"{short}:{abbrev.get(source, source)}->{abbrev.get(target, target)}"


def domain_pairs(dataset: str) -> list[tuple[str, str]]:
    """All ordered (source, target) pairs of the domains present for ``dataset``."""
    present = available_datasets().get(dataset_info(dataset).name, ())
    return list(itertools.permutations(present, 2))


def amazon_pairs() -> list[tuple[str, str]]:
    """The 12 ordered Amazon pairs."""
    return list(itertools.permutations(AMAZON_DOMAINS, 2))


def source_only_runner(dataset: str, source: str, target: str, head: str):
    """A run of non-private source-only ``head`` on the pair: target test accuracy."""
    from dpadapt.baselines import SourceOnly
    from dpadapt.bench.registry import RunOutcome

    def run(seed: int) -> RunOutcome:
        pair = cached_pair(dataset, source, target)
        model = SourceOnly(head=head, random_state=seed).fit_domains(pair.Xs, pair.ys)
        return RunOutcome(model.score(pair.Xt_test, pair.yt_test))

    return run
