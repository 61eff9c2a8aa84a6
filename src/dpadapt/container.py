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

Hostile files
-------------
A container comes from the other party: before anything is inflated or parsed, the sizes it declares
are checked against limits (:func:`check_declared_sizes`): the file's size on disk, the number of
members, each member's declared inflated size and its ratio to its compressed size (a zip bomb), the
JSON header's size, and every array's shape and dtype from its ``.npy`` header (which must agree with
the member's declared size). A header nested deeper than :data:`MAX_DEPTH` is refused in one line.
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
from typing import Any, BinaryIO, ClassVar

import numpy as np

META_KEY = "__dpadapt_meta__"
_SIGNED_PREFIX = b"dpadapt-container-v1\x00"

#: Limits on what a received container may declare, checked before anything is inflated or parsed.
MAX_FILE_BYTES = 4 * 1024**3          # the file on disk
MAX_ARRAY_BYTES = 4 * 1024**3         # all arrays together, inflated (a caller may give a smaller bound)
MAX_HEADER_BYTES = 16 * 1024**2       # the JSON header, inflated
MAX_MEMBERS = 4096                    # arrays in one file
MAX_RATIO = 200                       # inflated / compressed size of a member over RATIO_FLOOR bytes
RATIO_FLOOR = 1024**2
MAX_DEPTH = 64                        # nesting of the JSON header


def _limit(where: str, what: str, found: int, limit: int) -> ContainerError:
    return ContainerError(f"{where}: {what} {found:,} bytes, more than the {limit:,} a dpadapt file may hold; refused "
                          "before reading it (a hostile or foreign file)")


def check_declared_sizes(zf: zipfile.ZipFile, where: str, max_array_bytes: int = MAX_ARRAY_BYTES) -> None:
    """Refuse a zip archive whose declared sizes exceed the limits (one line), reading only its directory and the
    ``.npy`` headers of its members — nothing is inflated beyond a header.

    Each member: a ``.npy`` file whose header (shape, dtype) states exactly its declared inflated size, with no
    Python objects; a member over :data:`RATIO_FLOOR` bytes may not inflate more than :data:`MAX_RATIO`-fold (a
    zip bomb); the header member at most :data:`MAX_HEADER_BYTES`; all arrays together at most ``max_array_bytes``.
    """
    from numpy.lib import format as npy

    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ContainerError(f"{where}: {len(infos):,} members, more than the {MAX_MEMBERS:,} a dpadapt file may hold; refused")
    total = 0
    for info in infos:
        if not info.filename.endswith(".npy"):
            raise ContainerError(f"{where}: not a dpadapt file (member {info.filename[:80]!r} is not an array)")
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ContainerError(f"{where}: member {info.filename[:80]!r} declares {info.file_size:,} bytes from "
                                 f"{info.compress_size:,} compressed (a zip bomb); refused before inflating it")
        if info.filename == META_KEY + ".npy":
            if info.file_size > MAX_HEADER_BYTES:
                raise _limit(where, "its header declares", info.file_size, MAX_HEADER_BYTES)
            continue
        total += info.file_size
        if total > max_array_bytes:
            raise _limit(where, "its arrays declare", total, max_array_bytes)
        try:
            with zf.open(info) as fh:
                version = npy.read_magic(fh)
                header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                shape, _, dtype = header(fh)
                offset = fh.tell()
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError, SyntaxError) as exc:
            raise ContainerError(f"{where}: member {info.filename[:80]!r} is not a readable array ({_short(exc)})") from None
        if dtype.hasobject:
            raise ContainerError(f"{where}: array {info.filename[:80]!r} holds Python objects; refused")
        if offset + int(np.prod(shape, dtype=object)) * dtype.itemsize != info.file_size:
            raise ContainerError(f"{where}: array {info.filename[:80]!r} declares shape {shape} of {dtype} but "
                                 f"{info.file_size:,} bytes; refused (a hostile or corrupted file)")


def _depth(obj: Any) -> int:
    """The nesting depth of a parsed JSON value (iterative: a hostile header cannot exhaust the stack)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                break
            stack.extend((v, level + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def parse_json_header(text: bytes, where: str) -> Any:
    """A JSON header, refused in one line when it is not UTF-8 JSON or nests deeper than :data:`MAX_DEPTH`."""
    try:
        value = json.loads(text.decode())
    except RecursionError:
        value = None
        depth = MAX_DEPTH + 1
    except (ValueError, UnicodeDecodeError) as exc:
        raise ContainerError(f"{where}: not a dpadapt file (malformed header: {_short(exc)})") from None
    else:
        depth = _depth(value)
    if depth > MAX_DEPTH:
        raise ContainerError(f"{where}: malformed header: nested deeper than {MAX_DEPTH} levels; refused")
    return value


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
    data: bytes | BinaryIO,
    where: str,
    expect_format: str | Sequence[str] | None = None,
    trusted: Sequence[Any] = (),
    max_array_bytes: int = MAX_ARRAY_BYTES,
) -> Container:
    """Parse and verify a container: declared sizes within the limits (:func:`check_declared_sizes`), zip archive,
    no pickles, digest, signature, trusted signer. ``data``: the bytes, or a seekable binary file.

    ``trusted`` holds public keys (:func:`dpadapt.keys.load_public_key`); when non-empty an
    unsigned container or one signed by any other key is refused.
    """
    buf = io.BytesIO(data) if isinstance(data, bytes) else data
    if not zipfile.is_zipfile(buf):
        raise ContainerError(f"{where}: not a dpadapt file, or truncated (not a complete archive; nothing was loaded)")
    try:
        buf.seek(0)
        with zipfile.ZipFile(buf) as zf:
            check_declared_sizes(zf, where, max_array_bytes)
        buf.seek(0)
        with np.load(buf, allow_pickle=False) as npz:
            if META_KEY not in npz.files:
                raise ContainerError(f"{where}: not a dpadapt file (no header)")
            meta = parse_json_header(npz[META_KEY].tobytes(), where)
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


def read(path: str | os.PathLike, expect_format: str | Sequence[str] | None = None, trusted: Sequence[Any] = (),
         max_array_bytes: int = MAX_ARRAY_BYTES) -> Container:
    """:func:`decode` the file at ``path`` (its size checked first; read from the file, never whole into memory)."""
    path = Path(path)
    if not path.is_file():
        raise ContainerError(f"{path}: no such file")
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise _limit(str(path), "the file has", size, MAX_FILE_BYTES)
        with open(path, "rb") as fh:
            return decode(fh, str(path), expect_format, trusted, max_array_bytes)
    except OSError as exc:
        raise ContainerError(f"{path}: cannot read ({exc.strerror or exc})") from exc


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
        return read_header(path).get(field)
    except Exception:  # noqa: BLE001 - any unreadable file means "no such field here"
        return None


def read_header(path: str | os.PathLike) -> dict[str, Any]:
    """The JSON header of a container file, UNVERIFIED (no digest, no signature), read without inflating any array:
    for a check that must run before the file is verified with a caller's size bound. Declared sizes are checked
    against the default limits first; anything unreadable is a :class:`ContainerError` (one line)."""
    path = Path(path)
    if not path.is_file():
        raise ContainerError(f"{path}: no such file")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise _limit(str(path), "the file has", size, MAX_FILE_BYTES)
    try:
        with open(path, "rb") as fh:
            if not zipfile.is_zipfile(fh):
                raise ContainerError(f"{path}: not a dpadapt file, or truncated (not a complete archive; nothing was loaded)")
            fh.seek(0)
            with zipfile.ZipFile(fh) as zf:
                check_declared_sizes(zf, str(path))
                with zf.open(META_KEY + ".npy") as member:
                    header = np.lib.format.read_array(member, allow_pickle=False)
    except ContainerError:
        raise
    except (KeyError, zipfile.BadZipFile, zlib.error, NotImplementedError, EOFError, OSError, ValueError) as exc:
        raise ContainerError(f"{path}: unreadable, truncated or foreign file ({_short(exc)})") from None
    meta = parse_json_header(header.tobytes(), str(path))
    if not isinstance(meta, dict):
        raise ContainerError(f"{path}: not a dpadapt file (malformed header)")
    return meta


def open_versioned(
    source: bytes | str | os.PathLike,
    where: str,
    expect_format: str,
    version: int,
    error: type[Exception],
    trusted: Sequence[Any] = (),
    max_array_bytes: int = MAX_ARRAY_BYTES,
) -> Container:
    """:func:`decode` the bytes (or :func:`read` the file) ``source`` of one format and version.

    The codec shared by releases and models: every failure (unreadable, foreign,
    modified, untrusted, other version) is raised as ``error`` with the reason.
    """
    try:
        if isinstance(source, bytes):
            c = decode(source, where, expect_format, trusted, max_array_bytes)
        else:
            c = read(source, expect_format, trusted, max_array_bytes)
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
    def _open(cls, source: bytes | str | os.PathLike, where: str, trusted: Sequence[Any] = (),
              max_array_bytes: int = MAX_ARRAY_BYTES) -> Container:
        """The verified container of a record of this class (see :func:`open_versioned`)."""
        return open_versioned(source, where, cls.FORMAT, cls.FORMAT_VERSION, cls.ERROR, trusted, max_array_bytes)
