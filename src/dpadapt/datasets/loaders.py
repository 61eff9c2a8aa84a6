"""Loaders for the real benchmarks (formats as in each folder's MANIFEST.md)."""

from __future__ import annotations

import dataclasses
import os
from typing import Literal

import numpy as np
import scipy.sparse as sp

from dpadapt.datasets.catalog import AMAZON_SHORT, OFFICE_SHORT, dataset_info, find_data_root

Split = Literal["all", "train", "test"]


@dataclasses.dataclass
class Domain:
    """The rows of one domain: features (dense or CSR), integer labels, and a name."""

    X: np.ndarray | sp.csr_matrix
    y: np.ndarray
    name: str
    dataset: str

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]


@dataclasses.dataclass
class DomainPair:
    """A source → target task.

    ``Xs, ys``: labelled source rows. ``Xt``: target rows available for adaptation (labels
    ``yt`` kept only for evaluation). ``Xt_test, yt_test``: held-out target rows where the
    protocol has them (Amazon), else the same rows as ``Xt`` (transductive Office protocol).
    """

    Xs: np.ndarray | sp.csr_matrix
    ys: np.ndarray
    Xt: np.ndarray | sp.csr_matrix
    yt: np.ndarray
    Xt_test: np.ndarray | sp.csr_matrix
    yt_test: np.ndarray
    name: str
    dataset: str
    n_classes: int

    def to_skada(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``X, y, sample_domain`` in skada's convention (source 1, target −2 with y = −1)."""
        X = sp.vstack([self.Xs, self.Xt]).tocsr() if sp.issparse(self.Xs) else np.vstack([self.Xs, self.Xt])
        y = np.concatenate([self.ys, -np.ones(self.Xt.shape[0], dtype=np.int64)])
        sample_domain = np.concatenate([np.ones(self.Xs.shape[0], dtype=np.int64), -2 * np.ones(self.Xt.shape[0], dtype=np.int64)])
        return X, y, sample_domain

    def dense(self) -> DomainPair:
        """A copy with every feature matrix as a dense float64 array."""
        f = lambda A: A.toarray().astype(np.float64) if sp.issparse(A) else np.asarray(A, dtype=np.float64)  # noqa: E731
        return dataclasses.replace(self, Xs=f(self.Xs), Xt=f(self.Xt), Xt_test=f(self.Xt_test))


def _expand_domain(dataset: str, domain: str) -> str:
    info = dataset_info(dataset)
    if domain in info.domains:
        return domain
    table = AMAZON_SHORT if info.n_classes == 2 else OFFICE_SHORT
    full = table.get(domain.upper())
    if full in info.domains:
        return full
    raise KeyError(f"dataset {info.name} has no domain {domain!r}; domains: {', '.join(info.domains)}")


def load_domain(
    dataset: str,
    domain: str,
    root: str | os.PathLike | None = None,
    split: Split = "all",
    resize: int | None = None,
) -> Domain:
    """Load one domain of one dataset.

    Parameters
    ----------
    dataset : str
        A name or alias from :data:`dpadapt.datasets.catalog.DATASETS` (``"decaf6"``,
        ``"bow5000"``, ``"digits"``...).
    domain : str
        Domain name or the papers' abbreviation (``"D"``, ``"W"``, ``"KT"``...).
    split : {"all", "train", "test"}
        Amazon bow5000 and full MNIST/USPS have a train/test split; other datasets only "all".
    resize : int, optional
        Resize square digit images to ``resize × resize`` (bilinear), e.g. USPS 16→28.
    """
    info = dataset_info(dataset)
    domain = _expand_domain(info.name, domain)
    path = find_data_root(root) / info.folder / info.file(domain)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (dataset {info.name}, domain {domain})")
    with np.load(path, allow_pickle=False) as npz:
        files = set(npz.files)
        if {"data", "indices", "indptr", "shape"} <= files:
            X = sp.csr_matrix((npz["data"], npz["indices"], npz["indptr"]), shape=tuple(npz["shape"]))
            y = npz["y"].astype(np.int64)
            if split != "all":
                mask = npz["split"] == (0 if split == "train" else 1)
                X, y = X[mask], y[mask]
        elif split != "all" and "X_train" in files:
            X, y = npz[f"X_{split}"], npz[f"y_{split}"].astype(np.int64)
        elif split != "all":
            raise ValueError(f"dataset {info.name} has no {split!r} split; use split='all'")
        else:
            X, y = npz["X"], npz["y"].astype(np.int64)
    if resize is not None:
        X = resize_images(np.asarray(X), resize)
    return Domain(X=X, y=y, name=domain, dataset=info.name)


def resize_images(X: np.ndarray, size: int) -> np.ndarray:
    """Bilinearly resize flattened square grey images (n, s·s) to (n, size·size)."""
    from scipy.ndimage import zoom

    n, d = X.shape
    side = int(round(np.sqrt(d)))
    if side * side != d:
        raise ValueError(f"rows of length {d} are not square images")
    if side == size:
        return X
    imgs = X.reshape(n, side, side)
    out = zoom(imgs, (1, size / side, size / side), order=1)
    return np.clip(out, 0.0, 1.0).reshape(n, size * size).astype(np.float32)


def load_pair(
    dataset: str,
    source: str,
    target: str,
    root: str | os.PathLike | None = None,
    protocol: Literal["auto", "transductive", "split"] = "auto",
    resize: int | None = None,
) -> DomainPair:
    """Load a source → target task.

    Protocols: ``"split"`` (Amazon bow5000 and full MNIST/USPS) uses the source *train* rows as
    labelled source, the target *train* rows as unlabelled target and the target *test* rows for
    evaluation — the DANN/DPDA-TIFS protocol. ``"transductive"`` (Office-Caltech, msda400, JDA
    digits) adapts to all target rows and evaluates on them. ``"auto"`` picks by dataset.
    """
    info = dataset_info(dataset)
    if source == target or _expand_domain(info.name, source) == _expand_domain(info.name, target):
        raise ValueError("source and target must be different domains")
    has_split = info.name in ("amazon_reviews/bow5000", "mnist_usps")
    if protocol == "auto":
        protocol = "split" if has_split else "transductive"
    if protocol == "split":
        if not has_split:
            raise ValueError(f"dataset {info.name} has no train/test split")
        s = load_domain(info.name, source, root, "train", resize)
        t_train = load_domain(info.name, target, root, "train", resize)
        t_test = load_domain(info.name, target, root, "test", resize)
    else:
        s = load_domain(info.name, source, root, "all", resize)
        t_train = t_test = load_domain(info.name, target, root, "all", resize)
    return DomainPair(
        Xs=s.X,
        ys=s.y,
        Xt=t_train.X,
        yt=t_train.y,
        Xt_test=t_test.X,
        yt_test=t_test.y,
        name=f"{s.name}->{t_train.name}",
        dataset=info.name,
        n_classes=info.n_classes,
    )


def parse_task(task: str) -> tuple[str, str]:
    """``"D->W"`` / ``"dslr->webcam"`` / ``"KT:DV"`` → (source, target)."""
    for sep in ("->", "→", ":", ">"):
        if sep in task:
            a, b = task.split(sep, 1)
            return a.strip(), b.strip()
    raise ValueError(f"task {task!r} must look like 'SOURCE->TARGET'")
