"""The SQLite backend: sessions, messages and facts as tables in one file (WAL).

Durability: :meth:`SqliteSessionBackend.run_batch` is one transaction, committed before
it returns. ``synchronous="FULL"`` (the default) fsyncs the WAL at that commit, so an
acknowledged write survives a process crash, an OS crash and a power loss;
``"NORMAL"`` still survives the process being killed (the commit is in the OS's page
cache) but may lose the last commits if the machine goes down.

One batch, many requests: the operations run in one transaction and commit together,
with one fsync for all of them (group commit). If one fails (a conflict in one
session), the transaction is rolled back and the batch runs again with each operation
in a savepoint, so the failed one is undone alone and the others still commit; a batch
in which nothing fails pays for no savepoints. Within a batch, rows are written per
statement with one ``executemany`` for the whole batch, and a session's record is
read from a cache kept valid by ``PRAGMA data_version`` (see
:mod:`._sqlite_batch`): what the operations see is what row-by-row writes would show.

Sharing a file with the memory store: both connections use WAL (readers never block
the writer), start every write transaction with ``BEGIN IMMEDIATE`` (the write lock is
taken up front, so a transaction never has to upgrade a read snapshot, the case a busy
handler cannot retry), and wait up to ``busy_timeout`` for the other's transaction to
end. The schema version lives in ``store_meta``, so the memory store's
``PRAGMA user_version`` is left alone.

Threads: the connection is opened with ``check_same_thread=False`` because the actor
calls the backend from trio's worker threads, one at a time (never concurrently).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import outcome

from ..llm import Message
from ._backend import Operation, decode_messages, encode_messages
from ._blobs import BlobShelf
from ._schema import (
    DEFAULT_CHECKPOINT_PAGES,
    DEFAULT_PAGE_SIZE,
    classify,
    connect,
    storage_errors,
)
from ._session_rows import COLUMNS, ROLE, record_of, values_of
from ._sqlite_batch import RecordCache, WriteBuffer
from ._sqlite_leases import SqliteLeases
from .messages import LogEntry, SessionRecord, SessionStatus

_SET = ", ".join(f"{c.strip()} = ?" for c in COLUMNS.split(",")[1:])
_INSERT_SESSION = f"INSERT INTO sessions ({COLUMNS}, summary) VALUES ({', '.join('?' * 17)})"
_UPDATE_SESSION = f"UPDATE sessions SET {_SET} WHERE id = ?"
_UPDATE_SESSION_SUMMARY = f"UPDATE sessions SET {_SET}, summary = ? WHERE id = ?"
_INSERT_MESSAGE = (
    "INSERT INTO messages (session, idx, turn, role, body, created_at) VALUES (?, ?, ?, ?, ?, ?)"
)
_INSERT_BLOB = "INSERT INTO blobs (hash, size, data) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"
_INSERT_BLOB_REF = "INSERT INTO blob_refs (session, hash) VALUES (?, ?) ON CONFLICT DO NOTHING"
_DELETE_ORPHAN_BLOB = (
    "DELETE FROM blobs WHERE hash = ? AND NOT EXISTS (SELECT 1 FROM blob_refs WHERE hash = ?)"
)
_DELETE_FACT = "DELETE FROM facts WHERE session = ? AND key = ?"
_UPSERT_FACT = (
    "INSERT INTO facts (session, key, value) VALUES (?, ?, ?) "
    "ON CONFLICT (session, key) DO UPDATE SET value = excluded.value"
)


class SqliteSessionBackend(SqliteLeases):
    """Sessions in one SQLite file (see the module doc for the guarantees)."""

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        busy_timeout: float = 10.0,
        cache_mib: int = 32,
        checkpoint_pages: int = DEFAULT_CHECKPOINT_PAGES,
        page_size: int = DEFAULT_PAGE_SIZE,
        record_cache: int = 16_384,
    ) -> None:
        """``record_cache``: session records kept between transactions (0: none); the
        other settings are :func:`._schema.connect`'s."""
        self.path = Path(path)
        self._buffer = WriteBuffer()
        self._cache = RecordCache(record_cache)
        #: The media of messages (see :mod:`._blobs`).
        self.blobs = BlobShelf(self._blob)
        self._conn = connect(
            self.path,
            synchronous=synchronous,
            busy_timeout=busy_timeout,
            cache_mib=cache_mib,
            checkpoint_pages=checkpoint_pages,
            page_size=page_size,
        )

    @property
    def connection(self) -> sqlite3.Connection:
        """The connection (for one-off maintenance such as the transcript migration)."""
        return self._conn

    def run_batch(self, operations: Sequence[Operation], write: bool) -> list[outcome.Outcome[Any]]:
        conn = self._conn
        try:
            results = self._apply(operations, write, isolated=False)
            if results is None:
                # An operation failed mid-batch: start again with each in a savepoint, so
                # that its writes (if any) are undone alone. Operations are functions of
                # the stored state, so the second run gives the same outcomes.
                self._rollback()
                results = self._apply(operations, write, isolated=True)
                assert results is not None
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self._rollback()
            self._buffer.discard()
            self._cache.clear()  # in case the rollback failed
            if isinstance(exc, sqlite3.Error):
                raise classify(exc) from exc
            raise
        finally:
            self._buffer.active = False
        self._cache.committed()
        return results

    def _rollback(self) -> None:
        self._buffer.discard()
        self._cache.clear()
        self._conn.execute("ROLLBACK")

    def _apply(
        self, operations: Sequence[Operation], write: bool, *, isolated: bool
    ) -> list[outcome.Outcome[Any]] | None:
        """Begin a transaction and run ``operations`` in it; None if one of a write batch
        failed and ``isolated`` is false (the transaction is then left open)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        self._cache.begin(conn)
        savepoints = write and isolated
        # Isolated, each operation writes straight through its savepoint, and the
        # cache is left alone (its records are dropped as they are written).
        self._buffer.active = not savepoints
        results: list[outcome.Outcome[Any]] = []
        for op in operations:
            if savepoints:
                conn.execute("SAVEPOINT op")
            try:
                value = op()
            except sqlite3.Error:
                raise
            except Exception as exc:
                if write and not isolated:
                    return None
                if savepoints:
                    conn.execute("ROLLBACK TO op")
                    conn.execute("RELEASE op")
                results.append(outcome.Error(exc))
            else:
                if savepoints:
                    conn.execute("RELEASE op")
                results.append(outcome.Value(value))
        self._buffer.flush(conn)
        return results

    def _flush(self) -> sqlite3.Connection:
        """The connection, once the buffered writes are in it (before any other read or
        write of the tables)."""
        conn = self._conn
        self._buffer.flush(conn)
        return conn

    def _write(self, table: str, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if self._buffer.active:
            self._buffer.add(table, sql, rows)
        elif len(rows) == 1:
            self._conn.execute(sql, rows[0])
        else:
            self._conn.executemany(sql, rows)

    # -- records ----------------------------------------------------------------------

    def record(self, session: str) -> SessionRecord | None:
        cached = self._buffer.active  # the cache is valid inside a batch only
        if cached:
            found = self._cache.get(session)
            if found is not None:
                return found
        # No flush needed: a buffered record is in the cache (see _sqlite_batch).
        row = self._conn.execute(
            f"SELECT {COLUMNS} FROM sessions WHERE id = ?", (session,)
        ).fetchone()
        if row is None:
            return None
        record = record_of(row)
        if cached:
            self._cache.put(record)
        return record

    def summary(self, session: str) -> list[Message]:
        row = (
            self._flush()
            .execute("SELECT summary FROM sessions WHERE id = ?", (session,))
            .fetchone()
        )
        return [] if row is None or row[0] is None else decode_messages(row[0])

    def put_record(
        self, record: SessionRecord, *, new: bool, summary: Sequence[Message] | None = None
    ) -> None:
        if self._buffer.active:
            self._cache.put(record)
        else:
            self._cache.drop(record.id)
        text = None if not summary else encode_messages(summary).decode()
        if new:
            self._write("sessions", _INSERT_SESSION, [(record.id, *values_of(record), text)])
        elif summary is None:
            self._write("sessions", _UPDATE_SESSION, [(*values_of(record), record.id)])
        else:
            self._write(
                "sessions", _UPDATE_SESSION_SUMMARY, [(*values_of(record), text, record.id)]
            )

    # -- the log and the facts --------------------------------------------------------

    def append(self, session: str, entries: Sequence[LogEntry]) -> None:
        if not entries:
            return
        rows = []
        blobs: dict[str, bytes] = {}
        for e in entries:
            body, found = self.blobs.encode(e.message)
            blobs.update((b.sha256, b.data) for b in found)
            rows.append(
                (session, e.index, e.turn, ROLE[type(e.message)], body.decode(), e.created_at)
            )
        if blobs:
            self._write("blobs", _INSERT_BLOB, [(h, len(d), d) for h, d in blobs.items()])
            self._write("blob_refs", _INSERT_BLOB_REF, [(session, h) for h in blobs])
        self._write("messages", _INSERT_MESSAGE, rows)

    def _blob(self, digest: str) -> bytes | None:
        row = self._flush().execute("SELECT data FROM blobs WHERE hash = ?", (digest,)).fetchone()
        return None if row is None else bytes(row[0])

    def update_facts(self, session: str, removed: Sequence[str], values: dict[str, str]) -> None:
        if removed:
            self._write("facts", _DELETE_FACT, [(session, k) for k in removed])
        if values:
            self._write("facts", _UPSERT_FACT, [(session, k, v) for k, v in values.items()])

    def facts(self, session: str) -> dict[str, str]:
        return dict(
            self._flush()
            .execute("SELECT key, value FROM facts WHERE session = ? ORDER BY key", (session,))
            .fetchall()
        )

    def has_turn(self, session: str, turn: str) -> bool:
        row = self._flush().execute(
            "SELECT 1 FROM messages WHERE session = ? AND turn = ? LIMIT 1", (session, turn)
        )
        return row.fetchone() is not None

    def entries(self, session: str, start: int, stop: int) -> list[LogEntry]:
        rows = self._flush().execute(
            "SELECT idx, turn, created_at, body FROM messages "
            "WHERE session = ? AND idx >= ? AND idx < ? ORDER BY idx",
            (session, start, stop),
        )
        return [
            LogEntry(index=i, turn=t, created_at=at, message=self.blobs.decode(body))
            for i, t, at, body in rows.fetchall()
        ]

    def messages(self, session: str, start: int, stop: int) -> list[Message]:
        rows = self._flush().execute(
            "SELECT body FROM messages WHERE session = ? AND idx >= ? AND idx < ? ORDER BY idx",
            (session, start, stop),
        )
        return [self.blobs.decode(body) for (body,) in rows.fetchall()]

    def is_tool(self, session: str, index: int) -> bool:
        row = (
            self._flush()
            .execute("SELECT role FROM messages WHERE session = ? AND idx = ?", (session, index))
            .fetchone()
        )
        return row is not None and row[0] == "tool"

    def group_start(self, session: str, index: int) -> int:
        row = (
            self._flush()
            .execute(
                "SELECT idx FROM messages WHERE session = ? AND idx <= ? AND role != 'tool' "
                "ORDER BY idx DESC LIMIT 1",
                (session, index),
            )
            .fetchone()
        )
        return 0 if row is None else int(row[0])

    # -- whole sessions ---------------------------------------------------------------

    def page(
        self,
        idle_before: float | None,
        status: SessionStatus | None,
        after: tuple[float, str] | None,
        limit: int,
    ) -> list[SessionRecord]:
        where: list[str] = []
        args: list[Any] = []
        if status is not None:
            where.append("status = ?")
            args.append(status)
            if status != "idle":
                # The partial index's own condition, verbatim: SQLite uses a partial
                # index only for a query whose WHERE states its condition.
                where.append("status != 'idle'")
        if idle_before is not None:
            where.append("updated_at < ?")
            args.append(idle_before)
        if after is not None:
            where.append("(updated_at, id) > (?, ?)")
            args.extend(after)
        clause = f"WHERE {' AND '.join(where)} " if where else ""
        rows = self._flush().execute(
            f"SELECT {COLUMNS} FROM sessions {clause}ORDER BY updated_at, id LIMIT ?",
            (*args, limit),
        )
        return [record_of(row) for row in rows]

    def delete(self, sessions: Sequence[str]) -> list[str]:
        conn = self._flush()
        gone: list[str] = []
        for session in sessions:
            self._cache.drop(session)
            if conn.execute(
                "DELETE FROM sessions WHERE id = ? RETURNING id", (session,)
            ).fetchone():
                conn.execute("DELETE FROM messages WHERE session = ?", (session,))
                conn.execute("DELETE FROM facts WHERE session = ?", (session,))
                kept = conn.execute(
                    "DELETE FROM blob_refs WHERE session = ? RETURNING hash", (session,)
                ).fetchall()
                conn.executemany(_DELETE_ORPHAN_BLOB, [(h, h) for (h,) in kept])
                gone.append(session)
        return gone

    # -- maintenance ------------------------------------------------------------------

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``'s first line: "ok" for a sound file."""
        with storage_errors():
            return str(self._conn.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        """Close the connection (idempotent)."""
        conn, self._conn = self._conn, None  # type: ignore[assignment]
        if conn is not None:
            with storage_errors():
                conn.close()
