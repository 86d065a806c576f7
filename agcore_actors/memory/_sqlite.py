"""The SQLite backend: one file, WAL, FTS5, versioned schema.

Durability: every write (``put``, ``delete``, ``set_pinned``, ``evict``, and
each outermost ``batch()``) is one transaction, committed before the call
returns. The journal is WAL. ``synchronous="FULL"`` (the default) fsyncs the
WAL at every commit, so an acknowledged write survives a process crash *and*
a power loss or OS crash. ``synchronous="NORMAL"`` skips that fsync (the WAL
is synced at checkpoints): an acknowledged write still survives the process
being killed, because the commit is in the OS's page cache, but the last
commits may be lost if the machine goes down; it writes several times faster.

Statistics: access and recall notes are written at the start of the next write
transaction, at a sweep, and at ``close`` (see ``_sqlite_reads``). A crash may
lose statistics gathered since the last write; it never loses an item.

Costs, with n items: opening reads a few counters (no scan); a put, delete or
pin is O(log n), eviction included: TTL-expired rows and capacity victims come
from indexes on age and use, and recall-based victims from an index on the
fixed part of their value (see ``_queues`` for the argument; the index is
built the first time a RecallBased policy opens the file).

One writer: the backend holds the file's writer lock while it is open, and a
second backend on the file is refused with :class:`StoreInUse` (see ``_lock``).

Threads: the connection is opened with ``check_same_thread=False`` because the
actor calls the backend from trio's worker threads; the backend itself is not
thread-safe and the actor's write lane (one write at a time) guarantees that
only one thread uses it at a time. Reads that must not wait for writes go to
:meth:`SqliteBackend.reader` connections instead.
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from ._errors import InvalidInput, NotFound, StorageError
from ._eviction import (
    EvictionConfig,
    Lru,
    RecallBased,
    expiry_cutoff,
    is_expired,
    max_items_of,
    recall_base,
    sweep_due,
)
from ._item import MemoryItem, row_item
from ._lock import WriterLock
from ._schema import storage_errors, write_meta
from ._sqlite_open import open_database
from ._sqlite_reads import COLUMNS, PendingStats, SqliteReader, SqliteReads, recall_victim
from ._store import Clock, check_put

log = logging.getLogger("agcore_actors.memory")

#: Pending statistics beyond this many items are written at once.
PENDING_LIMIT = 4096


class SqliteBackend(SqliteReads):
    """A store in one SQLite file (see the module doc for the guarantees).

    ``busy_timeout``: seconds a write waits, retrying with SQLite's backoff, for
    a lock another connection holds before it is :class:`StorageBusy`.
    ``check_integrity``: check the whole file at open (see ``_sqlite_open``).
    """

    def __init__(
        self,
        path: str | Path,
        eviction: EvictionConfig | None = None,
        *,
        clock: Clock = time.time,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        busy_timeout: float = 10.0,
        check_integrity: bool = False,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise InvalidInput(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        self._eviction = eviction or EvictionConfig()
        self._clock = clock
        self.path = Path(path)
        self._depth = 0
        self._writes = 0
        self._busy = busy_timeout
        policy = self._eviction.policy
        self._weights = policy if isinstance(policy, RecallBased) else RecallBased(max_items=0)
        self._lock = WriterLock(self.path)
        try:
            with storage_errors():
                self._conn, meta = open_database(
                    self.path,
                    synchronous=synchronous,
                    busy_timeout=busy_timeout,
                    weights=self._weights,
                    recall_index=isinstance(policy, RecallBased),
                    check_integrity=check_integrity,
                )
        except BaseException:
            self._lock.release()
            raise
        self._stats = PendingStats(int(meta["seq"]))
        self._unpinned = int(meta["unpinned"])

    def _recall_base(self, count: int, total: float) -> float:
        return recall_base(self._weights, count, total)

    # -- transactions --------------------------------------------------------

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction around the block (nested blocks join the outer one).

        The outermost block commits on success; on an exception everything in
        it is rolled back and the backend's counters are restored.
        """
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        saved = (self._unpinned, self._writes)
        with storage_errors():
            self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        taken = self._stats.take()
        try:
            with storage_errors():
                self._write_stats(*taken)
            yield
            with storage_errors():
                write_meta(self._conn, {"seq": self._stats.seq, "unpinned": self._unpinned})
                self._conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            self._unpinned, self._writes = saved
            self._stats.give_back(*taken)
            raise
        finally:
            self._depth = 0

    def _write_stats(self, access: dict[str, list[Any]], recall: dict[str, list[Any]]) -> None:
        if access:
            self._conn.executemany(
                "UPDATE items SET accessed_at = ?, access_seq = ?, "
                "access_count = access_count + ? WHERE id = ?",
                [(a, s, c, i) for i, (a, s, c) in access.items()],
            )
        if recall:
            self._conn.executemany(
                "UPDATE items SET recall_count = recall_count + ?, "
                "recall_score_total = recall_score_total + ?, recalled_at = ?, "
                "recall_a = recall_base(recall_count + ?, recall_score_total + ?), "
                "last_used = max(created_at, ?) WHERE id = ?",
                [(c, s, r, c, s, r, i) for i, (c, s, r) in recall.items()],
            )

    def _after_read(self) -> None:
        if len(self._stats) > PENDING_LIMIT:
            self.flush()

    def get(self, id: str) -> MemoryItem | None:
        if not self._depth:
            return super().get(id)
        # Inside a transaction the access is written with it (and undone with it).
        now = self.now()
        row = self._row(id, now)
        if row is None:
            return None
        with storage_errors():
            self._conn.execute(
                "UPDATE items SET accessed_at = ?, access_seq = ?, "
                "access_count = access_count + 1 WHERE id = ?",
                (now, self._stats.next_seq(), id),
            )
        return self.peek(id)

    def record_recall(self, id: str, score: float) -> None:
        if not self._depth:
            return super().record_recall(id, score)
        with storage_errors():
            self._write_stats({}, {id: [1, score, self.now()]})

    # -- writes ---------------------------------------------------------------

    def put(
        self,
        id: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        *,
        created_at: float | None = None,
        pinned: bool | None = None,
        index_text: str | None = None,
    ) -> MemoryItem:
        meta = check_put(id, content, metadata, created_at).decode()
        with self.batch(), storage_errors():
            now = self.now()
            created = now if created_at is None else created_at
            old = self._conn.execute(
                "SELECT n, created_at, pinned, access_count, recall_count, "
                "recall_score_total, recalled_at FROM items WHERE id = ?",
                (id,),
            ).fetchone()
            keep = old is not None and not is_expired(
                self._eviction.policy, old[1], bool(old[2]), now
            )
            was_pinned = bool(old[2]) if old is not None else False
            new_pinned = (was_pinned if keep else False) if pinned is None else pinned
            stats = tuple(old[3:7]) if keep else (0, 0, 0.0, None)
            a = self._recall_base(stats[1], stats[2])
            last = created if stats[3] is None else max(created, stats[3])
            seq = self._stats.next_seq()
            access_seq = self._stats.next_seq()
            (n,) = self._conn.execute(
                "INSERT INTO items (id, content, metadata, created_at, seq, pinned, "
                "accessed_at, access_seq, access_count, recall_count, recall_score_total, "
                "recalled_at, recall_a, last_used) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET content = excluded.content, "
                "metadata = excluded.metadata, created_at = excluded.created_at, "
                "seq = excluded.seq, pinned = excluded.pinned, "
                "accessed_at = excluded.accessed_at, access_seq = excluded.access_seq, "
                "access_count = excluded.access_count, recall_count = excluded.recall_count, "
                "recall_score_total = excluded.recall_score_total, "
                "recalled_at = excluded.recalled_at, recall_a = excluded.recall_a, "
                "last_used = excluded.last_used RETURNING n",
                (
                    id,
                    content,
                    meta,
                    created,
                    seq,
                    int(new_pinned),
                    now,
                    access_seq,
                    *stats,
                    a,
                    last,
                ),
            ).fetchone()
            if old is not None:
                self._conn.execute("DELETE FROM items_fts WHERE rowid = ?", (n,))
                self._unpinned -= not was_pinned
            if index_text is not None:
                self._conn.execute(
                    "INSERT INTO items_fts (rowid, body) VALUES (?, ?)", (n, index_text)
                )
            self._unpinned += not new_pinned
            item = row_item((id, content, meta, created, new_pinned, now, *stats))
            self._after_write()
        return item

    def _after_write(self) -> None:
        self._writes += 1
        if sweep_due(self._eviction, self._writes, self._unpinned):
            self._sweep()

    def _remove(self, ids: Sequence[str]) -> None:
        for id in ids:
            row = self._conn.execute(
                "DELETE FROM items WHERE id = ? RETURNING n, pinned", (id,)
            ).fetchone()
            if row is not None:
                self._conn.execute("DELETE FROM items_fts WHERE rowid = ?", (row[0],))
                self._unpinned -= not row[1]

    def _sweep(self) -> builtins.list[str]:
        """Full sweep inside the current transaction."""
        self._writes = 0
        now = self.now()
        policy = self._eviction.policy
        victims: builtins.list[str] = []
        cutoff = expiry_cutoff(policy, now)
        if cutoff is not None:
            rows = self._conn.execute(
                "DELETE FROM items WHERE pinned = 0 AND created_at <= ? RETURNING n, id",
                (cutoff,),
            ).fetchall()
            self._conn.executemany("DELETE FROM items_fts WHERE rowid = ?", [(n,) for n, _ in rows])
            self._unpinned -= len(rows)
            victims.extend(sorted(i for _, i in rows))
        cap = max_items_of(policy)
        while cap is not None and self._unpinned > cap:
            if isinstance(policy, RecallBased):
                chosen = [recall_victim(self._conn, policy, now)]
            else:
                order = "access_seq" if isinstance(policy, Lru) else "created_at, seq"
                chosen = [
                    r[0]
                    for r in self._conn.execute(
                        f"SELECT id FROM items WHERE pinned = 0 ORDER BY {order} LIMIT ?",
                        (self._unpinned - cap,),
                    )
                ]
            self._remove(chosen)
            victims.extend(chosen)
        return victims

    def evict(self) -> builtins.list[str]:
        with self.batch(), storage_errors():
            return self._sweep()

    def delete(self, id: str) -> bool:
        with self.batch(), storage_errors():
            row = self._conn.execute(
                "SELECT created_at, pinned FROM items WHERE id = ?", (id,)
            ).fetchone()
            if row is None:
                return False
            self._remove([id])
            return not is_expired(self._eviction.policy, row[0], bool(row[1]), self.now())

    def set_pinned(self, id: str, pinned: bool) -> MemoryItem:
        with self.batch(), storage_errors():
            now = self.now()
            vis, vargs = self._visible_sql(now)
            row = self._conn.execute(
                f"SELECT {COLUMNS} FROM items WHERE id = ?{vis}", (id, *vargs)
            ).fetchone()
            if row is None:
                raise NotFound(id)
            if bool(row[4]) != pinned:
                self._conn.execute("UPDATE items SET pinned = ? WHERE id = ?", (int(pinned), id))
                self._unpinned += -1 if pinned else 1
            item = self._stats.item((*row[:4], int(pinned), *row[5:]))
            self._after_write()
        return item

    # -- maintenance --------------------------------------------------------

    def reader(self) -> SqliteReader:
        """A reader on a read-only connection of its own (see :class:`SqliteReader`)."""
        return SqliteReader(self.path, self._eviction, self._clock, self._stats, self._busy)

    def statistics_pending(self) -> int:
        """How many items have access or recall notes not written yet."""
        return len(self._stats)

    def flush(self) -> None:
        """Write the pending statistics now (one transaction)."""
        with self.batch():
            pass  # batch() writes the pending statistics first

    def close(self) -> None:
        """Write pending statistics and close the connection (idempotent).

        Statistics that cannot be written (the disk is full) are dropped with a
        warning: they are advisory, and the file must still be closed.
        """
        if self._conn is None:
            return
        try:
            if len(self._stats):
                with self.batch():
                    pass
        except StorageError as exc:
            log.warning("memory store %s: statistics not written at close: %s", self.path, exc)
        finally:
            try:
                with storage_errors():
                    self._conn.close()
            finally:
                self._conn = None  # type: ignore[assignment]
                self._lock.release()
