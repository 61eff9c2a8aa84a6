"""One signed-file codec for everything that crosses between parties or is saved to disk.

Releases (:mod:`dpadapt.release`) and saved models (:mod:`dpadapt.modelio`) are both written as
one *container*: an ``.npz`` (zip) archive holding numeric arrays and a JSON header stored as the
``uint8`` array ``__dpadapt_meta__``. It is read with ``numpy.load(allow_pickle=False)``, so loading a container can never run code: an object
array (a pickle) inside the archive is refused by numpy, and a file that is not a zip archive is
refused before numpy sees it.

Integrity and authenticity
--------------------------
* **Integrity** — the header carries ``sha256``, a digest of the header (without ``sha256`` and
  ``signature``) and of every array's name, dtype, shape and bytes. It catches truncation,
  accidental corruption and a file of another kind. It does **not** protect against a deliberate
  forgery: anyone can change the content and recompute the digest.
* **Authenticity** — a container may also carry ``signature``: an Ed25519 signature (RFC 8032,
  via ``cryptography``) of the digest, with the signer's public key. A reader that is given the
  *trusted* public keys of the other party (``--trust KEY``) accepts only a container signed by one
  of them, so a forged or re-signed file is rejected. Without trusted keys a signature is still
  checked (a bad one is rejected) and the file is reported as "signed by key <id>, not checked
  against a trusted key"; an unsigned file is reported as unauthenticated.

Keys are created by :func:`dpadapt.keys.new_keypair` (``dpadapt keys new``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import zipfile
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

META_KEY = "__dpadapt_meta__"
_SIGNED_PREFIX = b"dpadapt-container-v1\x00"


class ContainerError(ValueError):
    """A container is unreadable, truncated, tampered with, foreign, or not signed by a trusted key."""


@dataclasses.dataclass(frozen=True)
class Container:
    """A verified container: its header (without digest and signature), arrays and signer."""

    meta: dict[str, Any]
    arrays: dict[str, np.ndarray]
    #: Key id of the verified signer, or ``None`` when unsigned.
    signer: str | None
    #: ``True`` when the signer is one of the trusted keys given to :func:`decode`.
    trusted: bool

    def authenticity(self) -> str:
        """One line saying who vouches for the content."""
        if self.signer is None:
            return "unauthenticated: the file is not signed (integrity checked by digest only; anyone can forge it)"
        if self.trusted:
            return f"authenticated: signed by trusted key {self.signer}"
        return f"signed by key {self.signer}, not checked against a trusted key (pass --trust KEY to require it)"


def digest(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over the header (without ``sha256``/``signature``) and every array's name, dtype, shape, bytes."""
    h = hashlib.sha256()
    h.update(json.dumps({k: v for k, v in meta.items() if k not in ("sha256", "signature")}, sort_keys=True).encode())
    for name in sorted(arrays):
        arr = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(str(arr.dtype).encode())
        h.update(repr(arr.shape).encode())
        h.update(arr.tobytes())
    return h.hexdigest()


def check_arrays(arrays: dict[str, Any]) -> dict[str, np.ndarray]:
    """Arrays without Python objects (numeric, bool or fixed-width text), names not starting with ``__``."""
    out = {}
    for name, arr in arrays.items():
        if name.startswith("__"):
            raise ValueError(f"array names may not start with '__': {name!r}")
        a = np.asarray(arr)
        if a.dtype.hasobject:
            raise TypeError(f"array {name!r} has dtype object; containers hold numeric arrays only")
        out[name] = a
    return out


def encode(meta: dict[str, Any], arrays: dict[str, np.ndarray], sign_key: Any = None, compress: bool = True) -> bytes:
    """The container's bytes; ``sign_key`` is an Ed25519 private key (see :mod:`dpadapt.keys`) or ``None``."""
    arrays = check_arrays(arrays)
    meta = {k: v for k, v in meta.items() if k not in ("sha256", "signature")}
    meta["arrays"] = {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in arrays.items()}
    meta["sha256"] = digest(meta, arrays)
    if sign_key is not None:
        from dpadapt import keys

        meta["signature"] = keys.sign(sign_key, _SIGNED_PREFIX + meta["sha256"].encode())
    payload = dict(arrays)
    payload[META_KEY] = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8)
    buf = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(buf, **payload)
    return buf.getvalue()


def decode(
    data: bytes,
    where: str,
    expect_format: str | Sequence[str] | None = None,
    trusted: Sequence[Any] = (),
) -> Container:
    """Parse and verify a container: zip archive, no pickles, digest, signature, trusted signer.

    ``trusted`` holds public keys (:func:`dpadapt.keys.load_public_key`); when non-empty an
    unsigned container or one signed by any other key is refused.
    """
    buf = io.BytesIO(data)
    if not data or not zipfile.is_zipfile(buf):
        raise ContainerError(f"{where}: not a dpadapt file, or truncated (not a complete archive; nothing was loaded)")
    try:
        with np.load(buf, allow_pickle=False) as npz:
            if META_KEY not in npz.files:
                raise ContainerError(f"{where}: not a dpadapt file (no header)")
            meta = json.loads(npz[META_KEY].tobytes().decode())
            arrays = {k: npz[k] for k in npz.files if k != META_KEY}
    except ContainerError:
        raise
    except (zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, OSError, ValueError, KeyError, UnicodeDecodeError) as exc:
        raise ContainerError(f"{where}: unreadable, truncated or foreign file ({_short(exc)})") from exc
    if not isinstance(meta, dict):
        raise ContainerError(f"{where}: not a dpadapt file (malformed header)")
    formats = (expect_format,) if isinstance(expect_format, str) else expect_format
    if formats is not None and meta.get("format") not in formats:
        raise ContainerError(f"{where}: not a {' or '.join(formats)} file (format {meta.get('format')!r})")
    stored = meta.pop("sha256", None)
    signature = meta.pop("signature", None)
    computed = digest(meta, arrays)
    if stored is None or stored != computed or set(arrays) != set(meta.get("arrays", {})):
        raise ContainerError(f"{where}: checksum mismatch — the file was modified or corrupted after it was written")
    signer = None
    if signature is not None:
        from dpadapt import keys

        try:
            signer = keys.verify(signature, _SIGNED_PREFIX + computed.encode(), where)
        except keys.SignatureError as exc:
            raise ContainerError(str(exc)) from None
    trusted_ids = {_key_id(k) for k in trusted}
    if trusted_ids:
        if signer is None:
            raise ContainerError(f"{where}: not signed, but a trusted key was required (--trust); refused. A file from "
                                 "the other party: ask for a copy signed with their key (--sign). A file you wrote "
                                 "yourself (your own model): drop --trust, or write it with --sign YOUR_KEY and trust YOUR_KEY.pub")
        if signer not in trusted_ids:
            raise ContainerError(f"{where}: signed by key {signer}, which is not one of the trusted keys; refused")
    return Container(meta=meta, arrays=arrays, signer=signer, trusted=signer is not None and signer in trusted_ids)


def _key_id(key: Any) -> str:
    from dpadapt import keys

    return keys.key_id(key)


def _short(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def read(path: str | os.PathLike, expect_format: str | Sequence[str] | None = None, trusted: Sequence[Any] = ()) -> Container:
    """:func:`decode` the file at ``path``."""
    path = Path(path)
    if not path.is_file():
        raise ContainerError(f"{path}: no such file")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ContainerError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    return decode(data, str(path), expect_format, trusted)


def write_atomic(path: str | os.PathLike, data: bytes, before_publish: Callable[[], None] | None = None) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename).

    ``before_publish`` runs before the first byte is written (a temporary file is already a usable
    copy for whoever reads the folder, e.g. a sync client); the privacy ledger marks the spend final
    there. If anything fails before the rename, the temporary file is removed.
    """
    path = Path(path)
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    if before_publish is not None:
        before_publish()
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def file_meta_field(path: str | os.PathLike, field: str) -> Any:
    """One header field of a container file, unverified (``None`` if unreadable); never unpickles."""
    try:
        with open(path, "rb") as fh:
            if not zipfile.is_zipfile(fh):
                return None
        with np.load(path, allow_pickle=False) as npz:
            meta = json.loads(npz[META_KEY].tobytes().decode())
        return meta.get(field)
    except Exception:  # noqa: BLE001 - any unreadable file means "no such field here"
        return None


def open_versioned(
    source: bytes | str | os.PathLike,
    where: str,
    expect_format: str,
    version: int,
    error: type[Exception],
    trusted: Sequence[Any] = (),
) -> Container:
    """:func:`decode` the bytes (or :func:`read` the file) ``source`` of one format and version.

    The codec shared by releases and models: every failure (unreadable, foreign,
    modified, untrusted, other version) is raised as ``error`` with the reason.
    """
    try:
        if isinstance(source, bytes):
            c = decode(source, where, expect_format, trusted)
        else:
            c = read(source, expect_format, trusted)
    except error:
        raise
    except ContainerError as exc:
        raise error(str(exc)) from None
    found = c.meta.get("format_version")
    if found != version:
        raise error(f"{where}: {expect_format} format version {found!r} is not supported (this reader reads version {version})")
    return c


class SignedRecord:
    """Base of the dataclasses stored as one container (:class:`~dpadapt.release.Release`): checked arrays, ``record[name]``, the header with format
    and version, and the bytes (signed with a key when given). A subclass sets the class
    attributes below and returns its own header fields from ``_fields``.
    """

    FORMAT: ClassVar[str]
    FORMAT_VERSION: ClassVar[int]
    #: Raised for anything wrong with stored bytes (a subclass of ``ValueError``).
    ERROR: ClassVar[type[Exception]] = ContainerError
    COMPRESS: ClassVar[bool] = True
    arrays: dict[str, np.ndarray]

    def __post_init__(self) -> None:
        self.arrays = check_arrays(self.arrays)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def _fields(self) -> dict[str, Any]:
        raise NotImplementedError

    def _meta(self) -> dict[str, Any]:
        return {
            "format": self.FORMAT,
            "format_version": self.FORMAT_VERSION,
            **self._fields(),
            "arrays": {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in self.arrays.items()},
        }

    def to_bytes(self, sign_key: Any = None) -> bytes:
        """The record as container bytes (signed with ``sign_key`` when given)."""
        return encode(self._meta(), self.arrays, sign_key=sign_key, compress=self.COMPRESS)

    @classmethod
    def _open(cls, source: bytes | str | os.PathLike, where: str, trusted: Sequence[Any] = ()) -> Container:
        """The verified container of a record of this class (see :func:`open_versioned`)."""
        return open_versioned(source, where, cls.FORMAT, cls.FORMAT_VERSION, cls.ERROR, trusted)
