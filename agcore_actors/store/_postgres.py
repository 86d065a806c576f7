"""The PostgreSQL backend: the session tables in a database that several hosts share.

Durability: :meth:`PostgresSessionBackend.run_batch` is one transaction, committed (by
the server's own ``synchronous_commit`` setting: durable on its disk by default) before
it returns.

One batch, few round trips: the batch's transaction starts with one pipelined round trip
that reads the server's clock and locks (``SELECT … FOR UPDATE``, in id order) the rows of
every session and lease its requests name, so the operations then read them from
memory; their writes wait in a buffer and go, with ``COMMIT``, in one last pipelined round
trip (``executemany``, see :mod:`._postgres_writes`). If one operation fails (a
conflict), the transaction is rolled back and the batch runs again with each operation
in a savepoint, writing straight through, as on SQLite (:mod:`._sqlite`).

Several writers (hosts) at once: every write transaction locks the rows it decides on, so
a version check or a fence check and the write it guards are never split by another
host's transaction; a new session or lease row is a plain ``INSERT`` (a second creator
fails on the primary key rather than overwriting). A deadlock, a serialization failure
or such a duplicate key rolls the batch back and runs it again (at most ``retries``
times, then :class:`StoreBusy`).

Stalls: with ``stall_timeout``, the server ends a transaction of this connection left idle
that long (its process stopped or cut off mid-batch), releasing its row locks; the
batch then fails as after a lost connection.

Connection loss: the batch fails with :class:`StoreUnavailable` (or, if it was lost
during ``COMMIT``, whose outcome is then unknown, with :class:`StoreStorageError`,
which restarts the actor) and the next batch connects again, so a fault that heals
leaves the store usable.

Time: leases and heartbeats use the server's ``clock_timestamp()``, read once per write
transaction (``lease_clock="database"``, the default); ``"local"`` uses the actor's clock
instead (one host only, or tests on virtual time).

Threads: like SQLite's, called from one worker thread at a time, never concurrently.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any, Literal

import outcome

from ._backend import Operation
from ._blobs import BlobShelf
from ._errors import InvalidRequest, StoreBusy, StoreStorageError
from ._postgres_leases import PostgresLeases
from ._postgres_reads import PostgresReads
from ._postgres_schema import check_values, classify, connect, import_psycopg
from ._postgres_writes import PostgresWrites
from ._session_rows import COLUMNS, record_of
from .messages import SessionRecord


def _sessions_of(
    operations: Sequence[Operation],
) -> tuple[list[str], list[str], dict[str, set[str]]]:
    """The sessions the batch's requests name, those whose lease they read, and those
    whose lease they grant (to the hosts named)."""
    sessions: set[str] = set()
    leased: set[str] = set()
    grants: dict[str, set[str]] = {}
    for op in operations:
        args: tuple[Any, ...] = getattr(op, "args", ())
        msg = args[1] if len(args) > 1 else None
        session = getattr(msg, "session", None)
        snapshot = getattr(msg, "snapshot", None)
        if snapshot is not None:
            session = snapshot.record.id
        ids = getattr(msg, "ids", None)
        if isinstance(ids, list) and len(ids) == 1 and getattr(msg, "fence", None) is not None:
            session = ids[0]  # a fenced delete
        if not isinstance(session, str):
            continue
        if hasattr(msg, "expected_version") or snapshot is not None:
            sessions.add(session)
        if getattr(msg, "fence", None) is not None or hasattr(msg, "ttl"):
            leased.add(session)
        if hasattr(msg, "ttl"):
            grants.setdefault(session, set()).add(str(getattr(msg, "host", "")))
    return sorted(sessions), sorted(leased), grants


class PostgresSessionBackend(PostgresWrites, PostgresReads, PostgresLeases):
    """Sessions in a PostgreSQL database (see the module doc for the guarantees)."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = 10.0,
        lease_clock: Literal["database", "local"] = "database",
        retries: int = 8,
        migrate: bool = True,
        reader: bool = False,
        stall_timeout: float | None = None,
    ) -> None:
        """Connect to ``url`` (and migrate the schema if ``migrate``). ``reader``: a
        connection for read batches only (repeatable read, read only).
        ``stall_timeout``: seconds the server lets a transaction of this connection sit
        idle before ending it (None: the server's setting)."""
        self._psycopg = import_psycopg()
        self.url = url
        self._connect_timeout = connect_timeout
        self._retries = retries
        self._reader = reader
        self._stall_timeout = stall_timeout
        self.lease_clock = lease_clock
        self._conn: Any = None
        self._conn = self._open(migrate)
        #: The media of messages (see :mod:`._blobs`).
        self.blobs = BlobShelf(self._blob)
        #: Within one transaction: records and leases known (None: no row), the clock.
        self._records: dict[str, SessionRecord | None] = {}
        self._buffer: dict[str, list[tuple[str, list[tuple[Any, ...]]]]] = {}
        self._buffering = False
        self._reset_leases()

    def _open(self, migrate: bool) -> Any:
        conn = connect(
            self.url,
            connect_timeout=self._connect_timeout,
            migrate_schema=migrate,
            stall_timeout=self._stall_timeout,
        )
        if self._reader:
            conn.isolation_level = self._psycopg.IsolationLevel.REPEATABLE_READ
            conn.read_only = True
        return conn

    @property
    def connection(self) -> Any:
        """The psycopg connection (None between a lost connection and the next batch)."""
        return self._conn

    # -- batches ----------------------------------------------------------------------

    def run_batch(self, operations: Sequence[Operation], write: bool) -> list[outcome.Outcome[Any]]:
        psycopg = self._psycopg
        for attempt in range(self._retries + 1):
            if self._conn is None or self._conn.closed:
                self._conn = self._open(False)
            committing = False
            try:
                results = self._apply(operations, write, isolated=False)
                if results is None:
                    self._rollback()
                    results = self._apply(operations, write, isolated=True)
                    assert results is not None
                committing = True
                self._commit()
                return results
            except psycopg.Error as exc:
                self._abandon()
                error = classify(exc, self.url)
                if isinstance(error, StoreBusy) and attempt < self._retries:
                    time.sleep(min(0.2, 0.002 * 2**attempt))
                    continue
                if committing and not isinstance(error, StoreBusy):
                    error = StoreStorageError(f"{error} (during COMMIT: outcome unknown)")
                raise error from None
            except BaseException:
                self._abandon()
                raise
            finally:
                self._end()
        raise AssertionError("unreachable")  # pragma: no cover

    def _end(self) -> None:
        self._records.clear()
        self._buffer.clear()
        self._buffering = False
        self._reset_leases()

    def _abandon(self) -> None:
        """Roll back what is open; a connection that is broken is dropped."""
        conn = self._conn
        self._end()
        if conn is None:
            return
        with contextlib.suppress(self._psycopg.Error):
            conn.rollback()
        if conn.broken or conn.closed:
            self._conn = None
            with contextlib.suppress(self._psycopg.Error):
                conn.close()

    def _rollback(self) -> None:
        self._end()
        self._conn.rollback()

    def _commit(self) -> None:
        with self._conn.pipeline():
            self._flush_buffer()
            self._conn.execute("COMMIT")

    def _apply(
        self, operations: Sequence[Operation], write: bool, *, isolated: bool
    ) -> list[outcome.Outcome[Any]] | None:
        conn = self._conn
        if write:
            self._prefetch(*_sessions_of(operations))
        savepoints = write and isolated
        self._buffering = not savepoints
        results: list[outcome.Outcome[Any]] = []
        for op in operations:
            if savepoints:
                conn.execute("SAVEPOINT op")
            try:
                value = op()
            except self._psycopg.errors.DataError as exc:
                # A value the server refused (checked ones never get there): the
                # request's fault, undone alone in its savepoint.
                value = outcome.Error(InvalidRequest(str(exc).splitlines()[0]))
                if not savepoints:
                    if write:
                        return None
                    raise
                conn.execute("ROLLBACK TO SAVEPOINT op")
                self._forget()
                results.append(value)
                continue
            except self._psycopg.Error:
                raise
            except Exception as exc:
                if write and not isolated:
                    return None
                if savepoints:
                    conn.execute("ROLLBACK TO SAVEPOINT op")
                    self._forget()
                results.append(outcome.Error(exc))
            else:
                if savepoints:
                    conn.execute("RELEASE SAVEPOINT op")
                results.append(outcome.Value(value))
        return results

    def _forget(self) -> None:
        """After a rollback to a savepoint: what was read may have been undone."""
        self._records.clear()
        self._reset_leases(locks=False)

    def _prefetch(
        self, sessions: list[str], leased: list[str], grants: dict[str, set[str]]
    ) -> None:
        """Lock and read the batch's sessions and leases, and the clock: one round trip.

        The leases are locked ``FOR KEY SHARE`` when the batch grants none (fenced writes
        only): a grant to another host still waits for the write's transaction, but a
        renewal of the lease (an ``UPDATE`` of its expiry, on the lease connection) does
        not. All in one statement, in session order. A batch that grants reads them
        without a lock, then locks ``FOR UPDATE`` only those it may grant (a second
        round trip, see :meth:`_lock_grantable`)."""
        conn = self._conn
        with conn.pipeline():
            clock = (
                conn.execute("SELECT extract(epoch from clock_timestamp())::float8")
                if self.lease_clock == "database"
                else None
            )
            lock = self.LEASES if grants else self.LEASES_FOR_KEY_SHARE
            leases = conn.execute(lock, (leased,)) if leased else None
            records = (
                conn.execute(
                    f"SELECT {COLUMNS} FROM sessions WHERE id = ANY(%s) ORDER BY id FOR UPDATE",
                    (sessions,),
                )
                if sessions
                else None
            )
        if clock is not None:
            self._now = float(clock.fetchone()[0])
        if leases is not None:
            self._known_leases(leased, leases.fetchall())
            if not grants:
                self._key_shared = self._locked = frozenset(leased)
        if records is not None:
            self._records.update(dict.fromkeys(sessions))
            for row in records.fetchall():
                self._records[row[0]] = record_of(row)
        if grants:
            self._lock_grantable(grants)

    # -- records ----------------------------------------------------------------------

    def record(self, session: str) -> SessionRecord | None:
        if session in self._records:
            return self._records[session]
        check_values([session])
        lock = "" if self._reader else " FOR UPDATE"
        row = self._conn.execute(
            f"SELECT {COLUMNS} FROM sessions WHERE id = %s{lock}", (session,)
        ).fetchone()
        found = None if row is None else record_of(row)
        self._records[session] = found
        return found

    def close(self) -> None:
        """Close the connection (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(self._psycopg.Error):
                conn.close()
