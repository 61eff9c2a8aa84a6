"""Download the public originals of the benchmarks and convert them to dpadapt's ``.npz`` layout.

For users who are online and have no copy of ``shared/data``. Every original is fetched from the
GitHub repository and commit recorded in the dataset's ``MANIFEST.md`` ("Origin" section),
checked against the SHA-256 recorded there, cached (``platformdirs`` user cache, or
``$DPADAPT_CACHE`` / the ``cache_dir`` argument), and converted exactly as the MANIFEST's
"Conversion" section describes:

* Office-Caltech10 (SURF, DeCAF6, GoogLeNet): ``scipy.io.loadmat``; features cast to float32
  unchanged; labels flattened and shifted 1..10 → 0..9.
* Amazon bow5000: svmlight files (5000 zero-based features); train and test stacked (train first)
  into one CSR matrix with sorted indices, float32 counts, labels −1/+1 → 0/1, ``split`` 0/1.
* Amazon msda400: ``loadmat``; ``fts`` to float32, labels flattened to int64 (already 0/1).
* MNIST: the official idx files for the test images and all labels; the training images from the
  convnetjs PNG sprites (the official ``train-images`` idx is not in the recorded sources); needs
  Pillow.
* USPS (``usps.h5``) and the JDA pair (MATLAB v7.3): read with h5py (an optional dependency,
  imported only when needed).

Nothing here runs in CI (no network); the conversion functions are tested on small synthetic
files.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dpadapt.datasets.catalog import dataset_info

CACHE_ENV_VAR = "DPADAPT_CACHE"
#: Where an original lives: raw file of a repository at a fixed commit.
RAW_URL = "https://raw.githubusercontent.com/{repo}/{commit}/{path}"


class FetchError(ValueError):
    """A download failed or a downloaded file does not have the recorded checksum."""


@dataclasses.dataclass(frozen=True)
class Source:
    """One original file: repository, commit, path inside it, and its SHA-256."""

    repo: str
    commit: str
    path: str
    sha256: str

    @property
    def url(self) -> str:
        return RAW_URL.format(repo=self.repo, commit=self.commit, path=self.path)

    @property
    def cache_name(self) -> str:
        return f"{self.sha256[:16]}-{Path(self.path).name}"


# --- the originals (from each MANIFEST.md "Origin" section) ----------------------------------------

_TL_SURF = ("jindongwang/transferlearning", "73cb050b7e8b969b9d0ebb04a9377aa033043eb2")
_TL_DECAF = ("jindongwang/transferlearning", "de0cd293cd4cc0e2f027a1cc58493ba4df07d6a8")
_WDGRL_OFFICE = ("RockySJ/WDGRL", "15674e226eb468595d19b9f879a45163519de1b5")
_WDGRL_AMAZON = ("RockySJ/WDGRL", "cc84d96d42ae17f8e4a4e43e3935780bf33abb81")
_SKADA = ("scikit-adaptation/skada-bench", "af0537050789583bd4e2697f9a431811b5a46873")
_MNIST_IDX = ("pursuemoon/digit-recognizer", "af87a4a97c6c203187686edc11cbc6bc57d1fb86")
_CONVNETJS = ("karpathy/convnetjs", "39afa8cd5e4cfb5771dc8a1f51bc56aa080f0b51")
_USPS = ("niuers/Learning-From-Data-A-Short-Course", "35684e893b63bf4039bafcc6d34fe935851baf9a")
_JPDA = ("chamwen/JPDA", "dba993a3212708c5df60229494560ebaae6081e7")

SURF = {
    "amazon": Source(*_TL_SURF, "code/BDA/data/amazon_SURF_L10.mat", "df32548b994e18d364c99e1f317e1fae100597259f0423a41b90f4f68187bb1f"),
    "caltech": Source(*_TL_SURF, "code/BDA/data/Caltech10_SURF_L10.mat", "4f9334c8ced489d5054de97a5fd51a61f017f3bcd1f38c9a85c6d78cb9d7bda5"),
    "dslr": Source(*_TL_SURF, "code/BDA/data/dslr_SURF_L10.mat", "44d673c68e1d07b837893aa74dba3b986e4a6cc3fd66f0dd357683bdef059216"),
    "webcam": Source(*_TL_SURF, "code/BDA/data/webcam_SURF_L10.mat", "a6a9c78b4b7181dfbb58bcfd351d4ebd737f171c31247b8884948aa156d3f700"),
}
DECAF6 = {
    "dslr": Source(*_TL_DECAF, "code/traditional/TCA/data/dslr.mat", "42443f5e82e98cbe6304cacdba905e24c8430ed977b3d6b7b279f088b76e108f"),
    "webcam": Source(*_TL_DECAF, "code/traditional/TCA/data/webcam.mat", "e42207580fb1fadd3adba2504e1d8cff9620f464fca7536f9d7093f84c1459a3"),
}
GOOGLENET = {
    "amazon": Source(*_WDGRL_OFFICE, "office-caltech/features/GoogleNet1024/amazon.mat", "bae9ee6e8f7ca305120dd970f2c90471f4ef8dda4cb2ad2404c38bb26cb56ba9"),
    "dslr": Source(*_WDGRL_OFFICE, "office-caltech/features/GoogleNet1024/dslr.mat", "5f7c6211581f846b7b5534429fb62bfb7e490e88aacfc8bee97eb0b0224dbd89"),
    "webcam": Source(*_WDGRL_OFFICE, "office-caltech/features/GoogleNet1024/webcam.mat", "57774bbdf97433b5fb5a6333e302f077444c069537138b60ef417f48ee65d296"),
}
BOW5000 = {
    ("books", "train"): "317f9a2ec34b81de770b63a84d8c5cc2dc16bd0be6e079d2ff5b5bad5213ea19",
    ("books", "test"): "fe4605c7dcf0e0a9410fd2a32f247caaf9abb352cc6e4c3e0f400853163ad9c4",
    ("dvd", "train"): "95f602aa08bf6b55758f7b0b18df3882fe30acb11987ee60b6b4bb3c44cba733",
    ("dvd", "test"): "4fe1b1a15010f78d8d0c49fe362d35fd4677463a45f1ac02a9f410ae1e638060",
    ("electronics", "train"): "7d0061f03ff3827e4f8036b051b5e5828fddc0cd115aa5b212cd28d624dc14e4",
    ("electronics", "test"): "641783bc941839c3a111d3488a1b7e3bd820a61ec14a129e7429b47703aa961d",
    ("kitchen", "train"): "a70b5ebfe1413e0e16280360905f5c3b64389c435cd20c0165dc9d7f293b31b5",
    ("kitchen", "test"): "e1502b97a824eb12314be4447394fa736fecb781c0724e6529cd6733ac7ff6d8",
}
BOW5000_SOURCES = {
    key: Source(*_WDGRL_AMAZON, f"amazon/data/{key[0]}_{key[1]}.svmlight", sha) for key, sha in BOW5000.items()
}
MSDA400 = {
    "books": Source(*_SKADA, "data/amazon_review/books_400.mat", "7a53b54f0c0e81e7ee4774d762a927399cede9a802a2409732ba00cc1c23a17a"),
    "dvd": Source(*_SKADA, "data/amazon_review/dvd_400.mat", "13a71d399f9c7ae57064952979c830455057ffd0a8da73f2c9075338d64d98ce"),
    "electronics": Source(*_SKADA, "data/amazon_review/elec_400.mat", "f1dd6e01c1eed956d3abe6493a6bb5efc95e6585b8b9b2d856c0c07e12893a35"),
    "kitchen": Source(*_SKADA, "data/amazon_review/kitchen_400.mat", "b1f4e5ddfbd7b37ad2638fccbf83bd8558abf63b3e8d69a9d5bca77b1a49fed5"),
}
MNIST_IDX = {
    "test_images": Source(*_MNIST_IDX, "mnist/t10k-images-idx3-ubyte.gz", "52511fd31723f3fd40a486e8654fdf4bfd1cd93479f33b80ed41c5e35bcb657b"),
    "test_labels": Source(*_MNIST_IDX, "mnist/t10k-labels-idx1-ubyte.gz", "066b5224df709d2984e01ffd9e067d36849107fc01d5afc5712d3212c0392aad"),
    "train_labels": Source(*_MNIST_IDX, "mnist/train-labels-idx1-ubyte.gz", "7573c3ee428695c136d56bef2ca17cbe6f10e866485686433e3281307381019c"),
}
_SPRITE_SHA = (
    "54d39dfaf0057158346bcabe733a4a93a8a02595adf2496abe8123c7eed85457",
    "de5ff3ee0fb8052d80c8124a61dbd9896a10cec11237ceae61cd4d8053288bb0",
    "14578a89cd497e00403c345c7b6523995f84f7a30561de28b238483364f6c1cd",
    "2d6161d591840118584158b98df72203b16373a92602a1597d837333181de55b",
    "cd84689bd8dfc3737b821097fc604d3b7e8bc125d3cd6a3bb30a7507ef4d7ce5",
    "abf32f587873280bb38c1593d4555b74eac743156569a2e380effd944732102c",
    "20ae1fc9d7381ae9f3f8e93e6f717a829b9c5f2648ab90d859359c34f6df370b",
    "b601118422f7c8cbea0a8daf008b10bbe10c17a3e3162d69db7068bd0f81aadb",
    "b4f82b66b9f155c7ee00e1265ad3f6d6fa10dcf48134f5b7ec650a719e0c07b9",
    "3578cf8893f90d94909250faa124d26df2a015a936bf38e93c8294ea262c74f4",
    "0e115b0b2618bd472aec7aca32a0614ff6804a00c91414ca1ab8926bec1d9d82",
    "47b3c7da91a1a6f6d2be559b7b34144a2b7098dc6e131432b0bed4607f95e5cb",
    "708bb164b1a0fb3ab07ebc57e63ba324af3f311d57f0849a1e105f4ae90f11ad",
    "708bffa630556b78d1954b66198bbb706afefce7c96268970b67c69c1a71968e",
    "1dae86b58155d10c39c9a1103851cc3e830ae4f1d6d8d436dcc8aea24f99eff8",
    "f4e1ba671eaa6cde349d21be84b53967aba199e51dc43358b4ee0defb62a4018",
    "1a6e9e424fab5c1ab0f6df455e8dbda94a132db99a199f27c576babc15b21317",
    "bc37aca4047ce38258e1cce2357d0267dd2bdce930743dd111ee9944081b5cd4",
    "c1a0167b5a8489408ec955a5c3b82f8b9238174ba63006758bd1d8352dac2b98",
    "dcc5166de8a1155640ea4afd5bd4cfef547608d3dea82aeade74bc5e03927dcd",
)
#: The 20 sprites holding the 60000 training images in order (batch 20 = test images, not needed).
MNIST_SPRITES = tuple(Source(*_CONVNETJS, f"demo/mnist/mnist_batch_{i}.png", sha) for i, sha in enumerate(_SPRITE_SHA))
USPS = Source(*_USPS, "data/usps.h5", "734f88c541104a956d88be2c95d03b4a463ffd74ccc2ba9c80841fb98e3fcb36")
JDA = Source(*_JPDA, "data/MNIST_vs_USPS.mat", "7fbb67f14af7236e18a38dc8a0a836142361e9e720e4b763a5e2db511d306d6c")


# --- download with checksum and cache ---------------------------------------------------------------


def cache_dir(path: str | os.PathLike | None = None) -> Path:
    """The download cache: ``path``, else ``$DPADAPT_CACHE``, else the platform's user cache dir."""
    if path is None:
        path = os.environ.get(CACHE_ENV_VAR)
    if path is None:
        import platformdirs

        path = platformdirs.user_cache_dir("dpadapt")
    return Path(path).expanduser()


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, sha256: str, dest: str | os.PathLike, timeout: float = 60.0) -> Path:
    """Download ``url`` to ``dest`` unless a file with the right SHA-256 is already there.

    The bytes are written to a temporary file and moved into place only after the checksum
    matches, so a failed or corrupted download never poisons the cache.
    """
    dest = Path(dest)
    if dest.is_file() and sha256_of(dest) == sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=dest.name + ".", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    shutil.copyfileobj(response, out)
            except (urllib.error.URLError, OSError) as exc:
                raise FetchError(f"could not download {url}: {exc}") from exc
        got = sha256_of(tmp)
        if got != sha256:
            raise FetchError(f"checksum mismatch for {url}: expected sha256 {sha256}, got {got}; the file was not kept")
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest


def _get(source: Source, cache: Path) -> Path:
    return download(source.url, source.sha256, cache / source.cache_name)


# --- conversions (MANIFEST "Conversion" sections) ---------------------------------------------------


def convert_office_mat(path: str | os.PathLike, feature_key: str) -> dict[str, np.ndarray]:
    """Office-Caltech ``.mat``: features → float32 unchanged, labels 1..10 → 0..9 (int64)."""
    from scipy.io import loadmat

    mat = loadmat(path)
    X = np.asarray(mat[feature_key], dtype=np.float32)
    y = np.asarray(mat["labels"]).ravel().astype(np.int64) - 1
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{path}: {y.shape[0]} labels for {X.shape[0]} rows")
    if y.min() < 0 or y.max() > 9:
        raise ValueError(f"{path}: labels outside 1..10 before the shift")
    return {"X": X, "y": y}


def convert_msda_mat(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """mSDA 400-d ``.mat``: ``fts`` → float32 unchanged, ``labels`` flattened to int64 (already 0/1)."""
    from scipy.io import loadmat

    mat = loadmat(path)
    return {"X": np.asarray(mat["fts"], dtype=np.float32), "y": np.asarray(mat["labels"]).ravel().astype(np.int64)}


def convert_bow_svmlight(train: str | os.PathLike, test: str | os.PathLike, n_features: int = 5000) -> dict[str, np.ndarray]:
    """bow5000: train and test svmlight files → one CSR (train first), float32 counts, labels 0/1, split."""
    from sklearn.datasets import load_svmlight_file

    parts, labels = [], []
    for path in (train, test):
        X, y = load_svmlight_file(str(path), n_features=n_features, zero_based=True)
        parts.append(X)
        labels.append(y)
    X = sp.vstack(parts).tocsr()
    X.sort_indices()
    if not np.all(X.data == np.round(X.data)):
        raise ValueError("bow5000 counts are expected to be integers")
    y = np.concatenate(labels)
    if not set(np.unique(y)) <= {-1.0, 1.0}:
        raise ValueError(f"bow5000 labels are expected to be -1/+1, got {np.unique(y)}")
    split = np.concatenate([np.zeros(parts[0].shape[0], np.int8), np.ones(parts[1].shape[0], np.int8)])
    return {
        "data": X.data.astype(np.float32),
        "indices": X.indices.astype(np.int32),
        "indptr": X.indptr.astype(np.int64),
        "shape": np.array(X.shape, dtype=np.int64),
        "y": (y > 0).astype(np.int64),
        "split": split,
    }


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """An idx file (optionally gzipped) as a uint8 array: big-endian header, then the data."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        raw = fh.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte idx file")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    offset = 4 + 4 * ndim
    count = int(np.prod(dims)) if dims else 0
    if len(raw) - offset != count:
        raise ValueError(f"{path}: header announces {count} values, file holds {len(raw) - offset}")
    return np.frombuffer(raw, dtype=np.uint8, offset=offset).reshape(dims)


def read_sprite(path: str | os.PathLike, side: int = 28) -> np.ndarray:
    """A convnetjs MNIST sprite (one flattened image per row of the PNG) as (n, side²) uint8."""
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("decoding the MNIST training sprites needs Pillow: pip install pillow") from exc
    with Image.open(path) as img:
        arr = np.asarray(img.convert("L"))
    if arr.shape[1] != side * side and arr.shape[0] == side * side:
        arr = arr.T
    if arr.shape[1] != side * side:
        raise ValueError(f"{path}: expected rows of {side * side} pixels, got shape {arr.shape}")
    return arr


def convert_mnist(train_sprites: Sequence[str | os.PathLike], train_labels, test_images, test_labels) -> dict[str, np.ndarray]:
    """MNIST: training images from the sprites, test images and all labels from the official idx files."""
    X_train = np.concatenate([read_sprite(p) for p in train_sprites]).astype(np.float32) / 255.0
    X_test = read_idx(test_images).reshape(-1, 784).astype(np.float32) / 255.0
    y_train = read_idx(train_labels).astype(np.int64)
    y_test = read_idx(test_labels).astype(np.int64)
    if X_train.shape[0] != y_train.shape[0] or X_test.shape[0] != y_test.shape[0]:
        raise ValueError("MNIST image and label counts differ")
    return {
        "X": np.concatenate([X_train, X_test]),
        "y": np.concatenate([y_train, y_test]),
        "X_train": X_train,
        "y_train": y_train,
        "X_test": X_test,
        "y_test": y_test,
    }


def _h5py():
    try:
        import h5py
    except ImportError as exc:
        raise ImportError(
            "reading USPS (usps.h5) and the JDA pair (MATLAB v7.3) needs h5py, which dpadapt does not "
            "install by default: pip install h5py"
        ) from exc
    return h5py


def convert_usps_h5(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """USPS ``.h5``: groups train/test with ``data`` (float32, unchanged) and ``target`` (int64, unchanged)."""
    h5py = _h5py()
    with h5py.File(path, "r") as f:
        X_train = np.asarray(f["train"]["data"], dtype=np.float32)
        y_train = np.asarray(f["train"]["target"]).astype(np.int64)
        X_test = np.asarray(f["test"]["data"], dtype=np.float32)
        y_test = np.asarray(f["test"]["target"]).astype(np.int64)
    return {
        "X": np.concatenate([X_train, X_test]),
        "y": np.concatenate([y_train, y_test]),
        "X_train": X_train,
        "y_train": y_train,
        "X_test": X_test,
        "y_test": y_test,
    }


def convert_jda_mat(path: str | os.PathLike) -> dict[str, dict[str, np.ndarray]]:
    """JDA ``MNIST_vs_USPS.mat`` (v7.3/HDF5): ``Xs`` 2000 MNIST, ``Xt`` 1800 USPS; labels 1..10 → 0..9.

    The v7.3 file stores MATLAB's d × n matrices transposed, so h5py already gives samples as rows.
    """
    h5py = _h5py()
    out = {}
    with h5py.File(path, "r") as f:
        for domain, xk, yk in (("mnist", "Xs", "Ys"), ("usps", "Xt", "Yt")):
            X = np.asarray(f[xk], dtype=np.float32)
            y = np.asarray(f[yk]).ravel().astype(np.int64) - 1
            if X.shape[0] != y.shape[0]:
                raise ValueError(f"{path}: {xk} has shape {X.shape} for {y.shape[0]} labels")
            out[domain] = {"X": X, "y": y}
    return out


# --- fetch ---------------------------------------------------------------------------------------


def _office(sources: dict[str, Source], key: str) -> Callable[[str, Path], dict[str, np.ndarray]]:
    return lambda domain, cache: convert_office_mat(_get(sources[domain], cache), key)


def _bow(domain: str, cache: Path) -> dict[str, np.ndarray]:
    return convert_bow_svmlight(_get(BOW5000_SOURCES[(domain, "train")], cache), _get(BOW5000_SOURCES[(domain, "test")], cache))


def _digits(domain: str, cache: Path) -> dict[str, np.ndarray]:
    if domain == "usps":
        return convert_usps_h5(_get(USPS, cache))
    return convert_mnist(
        [_get(s, cache) for s in MNIST_SPRITES],
        _get(MNIST_IDX["train_labels"], cache),
        _get(MNIST_IDX["test_images"], cache),
        _get(MNIST_IDX["test_labels"], cache),
    )


def _jda(domain: str, cache: Path) -> dict[str, np.ndarray]:
    return convert_jda_mat(_get(JDA, cache))[domain]


#: dataset name → function(domain, cache) returning the arrays of that domain's ``.npz``.
RECIPES: dict[str, Callable[[str, Path], dict[str, np.ndarray]]] = {
    "office_caltech10/surf": _office(SURF, "fts"),
    "office_caltech10/decaf6": _office(DECAF6, "feas"),
    "office_caltech10/googlenet1024": _office(GOOGLENET, "fts"),
    "amazon_reviews/bow5000": _bow,
    "amazon_reviews/msda400": lambda domain, cache: convert_msda_mat(_get(MSDA400[domain], cache)),
    "mnist_usps": _digits,
    "mnist_usps/jda_protocol": _jda,
}


def fetch(
    dataset: str,
    root: str | os.PathLike,
    domains: Sequence[str] | None = None,
    cache: str | os.PathLike | None = None,
    overwrite: bool = False,
) -> list[Path]:
    """Download, verify and convert ``dataset`` (all its domains, or ``domains``) into ``root``.

    Files are written as ``root/<dataset folder>/<domain>.npz`` — the layout the loaders read.
    Existing files are kept unless ``overwrite``. Returns the paths written or found.
    """
    info = dataset_info(dataset)
    recipe = RECIPES[info.name]
    wanted = tuple(domains) if domains else info.domains
    unknown = [d for d in wanted if d not in info.domains]
    if unknown:
        raise KeyError(f"dataset {info.name} has no domain(s) {unknown}; domains: {', '.join(info.domains)}")
    cache_path = cache_dir(cache)
    out_dir = Path(root).expanduser() / info.folder
    created = [d for d in (cache_path, *cache_path.parents, out_dir, *out_dir.parents) if not d.exists()]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        written = []
        for domain in wanted:
            target = out_dir / info.file(domain)
            if overwrite or not target.is_file():
                arrays = recipe(domain, cache_path)
                tmp = target.with_name(target.name + ".part.npz")
                try:
                    np.savez_compressed(tmp, **arrays)
                    os.replace(tmp, target)
                finally:
                    tmp.unlink(missing_ok=True)
            written.append(target)
    except BaseException:
        _remove_empty(created)
        raise
    return written


def _remove_empty(folders: Sequence[Path]) -> None:
    """Remove the folders this call created that are still empty (deepest first): a failed fetch leaves none."""
    for d in sorted(folders, key=lambda p: len(p.parts), reverse=True):
        try:
            d.rmdir()
        except OSError:
            pass  # not empty (another domain was fetched) or already gone
