"""Where the real benchmark data lives and what each dataset holds."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

ENV_VAR = "DPADAPT_DATA"


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
    """One feature set of one benchmark: its name (also its folder under the data root) and its domains."""

    name: str
    domains: tuple[str, ...]
    n_classes: int
    description: str
    aliases: tuple[str, ...] = ()
    files: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def folder(self) -> str:
        return self.name

    def file(self, domain: str) -> str:
        return self.files.get(domain, f"{domain}.npz")


DATASETS: dict[str, DatasetInfo] = {
    info.name: info
    for info in (
        DatasetInfo(
            "office_caltech10/surf",
            ("amazon", "caltech", "dslr", "webcam"),
            10,
            "Office-Caltech10, 800-bin SURF bag-of-visual-words counts (Gong et al. 2012)",
            aliases=("surf", "office-surf"),
        ),
        DatasetInfo(
            "office_caltech10/decaf6",
            ("dslr", "webcam"),
            10,
            "Office-Caltech10, DeCAF6 fc6 activations (4096-d, unnormalised; amazon/caltech not available)",
            aliases=("decaf6", "decaf", "office-decaf6"),
        ),
        DatasetInfo(
            "office_caltech10/googlenet1024",
            ("amazon", "dslr", "webcam"),
            10,
            "Office-Caltech10, GoogLeNet 1024-d pooled features (caltech not available)",
            aliases=("googlenet", "googlenet1024", "office-googlenet"),
        ),
        DatasetInfo(
            "amazon_reviews/bow5000",
            ("books", "dvd", "electronics", "kitchen"),
            2,
            "Amazon reviews, 5000-d bag-of-words counts, 2000 train rows then test rows (sparse CSR)",
            aliases=("bow5000", "amazon", "amazon-bow5000"),
        ),
        DatasetInfo(
            "amazon_reviews/msda400",
            ("books", "dvd", "electronics", "kitchen"),
            2,
            "Amazon reviews, 400-d L1-normalised term frequencies (~2000 rows per domain)",
            aliases=("msda400", "amazon-msda400"),
        ),
        DatasetInfo(
            "mnist_usps",
            ("mnist", "usps"),
            10,
            "MNIST 28×28 (60000/10000) and USPS 16×16 (7291/2007), pixels in [0, 1]",
            aliases=("digits", "mnist-usps"),
        ),
        DatasetInfo(
            "mnist_usps/jda_protocol",
            ("mnist", "usps"),
            10,
            "JDA protocol: 2000 MNIST and 1800 USPS digits at 16×16",
            aliases=("digits-jda", "jda"),
            files={"mnist": "mnist_2000.npz", "usps": "usps_1800.npz"},
        ),
    )
}

#: Amazon domain abbreviations used in the papers' tables.
AMAZON_SHORT = {"B": "books", "D": "dvd", "E": "electronics", "K": "kitchen", "BK": "books", "DV": "dvd", "EL": "electronics", "KT": "kitchen"}
#: Office-Caltech domain abbreviations.
OFFICE_SHORT = {"A": "amazon", "C": "caltech", "D": "dslr", "W": "webcam"}


def dataset_info(name: str) -> DatasetInfo:
    """Look a dataset up by canonical name or alias."""
    if name in DATASETS:
        return DATASETS[name]
    for info in DATASETS.values():
        if name in info.aliases:
            return info
    known = ", ".join(sorted(DATASETS))
    raise KeyError(f"unknown dataset {name!r}; known: {known} (aliases: surf, decaf6, googlenet, bow5000, msda400, digits, digits-jda)")


def _candidate_roots() -> list[Path]:
    here = Path(__file__).resolve()
    roots = []
    for base in [Path.cwd(), *Path.cwd().parents, *here.parents]:
        roots.append(base / "shared" / "data")
        roots.append(base.parent / "shared" / "data")
    return roots


def find_data_root(root: str | os.PathLike | None = None, required: bool = True) -> Path | None:
    """The folder holding the benchmarks.

    Order: the ``root`` argument, then ``$DPADAPT_DATA``, then a ``shared/data`` folder found
    beside the working directory, the installed package, or one of their parents.
    """
    if root is not None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"data root {path} does not exist")
        return path
    env = os.environ.get(ENV_VAR)
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"${ENV_VAR}={env} does not exist")
        return path
    for candidate in _candidate_roots():
        if candidate.is_dir():
            return candidate
    if required:
        raise FileNotFoundError(
            "benchmark data not found: pass root=..., set $DPADAPT_DATA, or download the originals with "
            "`dpadapt datasets fetch NAME --root DIR`"
        )
    return None


def available_datasets(root: str | os.PathLike | None = None) -> dict[str, tuple[str, ...]]:
    """Datasets (and their domains) present under the data root."""
    base = find_data_root(root, required=False)
    if base is None:
        return {}
    out = {}
    for info in DATASETS.values():
        present = tuple(d for d in info.domains if (base / info.folder / info.file(d)).is_file())
        if present:
            out[info.name] = present
    return out
