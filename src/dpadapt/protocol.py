"""Iterative two-party exchanges: messages over a folder of files or a loopback socket.

Some protocols need many rounds: the non-private party sends a query (e.g. projection
directions, a model), the private party answers with a noisy statistic of its data, and so on
(DP-SWD domain adaptation, DPDA). This module provides the transport and the budgeted answering
loop; the mechanisms belong to the methods.

Message format (version 1)
--------------------------
One message is one :mod:`dpadapt.container` (an ``.npz`` archive, never a pickle) holding the
named numeric arrays and a JSON header stored as the ``uint8`` array ``__dpadapt_meta__``::

    {"format": "dpadapt-message", "format_version": 1,
     "session": "<id shared by both ends>", "round": <n ≥ 1, per sender>, "sender": "<name>",
     "kind": "<query | answer | stop | refused | ...>", "release_id": "<uuid hex>",
     "guarantee": <Guarantee.to_dict() of the sender's data, or null>,
     "params": {...JSON...}, "arrays": {"name": {"dtype": ..., "shape": [...]}},
     "sha256": "<digest of the header without this key and of every array>",
     "signature": <optional Ed25519 signature record, see dpadapt.container>}

A message with a ``guarantee`` is a release of the sender's private data; its ``release_id`` is
the ledger entry that charged it. Transports:

* :class:`FileChannel` — a shared folder; the sender writes ``<sender>-<round:06d>.msg`` to a
  temporary name, fsyncs and renames it (the receiver never sees a partial message). The
  receiver polls for the next round of its peer.
* :class:`SocketChannel` — TCP on 127.0.0.1 only; each message is an 8-byte big-endian length
  followed by the archive; messages above ``max_bytes`` are refused.

:func:`serve` runs the private party's side: for every query, plan the answer (its Guarantee
is known before noise is drawn), charge it to the ledger with the two-phase protocol of
:mod:`dpadapt.privacy.ledger`, draw the noise, send. Rounds compose in the ledger through their
dp-accounting events. When the budget cannot afford a round the query is answered with a
``refused`` message and the loop ends.
"""

from __future__ import annotations

import abc
import dataclasses
import os
import socket
import struct
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np

from dpadapt import container
from dpadapt.jsonutil import to_jsonable
from dpadapt.privacy.guarantee import Guarantee
from dpadapt.privacy.ledger import BudgetExceeded, Ledger

FORMAT = "dpadapt-message"
FORMAT_VERSION = 1
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


class ChannelError(ValueError):
    """A message is malformed, tampered with, too large, or did not arrive in time."""


class Refused(ValueError):
    """The private party refused to answer (its privacy budget is spent)."""


@dataclasses.dataclass
class Message(container.SignedRecord):
    """One message of an iterative exchange (see the module docstring for the format)."""

    kind: str
    arrays: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    guarantee: Guarantee | None = None
    round: int = 0
    sender: str = ""
    session: str = ""
    release_id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)

    FORMAT, FORMAT_VERSION, ERROR, COMPRESS = FORMAT, FORMAT_VERSION, ChannelError, False

    def _fields(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "round": int(self.round),
            "sender": self.sender,
            "kind": self.kind,
            "release_id": self.release_id,
            "guarantee": None if self.guarantee is None else self.guarantee.to_dict(),
            "params": to_jsonable(self.params),
        }

    @classmethod
    def from_bytes(cls, data: bytes, where: str = "message") -> Message:
        """Parse and verify (format, version, digest, signature if any) a message."""
        c = cls._open(data, where)
        meta = c.meta
        try:
            g = meta["guarantee"]
            return cls(
                kind=meta["kind"],
                arrays=c.arrays,
                params=meta["params"],
                guarantee=None if g is None else Guarantee.from_dict(g),
                round=meta["round"],
                sender=meta["sender"],
                session=meta["session"],
                release_id=meta["release_id"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ChannelError(f"{where}: malformed message header ({exc})") from None


class Channel(abc.ABC):
    """One end of a two-party exchange. ``send`` stamps sender, session and round number."""

    def __init__(self, me: str, peer: str, session: str = "", max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if not me or not peer or me == peer:
            raise ValueError("a channel needs two different, non-empty party names")
        self.me, self.peer, self.session, self.max_bytes = me, peer, session, max_bytes
        self.sent = 0
        self.received = 0
        #: Guarantees of the private answers received so far (what this end learned about the peer's data).
        self.guarantees: list[Guarantee] = []

    def send(self, message: Message) -> Path | None:
        """Send ``message``; returns the file written (file channels) or ``None``."""
        message.sender, message.session, message.round = self.me, self.session, self.sent + 1
        data = message.to_bytes()
        if len(data) > self.max_bytes:
            raise ChannelError(f"message of {len(data)} bytes exceeds the channel limit of {self.max_bytes}")
        where = self._write(data, message.round)
        self.sent += 1
        return where

    def receive(self, timeout: float | None = 60.0) -> Message:
        """The peer's next message (verified); :class:`ChannelError` after ``timeout`` seconds."""
        data, where = self._read(self.received + 1, timeout)
        message = Message.from_bytes(data, where)
        if message.sender != self.peer or message.round != self.received + 1:
            raise ChannelError(f"{where}: expected round {self.received + 1} from {self.peer!r}, got round {message.round} from {message.sender!r}")
        if self.session and message.session != self.session:
            raise ChannelError(f"{where}: message of session {message.session!r}, expected {self.session!r}")
        self.received += 1
        if message.guarantee is not None:
            self.guarantees.append(message.guarantee)
        return message

    def next_path(self) -> Path | None:
        """Where the next ``send`` will write (used as the ledger's crash-recovery evidence)."""
        return None

    @abc.abstractmethod
    def _write(self, data: bytes, round_: int) -> Path | None: ...

    @abc.abstractmethod
    def _read(self, round_: int, timeout: float | None) -> tuple[bytes, str]: ...

    def close(self) -> None:
        """Release the transport (no-op for files)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class FileChannel(Channel):
    """Messages as numbered files in a shared folder, written atomically (temporary name + rename)."""

    def __init__(self, directory: str | os.PathLike, me: str, peer: str, session: str = "",
                 max_bytes: int = DEFAULT_MAX_BYTES, poll_interval: float = 0.02) -> None:
        super().__init__(me, peer, session, max_bytes)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.poll_interval = poll_interval

    def _path(self, sender: str, round_: int) -> Path:
        return self.directory / f"{sender}-{round_:06d}.msg"

    def next_path(self) -> Path:
        return self._path(self.me, self.sent + 1)

    def _write(self, data: bytes, round_: int) -> Path:
        path = self._path(self.me, round_)
        if path.exists():
            raise ChannelError(f"{path} exists: another {self.me!r} process is using this folder")
        tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        return path

    def _read(self, round_: int, timeout: float | None) -> tuple[bytes, str]:
        path = self._path(self.peer, round_)
        deadline = None if timeout is None else time.monotonic() + timeout
        while not path.exists():
            if deadline is not None and time.monotonic() > deadline:
                raise ChannelError(f"no message {path.name} from {self.peer!r} within {timeout:g} s")
            time.sleep(self.poll_interval)
        size = path.stat().st_size
        if size > self.max_bytes:
            raise ChannelError(f"{path}: {size} bytes exceeds the channel limit of {self.max_bytes}")
        return path.read_bytes(), str(path)


class SocketChannel(Channel):
    """Length-prefixed messages over one TCP connection on 127.0.0.1 (never another interface)."""

    HOST = "127.0.0.1"

    def __init__(self, sock: socket.socket, me: str, peer: str, session: str = "", max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        super().__init__(me, peer, session, max_bytes)
        self.sock = sock

    @classmethod
    def listen(cls, port: int = 0) -> socket.socket:
        """A listening loopback socket (port 0: any free port; read it from ``getsockname()[1]``)."""
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.bind((cls.HOST, port))
        server.listen(1)
        return server

    @classmethod
    def accept(cls, server: socket.socket, me: str, peer: str, session: str = "", timeout: float | None = 60.0,
               max_bytes: int = DEFAULT_MAX_BYTES) -> SocketChannel:
        server.settimeout(timeout)
        try:
            sock, _ = server.accept()
        except TimeoutError as exc:
            raise ChannelError(f"no connection from {peer!r} within {timeout} s") from exc
        return cls(sock, me, peer, session, max_bytes)

    @classmethod
    def connect(cls, port: int, me: str, peer: str, session: str = "", timeout: float = 60.0,
                max_bytes: int = DEFAULT_MAX_BYTES) -> SocketChannel:
        return cls(socket.create_connection((cls.HOST, port), timeout=timeout), me, peer, session, max_bytes)

    def _write(self, data: bytes, round_: int) -> None:
        self.sock.sendall(struct.pack(">Q", len(data)) + data)

    def _read(self, round_: int, timeout: float | None) -> tuple[bytes, str]:
        self.sock.settimeout(timeout)
        where = f"message {round_} from {self.peer!r}"
        try:
            (size,) = struct.unpack(">Q", self._exactly(8, where))
            if size > self.max_bytes:
                raise ChannelError(f"{where}: {size} bytes exceeds the channel limit of {self.max_bytes}")
            return self._exactly(size, where), where
        except TimeoutError as exc:
            raise ChannelError(f"{where}: nothing received within {timeout} s") from exc

    def _exactly(self, n: int, where: str) -> bytes:
        chunks, left = [], n
        while left:
            chunk = self.sock.recv(min(left, 1 << 20))
            if not chunk:
                raise ChannelError(f"{where}: connection closed by the peer")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()


@dataclasses.dataclass(frozen=True)
class PlannedAnswer:
    """An answer whose Guarantee is known; ``execute`` draws the noise and builds the message."""

    guarantee: Guarantee
    execute: Callable[[], Message]


def serve(
    channel: Channel,
    plan_answer: Callable[[Message], PlannedAnswer],
    *,
    ledger: Ledger,
    party: str | None,
    dataset_id: str,
    method: str,
    timeout: float | None = 60.0,
    max_rounds: int | None = None,
) -> list[Guarantee]:
    """Answer the peer's queries until it sends ``stop``, each round charged to ``ledger``.

    Returns the guarantees of the rounds answered. A round the budget cannot afford is answered
    with a ``refused`` message (no noise drawn) and ends the loop; so does ``max_rounds``.
    ``party`` names the ledger's party (``None``: the party each answer's guarantee protects).
    """
    answered: list[Guarantee] = []
    while max_rounds is None or len(answered) < max_rounds:
        query = channel.receive(timeout)
        if query.kind == "stop":
            break
        plan = plan_answer(query)
        release_id = uuid.uuid4().hex
        try:
            with ledger.reservation(
                party or plan.guarantee.party, dataset_id, plan.guarantee, release_id=release_id, method=method,
                kind=f"round {channel.sent + 1}", path=channel.next_path(),
            ) as reservation:
                answer = plan.execute()
                if answer.guarantee is None or answer.guarantee.to_dict() != plan.guarantee.to_dict():
                    raise ValueError("the answer's guarantee differs from the planned one; refused")
                answer.release_id = release_id
                reservation.publish()  # from here on the answer may leave the process: never refunded
                channel.send(answer)
        except BudgetExceeded as exc:
            channel.send(Message("refused", params={"reason": str(exc)}))
            break
        answered.append(plan.guarantee)
    return answered


def ask(channel: Channel, query: Message, timeout: float | None = 60.0) -> Message:
    """Send ``query`` and wait for the answer; raise :class:`Refused` if the peer refuses."""
    channel.send(query)
    answer = channel.receive(timeout)
    if answer.kind == "refused":
        raise Refused(answer.params.get("reason", "refused"))
    return answer
