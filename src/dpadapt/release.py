"""Release objects: what one party hands the other.

A :class:`Release` bundles named arrays with the :class:`~dpadapt.privacy.Guarantee` of the data
owner, the public parameters needed to use them, and the library version. It is saved to one
``.npz`` file whose metadata carry a SHA-256 digest of every array and of the metadata
themselves, so a truncated, tampered or foreign file is rejected on load with a clear error.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import io
import json
import os
import uuid
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from dpadapt import __version__
from dpadapt.jsonutil import to_jsonable
from dpadapt.privacy.guarantee import Guarantee

FORMAT = "dpadapt-release"
FORMAT_VERSION = 1
_META_KEY = "__dpadapt_meta__"


class ReleaseError(ValueError):
    """A release file is unreadable, truncated, tampered with, or of an unsupported version."""


@dataclasses.dataclass
class Release:
    """What crosses from one party to the other.

    Attributes
    ----------
    method : str
        Method family, e.g. ``"dpot"``.
    kind : str
        What this release is, e.g. ``"source_projection"``.
    owner : {"source", "target"}
        The party whose data the arrays were computed from.
    arrays : dict of str to ndarray
        The released (noisy) arrays. Never raw private rows.
    guarantee : Guarantee
        The owner's privacy guarantee for everything in this release.
    params : dict
        Public, JSON-serialisable parameters needed by the receiver.
    version : str
        dpadapt version that wrote it.
    release_id : str
        Unique id (used by the privacy ledger).
    created : str
        ISO-8601 UTC timestamp.
    """

    method: str
    kind: str
    owner: str
    arrays: dict[str, np.ndarray]
    guarantee: Guarantee
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    version: str = __version__
    release_id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)
    created: str = dataclasses.field(
        default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    )

    def __post_init__(self) -> None:
        if self.owner not in ("source", "target"):
            raise ValueError(f"owner must be 'source' or 'target', got {self.owner!r}")
        if self.guarantee.party != self.owner:
            raise ValueError(f"the guarantee protects {self.guarantee.party!r} but the owner is {self.owner!r}")
        for name, arr in self.arrays.items():
            if name.startswith("__"):
                raise ValueError(f"array names may not start with '__': {name!r}")
            if np.asarray(arr).dtype == object:
                raise TypeError(f"array {name!r} has dtype object; releases hold numeric arrays only")
        self.arrays = {k: np.asarray(v) for k, v in self.arrays.items()}

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    # -- persistence ----------------------------------------------------------------------

    def _meta(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "method": self.method,
            "kind": self.kind,
            "owner": self.owner,
            "guarantee": self.guarantee.to_dict(),
            "params": to_jsonable(self.params),
            "version": self.version,
            "release_id": self.release_id,
            "created": self.created,
            "arrays": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in self.arrays.items()},
        }

    def digest(self) -> str:
        """SHA-256 over the metadata and every array's bytes."""
        return _digest(self._meta(), self.arrays)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the release atomically to ``path`` (a ``.npz`` file)."""
        path = Path(path)
        meta = self._meta()
        meta["sha256"] = _digest(meta, self.arrays)
        buf = io.BytesIO()
        payload = {k: v for k, v in self.arrays.items()}
        payload[_META_KEY] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
        np.savez_compressed(buf, **payload)
        tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
        with open(tmp, "wb") as fh:
            fh.write(buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike, expect_method: str | None = None, expect_kind: str | None = None) -> Release:
        """Read and verify a release file (digest, format version, expected method/kind)."""
        path = Path(path)
        if not path.exists():
            raise ReleaseError(f"{path}: no such release file")
        try:
            with np.load(path, allow_pickle=False) as npz:
                if _META_KEY not in npz.files:
                    raise ReleaseError(f"{path}: not a dpadapt release (no metadata)")
                meta = json.loads(npz[_META_KEY].tobytes().decode())
                arrays = {k: npz[k] for k in npz.files if k != _META_KEY}
        except ReleaseError:
            raise
        except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, OSError, ValueError, KeyError) as exc:
            raise ReleaseError(f"{path}: unreadable or truncated release file ({exc})") from exc
        if meta.get("format") != FORMAT:
            raise ReleaseError(f"{path}: not a dpadapt release (format {meta.get('format')!r})")
        if meta.get("format_version") != FORMAT_VERSION:
            raise ReleaseError(
                f"{path}: release format version {meta.get('format_version')!r} is not supported "
                f"(this dpadapt {__version__} reads version {FORMAT_VERSION})"
            )
        stored = meta.pop("sha256", None)
        if stored is None or stored != _digest(meta, arrays):
            raise ReleaseError(f"{path}: checksum mismatch — the file was modified or corrupted after it was written")
        if set(arrays) != set(meta["arrays"]):
            raise ReleaseError(f"{path}: array list does not match the metadata")
        release = cls(
            method=meta["method"],
            kind=meta["kind"],
            owner=meta["owner"],
            arrays=arrays,
            guarantee=Guarantee.from_dict(meta["guarantee"]),
            params=meta["params"],
            version=meta["version"],
            release_id=meta["release_id"],
            created=meta["created"],
        )
        if expect_method is not None and release.method != expect_method:
            raise ReleaseError(f"{path}: a {release.method!r} release, expected {expect_method!r}")
        if expect_kind is not None and release.kind != expect_kind:
            raise ReleaseError(f"{path}: a {release.kind!r} release, expected {expect_kind!r}")
        return release

    def report(self) -> str:
        """The owner's guarantee in words, with what the release contains."""
        lines = [
            f"Release {self.release_id} — {self.method}/{self.kind}, written by dpadapt {self.version} at {self.created}",
            "Arrays: " + ", ".join(f"{k} {tuple(v.shape)}" for k, v in self.arrays.items()),
            self.guarantee.report(),
        ]
        return "\n".join(lines)


def _digest(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({k: v for k, v in meta.items() if k != "sha256"}, sort_keys=True).encode())
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(str(arr.dtype).encode())
        h.update(repr(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def raw_rows_in_release(release: Release, X, atol: float = 1e-8, rtol: float = 1e-6) -> list[tuple[str, int]]:
    """Rows of the owner's raw data ``X`` that appear in any released array.

    A released row matches a raw row when every entry agrees within ``atol + rtol·|x|`` (the
    default ``rtol`` also catches a raw row cast to float32). Every 2-D array whose width equals
    X's is compared row by row with X, and every 1-D array of that length as one row. Returns
    ``(array name, row index in X)`` pairs; empty when clean. Rows of X that are all zeros are
    ignored (they carry no information and collide trivially).
    """
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    d = X.shape[1]
    informative = np.flatnonzero(np.abs(X).sum(axis=1) > 0)
    Xi = X[informative]
    hits: list[tuple[str, int]] = []
    x_sq = (Xi**2).sum(axis=1)
    for name, arr in release.arrays.items():
        if not np.issubdtype(arr.dtype, np.number):
            continue
        rows = arr.reshape(1, -1) if arr.ndim == 1 else arr.reshape(-1, arr.shape[-1]) if arr.ndim >= 2 else None
        if rows is None or rows.shape[1] != d:
            continue
        rows = rows.astype(np.float64)
        for start in range(0, rows.shape[0], 2048):
            chunk = rows[start : start + 2048]
            c_sq = (chunk**2).sum(axis=1)[:, None]
            dist = c_sq + x_sq[None, :] - 2.0 * chunk @ Xi.T
            # generous pre-filter: the tolerance region plus the rounding error of the expansion
            # above (which grows with the squared norms), then an exact entrywise check
            bound = 2.0 * (atol**2 * d + rtol**2 * x_sq[None, :]) + 1e-9 * (c_sq + x_sq[None, :]) + 1e-12
            for i, j in np.argwhere(dist <= bound):
                if np.allclose(chunk[i], Xi[j], atol=atol, rtol=rtol):
                    hits.append((name, int(informative[j])))
    return hits


def assert_no_raw_rows(release: Release, X, atol: float = 1e-8, rtol: float = 1e-6) -> None:
    """Raise ``AssertionError`` if any raw row of ``X`` appears in ``release`` (see :func:`raw_rows_in_release`)."""
    hits = raw_rows_in_release(release, X, atol=atol, rtol=rtol)
    if hits:
        raise AssertionError(f"{len(hits)} raw row(s) of the owner's data appear in the release, e.g. {hits[:3]}")
