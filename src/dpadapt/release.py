"""Release objects: what one party hands the other.

A :class:`Release` bundles named arrays with the :class:`~dpadapt.privacy.Guarantee` of the data
owner, the public parameters needed to use them, and the library version. It is saved as one
:mod:`dpadapt.container` file (arrays + JSON header, never a pickle) whose header carries a
SHA-256 digest (integrity: a truncated, corrupted or foreign file is rejected with a clear error)
and, when the owner signs it (``save(sign_key=...)``, ``dpadapt release --sign KEY``), an
Ed25519 signature (authenticity: with ``trusted`` keys, a forged or re-signed release is refused).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpadapt import __version__, container
from dpadapt.jsonutil import to_jsonable
from dpadapt.privacy.guarantee import Guarantee

FORMAT = "dpadapt-release"
FORMAT_VERSION = 1


class ReleaseError(container.ContainerError):
    """A release file is unreadable, truncated, tampered with, or of an unsupported version."""


@dataclasses.dataclass
class Release(container.SignedRecord):
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
    #: Set by :meth:`load`: key id of the verified signer (``None``: unsigned) and whether it is trusted.
    signer: str | None = dataclasses.field(default=None, compare=False, repr=False)
    trusted: bool = dataclasses.field(default=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.owner not in ("source", "target"):
            raise ValueError(f"owner must be 'source' or 'target', got {self.owner!r}")
        if self.guarantee.party != self.owner:
            raise ValueError(f"the guarantee protects {self.guarantee.party!r} but the owner is {self.owner!r}")
        super().__post_init__()

    # -- persistence ----------------------------------------------------------------------

    FORMAT, FORMAT_VERSION, ERROR = FORMAT, FORMAT_VERSION, ReleaseError

    def _fields(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "kind": self.kind,
            "owner": self.owner,
            "guarantee": self.guarantee.to_dict(),
            "params": to_jsonable(self.params),
            "version": self.version,
            "release_id": self.release_id,
            "created": self.created,
        }

    def digest(self) -> str:
        """SHA-256 over the metadata and every array's bytes."""
        return container.digest(self._meta(), self.arrays)

    def save(
        self, path: str | os.PathLike, sign_key: Any = None, before_publish: Callable[[], None] | None = None
    ) -> Path:
        """Write the release atomically to ``path``; ``before_publish`` runs just before the rename."""
        return container.write_atomic(path, self.to_bytes(sign_key), before_publish)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        expect_method: str | tuple[str, ...] | None = None,
        expect_kind: str | None = None,
        trusted: Sequence[Any] = (),
        max_array_bytes: int = container.MAX_ARRAY_BYTES,
    ) -> Release:
        """Read and verify a release file (declared sizes, digest, signature, trusted signer, version, method/kind).

        Never unpickles. With ``trusted`` public keys, only a release signed by one of them is accepted. A file whose
        arrays declare more than ``max_array_bytes`` (inflated) is refused before anything is inflated.
        """
        return cls._from_container(cls._open(path, str(path), trusted, max_array_bytes), str(path), expect_method,
                                   expect_kind)

    @classmethod
    def from_bytes(cls, data: bytes, where: str = "release", trusted: Sequence[Any] = ()) -> Release:
        """Parse and verify release bytes (see :meth:`load`)."""
        return cls._from_container(cls._open(data, where, trusted), where)

    @classmethod
    def _from_container(
        cls, c: container.Container, where: str, expect_method: str | tuple[str, ...] | None = None,
        expect_kind: str | None = None,
    ) -> Release:
        meta = c.meta
        try:
            release = cls(
                method=meta["method"],
                kind=meta["kind"],
                owner=meta["owner"],
                arrays=c.arrays,
                guarantee=Guarantee.from_dict(meta["guarantee"]),
                params=meta["params"],
                version=meta["version"],
                release_id=meta["release_id"],
                created=meta["created"],
                signer=c.signer,
                trusted=c.trusted,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ReleaseError(f"{where}: malformed release header ({exc})") from None
        methods = (expect_method,) if isinstance(expect_method, str) else expect_method
        if methods is not None and release.method not in methods:
            raise ReleaseError(f"{where}: a {release.method!r} release, expected {' or '.join(map(repr, methods))}")
        if expect_kind is not None and release.kind != expect_kind:
            raise ReleaseError(f"{where}: a {release.kind!r} release, expected {expect_kind!r}")
        return release

    def authenticity(self) -> str:
        """Who vouches for this release (see :class:`dpadapt.container.Container`)."""
        return container.Container({}, {}, self.signer, self.trusted).authenticity()

    def report(self) -> str:
        """The owner's guarantee in words, with what the release contains."""
        lines = [
            f"Release {self.release_id} — {self.method}/{self.kind}, written by dpadapt {self.version} at {self.created}",
            "Authenticity: " + self.authenticity(),
            "Arrays: " + ", ".join(f"{k} {tuple(v.shape)}" for k, v in self.arrays.items()),
            self.guarantee.report(),
        ]
        return "\n".join(lines)


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
