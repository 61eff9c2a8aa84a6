"""Real benchmark loaders, data-root discovery and domain-pair helpers."""

from dpadapt.datasets.catalog import DATASETS, available_datasets, dataset_info, find_data_root
from dpadapt.datasets.loaders import Domain, DomainPair, load_domain, load_pair, parse_task, resize_images

__all__ = [
    "DATASETS",
    "Domain",
    "DomainPair",
    "available_datasets",
    "dataset_info",
    "find_data_root",
    "load_domain",
    "load_pair",
    "parse_task",
    "resize_images",
]
