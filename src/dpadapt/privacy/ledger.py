"""Persistent privacy-budget ledger: one small SQLite database per party.

Each data owner keeps a budget (ε, δ) per dataset (identified by the SHA-256 of the data file
unless named) and a record of every release computed from it. A release records its spend as
its :class:`~dpadapt.privacy.Guarantee` (with its dp-accounting events), and the total spend of a
dataset is the composition of all its releases at the budget's δ by the one composition rule of
:func:`dpadapt.privacy.composition.compose` — the same rule the reports use: every term kept
(the extra δ of high-probability bounds, the δ of closed-form parts), add/remove and replace-one
spends converted soundly to replace-one when mixed, the events composed by dp-accounting and
the smaller of that bound and the basic composition of the stated guarantees.

Two-phase protocol (nothing released without a record, no record of a spend that never left)
-------------------------------------------------------------------------------------------
1. **reserve** — in a ``BEGIN IMMEDIATE`` transaction: resolve stale reservations, compose
   everything committed or reserved with the new guarantee, refuse if it exceeds the budget,
   otherwise insert a ``reserved`` row (release id, output path, pid). Two processes racing on a
   budget that affords one release are serialised by SQLite's write lock: only one passes.
   No noise has been drawn yet.
2. **publish** — the row is marked ``published`` (durably) *before the first secret draw* of the
   body: :meth:`reservation` registers :meth:`Reservation.publish` with
   :func:`dpadapt.privacy.mechanisms.before_noise`, which every draw of noise (or of a secret
   sample) announces itself to. Callers also publish before any byte of output exists (the
   release file is written after it: :func:`dpadapt.container.write_atomic` runs the callback
   before it creates the temporary file) or a message is sent. From then on the spend is final.
3. **commit** — after the output is written the row becomes ``committed``.

A reservation that ends without commit (an exception, or a process that died) is settled
conservatively: a ``published`` reservation is always ``committed`` — noise was (or may have
been) drawn and a file or a temporary copy of it may exist anywhere, so a refund could let released
information go unaccounted. Only an unpublished reservation — whose process provably never drew
noise, so no output of it can exist — is ``aborted`` (and a leftover temporary file is deleted).
A reservation of a live process always counts as spent.

A ledger file (or its folder) that cannot be written is opened read-only: budgets and spends can
be shown, and any operation that would record a spend fails with a one-line error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import hashlib
import json
import math
import os
import socket
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import dp_accounting

from dpadapt.privacy import accounting, composition
from dpadapt.privacy.guarantee import Guarantee

LEDGER_ENV = "DPADAPT_LEDGER"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS budgets (
    party TEXT NOT NULL,
    dataset_id TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    label TEXT,
    updated TEXT NOT NULL,
    PRIMARY KEY (party, dataset_id)
);
CREATE TABLE IF NOT EXISTS spends (
    release_id TEXT PRIMARY KEY,
    party TEXT NOT NULL,
    dataset_id TEXT NOT NULL,
    method TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('reserved', 'committed', 'aborted')),
    guarantee TEXT NOT NULL,
    path TEXT,
    pid INTEGER NOT NULL,
    proc_start TEXT,
    host TEXT NOT NULL,
    created TEXT NOT NULL,
    resolved TEXT,
    note TEXT,
    published INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS spends_by_dataset ON spends (party, dataset_id, state);
"""


class NoBudget(ValueError):
    """No budget has been set for this party and dataset."""


class LedgerError(ValueError):
    """The ledger cannot be opened or written (read-only, locked, not a ledger)."""


class BudgetExceeded(ValueError):
    """The release would exceed the remaining privacy budget (refused before any noise is drawn)."""


@dataclasses.dataclass(frozen=True)
class Budget:
    party: str
    dataset_id: str
    epsilon: float
    delta: float
    label: str | None = None


@dataclasses.dataclass(frozen=True)
class Spend:
    """Composed privacy loss of a set of releases of one dataset."""

    epsilon: float
    delta: float
    n_releases: int
    n_pending: int
    accounting: str
    units: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()

    def words(self) -> str:
        eps = "∞" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        pending = f" ({self.n_pending} in progress)" if self.n_pending else ""
        return f"ε = {eps} at δ = {self.delta:.3g} over {self.n_releases} release(s){pending}, {self.accounting}"


@dataclasses.dataclass
class Reservation:
    """A pending spend (phase 1 done). ``kind`` may be refined before the commit.

    Call :meth:`publish` before any output can leave the process (see the module docstring).
    """

    release_id: str
    spend: Spend
    kind: str
    ledger: Ledger | None = dataclasses.field(default=None, repr=False)
    published: bool = False

    def publish(self) -> None:
        """Mark the spend final (before the first noise draw): it is never refunded from then on."""
        if self.ledger is not None and not self.published:
            self.ledger.mark_published(self.release_id)
        self.published = True
        checkpoint("after_publish")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One row of the ledger's history."""

    release_id: str
    party: str
    dataset_id: str
    method: str
    kind: str
    state: str
    guarantee: Guarantee
    path: str | None
    created: str
    resolved: str | None
    note: str | None

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["guarantee"] = self.guarantee.to_dict()
        return out


def default_path() -> Path:
    """``$DPADAPT_LEDGER`` or ``<user data dir>/dpadapt/ledger.sqlite``."""
    env = os.environ.get(LEDGER_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("dpadapt")) / "ledger.sqlite"


def fingerprint(path: str | os.PathLike) -> str:
    """Dataset id of a data file: ``sha256:`` + the SHA-256 of its content; of a dataset of files (a directory, or a
    glob): of every file's name relative to it and content, in sorted order."""
    h = hashlib.sha256()
    if os.path.isfile(path):
        files, root = [os.fspath(path)], None
    else:
        import glob

        root = os.fspath(path)
        files = sorted(str(p) for p in Path(root).rglob("*") if p.is_file()) if os.path.isdir(root) else sorted(glob.glob(root))
        if not files:
            raise FileNotFoundError(f"{root}: no such data file or dataset")
    for name in files:
        if root is not None:
            h.update(os.path.relpath(name, root if os.path.isdir(root) else os.path.dirname(root)).encode() + b"\0")
        with open(name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return "sha256:" + h.hexdigest()


def short_id(dataset_id: str) -> str:
    return dataset_id[:19] + "…" if dataset_id.startswith("sha256:") and len(dataset_id) > 20 else dataset_id


def checkpoint(name: str) -> None:
    """A named step of the two-phase protocol (``reserve_locked``, ``after_reserve``,
    ``after_publish``, ``after_write``). Does nothing; tests replace it to crash or pause there."""


def file_release_id(path: str | os.PathLike) -> str | None:
    """The ``release_id`` stored in a release or message file's header (``None`` if unreadable)."""
    from dpadapt.container import file_meta_field

    value = file_meta_field(path, "release_id")
    return None if value is None else str(value)


def total_spend(guarantees: Sequence[Guarantee], delta: float | None = None, n_pending: int = 0) -> Spend:
    """Composed (ε, δ) of ``guarantees`` at total δ ``delta`` (see the module docstring).

    ``delta`` defaults to the sum of the guarantees' δ. Returns ε = ∞ when the closed-form parts
    already use up δ, or when any guarantee is non-private.
    """
    return _weighted_spend([(g, 1) for g in guarantees], delta, n_pending)


def _weighted_spend(weighted: Sequence[tuple[Guarantee, int]], delta: float | None, n_pending: int) -> Spend:
    """:func:`total_spend` of guarantees given with multiplicities, by :func:`dpadapt.privacy.composition.compose`."""
    units = tuple(sorted({g.unit for g, _ in weighted}))
    invalid = tuple(dict.fromkeys(r for g, _ in weighted if not g.valid for r in g.reasons))
    result = composition.compose(weighted, delta=delta)
    return Spend(
        epsilon=result.epsilon,
        delta=result.delta,
        n_releases=result.n,
        n_pending=n_pending,
        accounting="none" if not weighted else result.words(),
        units=units,
        invalid=invalid,
    )


def grouped_event(events: Sequence[dp_accounting.DpEvent], counts: Sequence[int] | None = None) -> dp_accounting.DpEvent:
    """Compose ``events`` (each ``counts[i]`` times) into one event (:func:`dpadapt.privacy.accounting.compose`)."""
    return accounting.compose(events, counts)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _proc_start(pid: int) -> str | None:
    """Start time of process ``pid`` (Linux /proc), to tell a live process from a reused pid."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return fields[19]
    except (OSError, IndexError):
        return None


def _alive(pid: int, host: str, proc_start: str | None) -> bool:
    if host != socket.gethostname():
        return True  # cannot tell: keep the reservation (conservative)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
    except (OSError, IndexError):
        pass
    return proc_start is None or _proc_start(pid) in (None, proc_start)


class Ledger:
    """A party's privacy-budget ledger (SQLite file; see the module docstring for the protocol).

    Parameters
    ----------
    path : path-like, optional
        Database file; default :func:`default_path` (``$DPADAPT_LEDGER`` or the user data dir).
    timeout : float
        Seconds to wait for another process holding the write lock.
    """

    def __init__(self, path: str | os.PathLike | None = None, timeout: float = 60.0) -> None:
        self.path = Path(path) if path is not None else default_path()
        self.timeout = timeout
        self._con: sqlite3.Connection | None = None
        #: Why the ledger is read-only (``None``: writable).
        self.read_only: str | None = self._read_only_reason()
        if self.read_only is not None:
            version = self._read(lambda con: con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone())
            version = version[0] if version else None
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise LedgerError(f"{self.path}: cannot create the ledger's folder ({exc.strerror or exc})") from None
            with self._transaction() as con:
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    con.execute(statement)
                columns = {r[1] for r in con.execute("PRAGMA table_info(spends)")}
                if "published" not in columns:  # ledgers written before the publish step
                    con.execute("ALTER TABLE spends ADD COLUMN published INTEGER NOT NULL DEFAULT 0")
                con.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        if version is None or int(version) != SCHEMA_VERSION:
            raise LedgerError(f"{self.path}: ledger schema version {version} is not supported (expected {SCHEMA_VERSION})")

    def _read_only_reason(self) -> str | None:
        """Why this process cannot write the ledger (``None`` if it can)."""
        if self.path.exists():
            if not self.path.is_file():
                raise LedgerError(f"{self.path}: not a ledger file")
            if not os.access(self.path, os.W_OK):
                return "the ledger file is read-only"
            if not os.access(self.path.parent, os.W_OK | os.X_OK):
                return "the ledger's folder is read-only"
        return None

    def _require_writable(self) -> None:
        if self.read_only is not None:
            raise LedgerError(f"{self.path}: {self.read_only}; nothing can be charged or changed (nothing was released)")

    def _connect(self) -> sqlite3.Connection:
        """This object's connection (opened once; autocommit mode, WAL journal, full fsync; read-only if need be)."""
        if self._con is None:
            try:
                if self.read_only is not None:
                    con = sqlite3.connect(f"{self.path.resolve().as_uri()}?immutable=1", uri=True, isolation_level=None)
                else:
                    con = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
                    con.execute("PRAGMA journal_mode=WAL")
                    con.execute("PRAGMA synchronous=FULL")
            except sqlite3.DatabaseError as exc:
                raise LedgerError(f"{self.path}: cannot open the ledger ({exc})") from None
            self._con = con
        return self._con

    def _read(self, query: Any) -> Any:
        """Run ``query(connection)``, turning SQLite errors into one-line :class:`LedgerError`."""
        try:
            return query(self._connect())
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: cannot read the ledger ({exc})") from None

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """An immediate (write-locked) transaction: concurrent writers are serialised."""
        self._require_writable()
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: cannot write the ledger ({exc})") from None
        try:
            yield con
        except sqlite3.DatabaseError as exc:
            con.execute("ROLLBACK")
            raise LedgerError(f"{self.path}: cannot write the ledger ({exc})") from None
        except BaseException:
            con.execute("ROLLBACK")
            raise
        try:
            con.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"{self.path}: cannot write the ledger ({exc})") from None

    # -- budgets ----------------------------------------------------------------------------

    def set_budget(self, party: str, dataset_id: str, epsilon: float, delta: float, label: str | None = None) -> Budget:
        """Set (or replace) the budget of ``party`` for ``dataset_id``."""
        if not (epsilon > 0 and not math.isnan(epsilon)):
            raise ValueError(f"budget epsilon must be > 0, got {epsilon}")
        if not 0 < delta < 1:
            raise ValueError(f"budget delta must be in (0, 1), got {delta}")
        with self._transaction() as con:
            con.execute(
                "INSERT INTO budgets VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (party, dataset_id) DO UPDATE SET "
                "epsilon = excluded.epsilon, delta = excluded.delta, label = COALESCE(excluded.label, label), "
                "updated = excluded.updated",
                (party, dataset_id, float(epsilon), float(delta), label, _now()),
            )
        return self.budget(party, dataset_id)  # type: ignore[return-value]

    def budget(self, party: str, dataset_id: str) -> Budget | None:
        row = self._read(lambda con: con.execute(
            "SELECT party, dataset_id, epsilon, delta, label FROM budgets WHERE party = ? AND dataset_id = ?",
            (party, dataset_id),
        ).fetchone())
        return Budget(*row) if row else None

    def budgets(self) -> list[Budget]:
        rows = self._read(lambda con: con.execute(
            "SELECT party, dataset_id, epsilon, delta, label FROM budgets ORDER BY party, dataset_id"
        ).fetchall())
        return [Budget(*r) for r in rows]

    # -- spends -----------------------------------------------------------------------------

    def _guarantees(self, con: sqlite3.Connection, party: str, dataset_id: str) -> tuple[list[tuple[Guarantee, int]], int]:
        """Distinct guarantees charged to a dataset with their multiplicities, and the number in progress."""
        rows = con.execute(
            "SELECT guarantee, COUNT(*), SUM(state = 'reserved') FROM spends WHERE party = ? AND dataset_id = ? "
            "AND state != 'aborted' GROUP BY guarantee ORDER BY MIN(rowid)",
            (party, dataset_id),
        ).fetchall()
        return [(Guarantee.from_dict(json.loads(g)), k) for g, k, _ in rows], sum(p for _, _, p in rows)

    def spent(self, party: str, dataset_id: str) -> Spend:
        """Composed spend of every committed or in-progress release (at the budget's δ if set)."""
        self.recover()
        budget = self.budget(party, dataset_id)
        weighted, pending = self._read(lambda con: self._guarantees(con, party, dataset_id))
        return _weighted_spend(weighted, budget.delta if budget else None, pending)

    def reserve(
        self,
        party: str,
        dataset_id: str,
        guarantee: Guarantee,
        *,
        release_id: str,
        method: str,
        kind: str,
        path: str | os.PathLike | None,
    ) -> Spend:
        """Phase 1: check the budget and record a pending spend; raise :class:`BudgetExceeded` if it does not fit.

        Returns the composed spend including this release.
        """
        if guarantee.party != party and party in ("source", "target"):
            raise ValueError(f"the guarantee protects the {guarantee.party} party, not {party!r}")
        if math.isinf(guarantee.epsilon):
            raise BudgetExceeded(
                "this release carries no privacy guarantee (ε = ∞) and cannot be charged to a budget; "
                "release non-private outputs only of public data"
            )
        abs_path = str(Path(path).resolve()) if path is not None else None
        with self._transaction() as con:
            self._recover(con)
            row = con.execute(
                "SELECT epsilon, delta FROM budgets WHERE party = ? AND dataset_id = ?", (party, dataset_id)
            ).fetchone()
            if row is None:
                raise NoBudget(
                    f"no privacy budget set for the {party} party's dataset {short_id(dataset_id)} in {self.path}; "
                    f"set one first, e.g. `dpadapt budget set --party {party} --dataset-id {dataset_id} --epsilon 8 --delta 1e-5`"
                )
            budget_eps, budget_delta = row
            previous, pending = self._guarantees(con, party, dataset_id)
            before = _weighted_spend(previous, budget_delta, pending)
            after = _weighted_spend([*previous, (guarantee, 1)], budget_delta, pending + 1)
            checkpoint("reserve_locked")
            if after.epsilon > budget_eps * (1 + 1e-9):
                left = max(budget_eps - before.epsilon, 0.0)
                raise BudgetExceeded(
                    f"refused: this release costs (ε = {guarantee.epsilon:.4g}, δ = {guarantee.delta:.3g}) and would "
                    f"bring the {party} party's spend on dataset {short_id(dataset_id)} to ε = {after.epsilon:.4g} at "
                    f"δ = {budget_delta:.3g}, over its budget (ε = {budget_eps:.4g}, δ = {budget_delta:.3g}). "
                    f"Already spent: {before.words()}; left: about ε = {left:.4g} at δ = {budget_delta:.3g} "
                    "(composition is not additive, so what fits depends on the mechanism). No noise was drawn "
                    "and nothing was written."
                )
            con.execute(
                "INSERT INTO spends (release_id, party, dataset_id, method, kind, state, guarantee, path, pid, "
                "proc_start, host, created) VALUES (?, ?, ?, ?, ?, 'reserved', ?, ?, ?, ?, ?, ?)",
                (
                    release_id,
                    party,
                    dataset_id,
                    method,
                    kind,
                    json.dumps(guarantee.to_dict(), sort_keys=True),
                    abs_path,
                    os.getpid(),
                    _proc_start(os.getpid()),
                    socket.gethostname(),
                    _now(),
                ),
            )
        return after

    def commit(self, release_id: str, kind: str | None = None) -> None:
        """Phase 3: the output was written; the spend is final."""
        with self._transaction() as con:
            cur = con.execute(
                "UPDATE spends SET state = 'committed', resolved = ?, kind = COALESCE(?, kind) "
                "WHERE release_id = ? AND state = 'reserved'",
                (_now(), kind, release_id),
            )
            if cur.rowcount != 1:
                raise RuntimeError(f"release {release_id} is not reserved in {self.path}")

    def mark_published(self, release_id: str) -> None:
        """Phase 2: the output may leave the process from now on; the spend can no longer be refunded."""
        with self._transaction() as con:
            cur = con.execute(
                "UPDATE spends SET published = 1 WHERE release_id = ? AND state = 'reserved'", (release_id,)
            )
            if cur.rowcount != 1:
                raise LedgerError(f"release {release_id} is not reserved in {self.path}")

    def resolve(self, release_id: str) -> str:
        """Settle a reservation that ended without commit (after a failure); returns the new state."""
        with self._transaction() as con:
            row = con.execute(
                "SELECT release_id, path, pid, published FROM spends WHERE release_id = ? AND state = 'reserved'",
                (release_id,),
            ).fetchone()
            if row is None:
                return "missing"
            return self._settle(con, *row)

    @contextlib.contextmanager
    def reservation(
        self, party: str, dataset_id: str, guarantee: Guarantee, *, release_id: str, kind: str, **record: Any
    ) -> Iterator[Reservation]:
        """:meth:`reserve` (``record``: its ``method`` and ``path``), run the body (draw noise,
        write the output), then commit.

        The spend is published automatically before the body's first secret draw; the body must
        also call ``handle.publish()`` before any output can exist or leave the process. On an
        exception in the body the reservation is settled: committed once published, aborted
        (refunded) only if it never was — i.e. only if no noise was drawn.
        """
        from dpadapt.privacy.mechanisms import before_noise

        spend = self.reserve(party, dataset_id, guarantee, release_id=release_id, kind=kind, **record)
        handle = Reservation(release_id, spend, kind, ledger=self)
        try:
            checkpoint("after_reserve")
            with before_noise(handle.publish):  # the spend is final before the first secret draw
                yield handle
        except BaseException:
            self.resolve(release_id)
            raise
        checkpoint("after_write")
        self.commit(release_id, handle.kind)

    def recover(self) -> list[tuple[str, str]]:
        """Settle the reservations of dead processes; returns ``(release_id, new state)`` pairs.

        A read-only ledger settles nothing (its pending reservations keep counting as spent).
        """
        if self.read_only is not None:
            return []
        with self._transaction() as con:
            return self._recover(con)

    def _recover(self, con: sqlite3.Connection) -> list[tuple[str, str]]:
        rows = con.execute(
            "SELECT release_id, path, pid, published, host, proc_start FROM spends WHERE state = 'reserved'"
        ).fetchall()
        out = []
        for release_id, path, pid, published, host, proc_start in rows:
            if not _alive(pid, host, proc_start):
                out.append((release_id, self._settle(con, release_id, path, pid, published)))
        return out

    def _settle(self, con: sqlite3.Connection, release_id: str, path: str | None, pid: int, published: int) -> str:
        """Committed once published (the output may exist anywhere now); aborted only if provably never published."""
        if published:
            state = "committed"
            if path is not None and file_release_id(path) == release_id:
                note = "output found after the process ended; spend recorded"
            else:
                note = "the output may have been written (then moved, deleted or sent); counted as spent"
        else:
            state, note = "aborted", "process ended before its output could leave it; nothing was released"
        leftover = f"{path}.tmp-{pid}" if path is not None else None
        if leftover is not None and os.path.exists(leftover):
            os.unlink(leftover)
            note += " (removed its unfinished temporary file)"
        con.execute(
            "UPDATE spends SET state = ?, resolved = ?, note = ? WHERE release_id = ?", (state, _now(), note, release_id)
        )
        return state

    def history(self, party: str | None = None, dataset_id: str | None = None) -> list[Entry]:
        """Every recorded release (oldest first), optionally of one party / dataset."""
        self.recover()
        query = (
            "SELECT release_id, party, dataset_id, method, kind, state, guarantee, path, created, resolved, note "
            "FROM spends WHERE (? IS NULL OR party = ?) AND (? IS NULL OR dataset_id = ?) ORDER BY created, rowid"
        )
        rows = self._read(lambda con: con.execute(query, (party, party, dataset_id, dataset_id)).fetchall())
        return [
            Entry(r[0], r[1], r[2], r[3], r[4], r[5], Guarantee.from_dict(json.loads(r[6])), r[7], r[8], r[9], r[10])
            for r in rows
        ]
