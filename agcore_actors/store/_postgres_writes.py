"""The PostgreSQL backend's writes: session rows, the log, its blobs, the facts, deletes.

In a batch's first pass (no savepoints) every write waits in a buffer, grouped by table
and statement, and goes to the server with ``COMMIT`` in one pipelined round trip
(``executemany``); a read in the batch flushes the buffer first (:meth:`_flush`), so it
sees what the batch's earlier requests wrote. In the savepoint pass (after a failed
request) writes go straight through. Every value is checked before it is buffered
(:func:`._postgres_schema.check_values`), so a bad one fails its own request, not the
``COMMIT``. Blobs are written and locked in hash order: two writers never deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..llm import Message
from ._backend import encode_messages
from ._blobs import BlobShelf
from ._postgres_schema import check_values
from ._session_rows import COLUMNS, ROLE, values_of
from .messages import LogEntry, SessionRecord

_N = len(COLUMNS.split(","))
_SET = ", ".join(f"{c.strip()} = %s" for c in COLUMNS.split(",")[1:])
_INSERT_SESSION = (
    f"INSERT INTO sessions ({COLUMNS}, summary) VALUES ({', '.join(['%s'] * (_N + 1))})"
)
_UPDATE_SESSION = f"UPDATE sessions SET {_SET} WHERE id = %s"
_UPDATE_SESSION_SUMMARY = f"UPDATE sessions SET {_SET}, summary = %s WHERE id = %s"
_INSERT_MESSAGE = (
    "INSERT INTO messages (session, idx, turn, role, body, created_at) "
    "VALUES (%s, %s, %s, %s, %s, %s)"
)
# DO UPDATE, not DO NOTHING: the row stays locked to the commit, so a delete of the
# blob by another host (which locks it first, see delete) waits and sees the new ref.
_INSERT_BLOB = (
    "INSERT INTO blobs (hash, size, data) VALUES (%s, %s, %s) "
    "ON CONFLICT (hash) DO UPDATE SET size = excluded.size"
)
_INSERT_BLOB_REF = "INSERT INTO blob_refs (session, hash) VALUES (%s, %s) ON CONFLICT DO NOTHING"
_DELETE_FACT = "DELETE FROM facts WHERE session = %s AND key = %s"
_UPSERT_FACT = (
    "INSERT INTO facts (session, key, value) VALUES (%s, %s, %s) "
    "ON CONFLICT (session, key) DO UPDATE SET value = excluded.value"
)


class PostgresWrites:
    """Mixed into :class:`._postgres.PostgresSessionBackend` (which sets these)."""

    _conn: Any
    blobs: BlobShelf
    #: Within one transaction: records known (None: no row), and the buffered writes.
    _records: dict[str, SessionRecord | None]
    _buffer: dict[str, list[tuple[str, list[tuple[Any, ...]]]]]
    _buffering: bool

    # -- the buffer -------------------------------------------------------------------

    def _write(self, table: str, sql: str, rows: list[tuple[Any, ...]]) -> None:
        for row in rows:
            check_values(row)
        if self._buffering:
            runs = self._buffer.setdefault(table, [])
            if runs and runs[-1][0] == sql:
                runs[-1][1].extend(rows)
            else:
                runs.append((sql, rows))
        elif len(rows) == 1:
            self._conn.execute(sql, rows[0])
        else:
            self._conn.cursor().executemany(sql, rows)

    def _flush_buffer(self) -> None:
        tables, self._buffer = self._buffer, {}
        for runs in tables.values():
            for sql, rows in runs:
                self._conn.cursor().executemany(sql, rows)

    def _flush(self) -> Any:
        """The connection, once the buffered writes are in it (before a read of them)."""
        if self._buffer:
            with self._conn.pipeline():
                self._flush_buffer()
        return self._conn

    # -- rows -------------------------------------------------------------------------

    def put_record(
        self, record: SessionRecord, *, new: bool, summary: Sequence[Message] | None = None
    ) -> None:
        text = None if not summary else encode_messages(summary).decode()
        if new:
            self._write("sessions", _INSERT_SESSION, [(record.id, *values_of(record), text)])
        elif summary is None:
            self._write("sessions", _UPDATE_SESSION, [(*values_of(record), record.id)])
        else:
            self._write(
                "sessions", _UPDATE_SESSION_SUMMARY, [(*values_of(record), text, record.id)]
            )
        if self._buffering:
            self._records[record.id] = record
        else:
            self._records.pop(record.id, None)

    def append(self, session: str, entries: Sequence[LogEntry]) -> None:
        if not entries:
            return
        rows = []
        blobs: dict[str, bytes] = {}
        for e in entries:
            body, found = self.blobs.encode(e.message)
            blobs.update((b.sha256, b.data) for b in found)
            role = ROLE[type(e.message)]
            rows.append((session, e.index, e.turn, role, body.decode(), e.created_at))
        if blobs:
            # In hash order, as delete locks them: two writers never deadlock.
            blob_rows = [(h, len(d), d) for h, d in sorted(blobs.items())]
            self._write("blobs", _INSERT_BLOB, blob_rows)
            self._write("blob_refs", _INSERT_BLOB_REF, [(session, h) for h in blobs])
        self._write("messages", _INSERT_MESSAGE, rows)

    def update_facts(self, session: str, removed: Sequence[str], values: dict[str, str]) -> None:
        if removed:
            self._write("facts", _DELETE_FACT, [(session, k) for k in removed])
        if values:
            self._write("facts", _UPSERT_FACT, [(session, k, v) for k, v in values.items()])

    # -- whole sessions ---------------------------------------------------------------

    def delete(self, sessions: Sequence[str]) -> list[str]:
        check_values(sessions)
        conn = self._flush()
        ids = list(sessions)
        with conn.pipeline():
            gone = conn.execute("DELETE FROM sessions WHERE id = ANY(%s) RETURNING id", (ids,))
            conn.execute("DELETE FROM messages WHERE session = ANY(%s)", (ids,))
            conn.execute("DELETE FROM facts WHERE session = ANY(%s)", (ids,))
            kept = conn.execute(
                "DELETE FROM blob_refs WHERE session = ANY(%s) RETURNING hash", (ids,)
            )
        hashes = sorted({row[0] for row in kept.fetchall()})
        if hashes:
            # Lock first (a writer of the same blob holds it to its commit), then look
            # for refs in a statement of its own, which sees that writer's new ref.
            conn.execute(
                "SELECT hash FROM blobs WHERE hash = ANY(%s) ORDER BY hash FOR UPDATE", (hashes,)
            )
            conn.execute(
                "DELETE FROM blobs b WHERE b.hash = ANY(%s) "
                "AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.hash = b.hash)",
                (hashes,),
            )
        found = {row[0] for row in gone.fetchall()}
        for session in ids:
            self._records[session] = None
        return [s for s in ids if s in found]
