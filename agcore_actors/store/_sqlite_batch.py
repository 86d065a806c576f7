"""What the SQLite backend keeps for one batch: its writes, and the records it knows.

Writes: inside a batch, the rows an operation writes wait in a :class:`WriteBuffer`, by
table, and go to SQLite together before anything reads the tables and before the
commit: one ``executemany`` per statement run instead of one call per row. Within a
table the statements keep their order (an upsert of a fact then its removal stay in
that order); the tables are independent (no triggers, no foreign keys), so their order
between them does not matter.

Records: a :class:`RecordCache` keeps the session records this connection wrote or
read, so an operation need not select its session's row again. It is valid only while
no other connection has written: each transaction starts by comparing ``PRAGMA
data_version`` (which changes when another connection, in this process or another,
commits) with the value seen at the last one, and empties the cache if it changed. A
rollback empties it too (rare: a batch in which a request failed, which then runs
again with each operation in a savepoint, bypassing the cache). While a transaction is
open nothing is evicted, so a buffered write is always in the cache and a record read
from the table is never older than one in the buffer.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .messages import SessionRecord

#: A table's buffered statement runs: (sql, the rows of consecutive calls).
_Runs = list[tuple[str, list[tuple[Any, ...]]]]


class WriteBuffer:
    """Rows waiting to be written, per table, in the order they were given."""

    __slots__ = ("_tables", "active")

    def __init__(self) -> None:
        self._tables: dict[str, _Runs] = {}
        #: Whether writes wait here (inside a batch) or go straight to SQLite.
        self.active = False

    def add(self, table: str, sql: str, rows: list[tuple[Any, ...]]) -> None:
        runs = self._tables.setdefault(table, [])
        if runs and runs[-1][0] == sql:
            runs[-1][1].extend(rows)
        else:
            runs.append((sql, rows))

    def flush(self, conn: sqlite3.Connection) -> None:
        """Write everything buffered (each run with one ``executemany``)."""
        if not self._tables:
            return
        tables, self._tables = self._tables, {}
        for runs in tables.values():
            for sql, rows in runs:
                conn.executemany(sql, rows)

    def discard(self) -> None:
        self._tables.clear()


class RecordCache:
    """Session records by id, at most ``size`` between transactions (see the module doc)."""

    __slots__ = ("_data_version", "_records", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._records: dict[str, SessionRecord] = {}
        self._data_version: int | None = None

    def begin(self, conn: sqlite3.Connection) -> None:
        """At the start of a transaction: forget everything if another connection wrote."""
        if not self.size:
            return
        version = int(conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._data_version:
            self._records.clear()
            self._data_version = version

    def get(self, session: str) -> SessionRecord | None:
        return self._records.get(session)

    def put(self, record: SessionRecord) -> None:
        if not self.size:
            return
        records = self._records
        records.pop(record.id, None)  # to the end: the least recently used go first
        records[record.id] = record

    def drop(self, session: str) -> None:
        self._records.pop(session, None)

    def committed(self) -> None:
        """The transaction was committed: evict down to ``size``."""
        records = self._records
        excess = len(records) - self.size
        if excess > 0:
            for session in list(records)[:excess]:
                del records[session]

    def clear(self) -> None:
        """Forget everything (a transaction was rolled back)."""
        self._records.clear()
        self._data_version = None
