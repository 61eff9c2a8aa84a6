"""Ed25519 signing keys of a party (``dpadapt keys new``), used to sign containers.

A party creates one key pair, keeps the private key (file mode 0600) and gives the public key to
the other party out of band; the other party then passes it as ``--trust KEY`` so that only
containers signed with the matching private key are accepted (see :mod:`dpadapt.container`).

Files: the private key is PKCS#8 PEM (unencrypted; protect it like a password); the public key is
one line ``dpadapt-ed25519 <64 hex digits>``. A key's id is the first 16 hex digits of the SHA-256
of its raw public bytes.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

PUBLIC_PREFIX = "dpadapt-ed25519"
PRIVATE_NAME = "dpadapt_ed25519.key"
PUBLIC_NAME = "dpadapt_ed25519.pub"


def _raw_public(key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    if isinstance(key, ed25519.Ed25519PrivateKey):
        key = key.public_key()
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(key: Any) -> str:
    """Short id of a public (or private) key, or of raw public bytes."""
    raw = key if isinstance(key, bytes) else _raw_public(key)
    return hashlib.sha256(raw).hexdigest()[:16]


def new_keypair(out_dir: str | os.PathLike, force: bool = False) -> tuple[Path, Path]:
    """Create a key pair in ``out_dir``; returns (private key path, public key path)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    private_path, public_path = out / PRIVATE_NAME, out / PUBLIC_NAME
    for p in (private_path, public_path):
        if p.exists() and not force:
            raise ValueError(f"{p} exists; choose another folder or pass --force")
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    private_path.unlink(missing_ok=True)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    public_path.write_text(f"{PUBLIC_PREFIX} {_raw_public(key).hex()}\n")
    return private_path, public_path


def load_private_key(path: str | os.PathLike) -> Any:
    """An Ed25519 private key from a PEM file written by :func:`new_keypair`."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    path = Path(path)
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such key file") from None
    except (ValueError, TypeError, OSError) as exc:
        raise ValueError(f"{path}: not an unencrypted Ed25519 private key (PEM)") from exc
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise ValueError(f"{path}: not an Ed25519 private key")
    return key


def load_public_key(path: str | os.PathLike) -> Any:
    """An Ed25519 public key from a ``dpadapt-ed25519 HEX`` file."""
    from cryptography.hazmat.primitives.asymmetric import ed25519

    path = Path(path)
    try:
        parts = path.read_text().split()
    except FileNotFoundError:
        raise ValueError(f"{path}: no such key file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a dpadapt public key file") from exc
    if len(parts) != 2 or parts[0] != PUBLIC_PREFIX:
        raise ValueError(f"{path}: not a dpadapt public key file (expected '{PUBLIC_PREFIX} HEX')")
    try:
        return ed25519.Ed25519PublicKey.from_public_bytes(bytes.fromhex(parts[1]))
    except ValueError as exc:
        raise ValueError(f"{path}: malformed public key") from exc


def sign(private_key: Any, message: bytes) -> dict[str, str]:
    """The signature record stored in a container header."""
    return {
        "algorithm": "ed25519",
        "public_key": _raw_public(private_key).hex(),
        "value": private_key.sign(message).hex(),
    }


class SignatureError(ValueError):
    """A signature record that does not verify (forged, modified or malformed); the message is one line."""


def verify(record: Any, message: bytes, where: str) -> str:
    """Check a signature record; returns the signer's key id or raises :class:`SignatureError`."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import ed25519

    try:
        if record["algorithm"] != "ed25519":
            raise ValueError(record["algorithm"])
        raw = bytes.fromhex(record["public_key"])
        ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(bytes.fromhex(record["value"]), message)
    except InvalidSignature:
        raise SignatureError(f"{where}: the signature does not match the content — forged or modified; refused") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise SignatureError(f"{where}: malformed signature ({exc}); refused") from None
    return key_id(raw)
