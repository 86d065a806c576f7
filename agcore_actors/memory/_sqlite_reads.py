"""The SQLite backend's reads, over any connection to the file, and the
statistics that reads gather.

Access and recall statistics are advisory and not worth an fsync per read: a
``get`` or a recall is noted in :class:`PendingStats`, which the writer writes at
the start of its next transaction. Reads merge the pending notes into the items
they return, so a store always shows its latest statistics. :class:`PendingStats`
is shared by the writer and the read connections of one backend and guards
itself with a lock, because reads may run in other threads than writes.

All SQL is parameterised; the few clauses assembled in Python are fixed
fragments chosen by flags, never values.
"""

from __future__ import annotations

import builtins
import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ._errors import InvalidInput, StorageError
from ._eviction import (
    EvictionConfig,
    ItemStats,
    RecallBased,
    expiry_cutoff,
    is_expired,
    recall_value,
)
from ._item import ALL, MemoryFilter, MemoryItem, prefix_upper_bound, row_item
from ._schema import SCHEMA_VERSION, storage_errors
from ._store import BackendBase, Clock

COLUMNS = (
    "id, content, metadata, created_at, pinned, accessed_at, access_count, "
    "recall_count, recall_score_total, recalled_at"
)


class PendingStats:
    """Statistics not written yet, and the store's sequence counter (thread-safe)."""

    def __init__(self, seq: int) -> None:
        self.lock = threading.Lock()
        self.seq = seq
        #: id -> [accessed_at, access_seq, count increment]
        self.access: dict[str, list[Any]] = {}
        #: id -> [count increment, score increment, recalled_at]
        self.recall: dict[str, list[Any]] = {}

    def next_seq(self) -> int:
        with self.lock:
            self.seq += 1
            return self.seq

    def __len__(self) -> int:
        return len(self.access) + len(self.recall)

    def note_access(self, id: str, now: float) -> None:
        with self.lock:
            self.seq += 1
            pending = self.access.get(id)
            if pending is None:
                self.access[id] = [now, self.seq, 1]
            else:
                pending[0], pending[1] = now, self.seq
                pending[2] += 1

    def note_recall(self, id: str, score: float, now: float) -> None:
        with self.lock:
            pending = self.recall.get(id)
            if pending is None:
                self.recall[id] = [1, score, now]
            else:
                pending[0] += 1
                pending[1] += score
                pending[2] = now

    def take(self) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        """The pending notes (to be written), leaving none."""
        with self.lock:
            taken = self.access, self.recall
            self.access, self.recall = {}, {}
            return taken

    def give_back(self, access: dict[str, list[Any]], recall: dict[str, list[Any]]) -> None:
        """Notes taken by a transaction that rolled back: pending again, merged
        under any noted since."""
        with self.lock:
            for id, (at, seq, n) in access.items():
                newer = self.access.get(id)
                self.access[id] = [at, seq, n] if newer is None else [*newer[:2], newer[2] + n]
            for id, (n, score, at) in recall.items():
                newer = self.recall.get(id)
                self.recall[id] = (
                    [n, score, at] if newer is None else [newer[0] + n, newer[1] + score, newer[2]]
                )

    def item(self, row: Sequence[Any]) -> MemoryItem:
        """A row of :data:`COLUMNS` with the pending notes applied."""
        id, content, meta, created, pinned, accessed, count, r_count, r_total, r_at = row
        with self.lock:
            access = self.access.get(id)
            recall = self.recall.get(id)
            if access is not None:
                accessed, count = access[0], count + access[2]
            if recall is not None:
                r_count, r_total, r_at = r_count + recall[0], r_total + recall[1], recall[2]
        stats = (count, r_count, r_total, r_at)
        return row_item((id, content, meta, created, pinned, accessed, *stats))


class SqliteReads(BackendBase):
    """The read half of the backend protocol over ``self._conn``."""

    _conn: sqlite3.Connection
    _stats: PendingStats

    def _after_read(self) -> None:
        """Called after a read noted statistics (the writer may flush them)."""

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``'s first line: "ok" for a sound file."""
        with storage_errors():
            return str(self._conn.execute("PRAGMA integrity_check").fetchone()[0])

    def _visible_sql(self, now: float) -> tuple[str, tuple[Any, ...]]:
        cutoff = expiry_cutoff(self._eviction.policy, now)
        if cutoff is None:
            return "", ()
        return " AND (pinned = 1 OR created_at > ?)", (cutoff,)

    @staticmethod
    def _prefix_sql(prefix: str) -> tuple[str, tuple[Any, ...]]:
        if not prefix:
            return "", ()
        upper = prefix_upper_bound(prefix)
        if upper is None:
            return " AND id >= ?", (prefix,)
        return " AND id >= ? AND id < ?", (prefix, upper)

    def _row(self, id: str, now: float) -> Any:
        vis, vargs = self._visible_sql(now)
        with storage_errors():
            return self._conn.execute(
                f"SELECT {COLUMNS} FROM items WHERE id = ?{vis}", (id, *vargs)
            ).fetchone()

    def get(self, id: str) -> MemoryItem | None:
        now = self.now()
        row = self._row(id, now)
        if row is None:
            return None
        self._stats.note_access(id, now)
        item = self._stats.item(row)
        self._after_read()
        return item

    def peek(self, id: str) -> MemoryItem | None:
        row = self._row(id, self.now())
        return None if row is None else self._stats.item(row)

    def record_recall(self, id: str, score: float) -> None:
        self._stats.note_recall(id, score, self.now())
        self._after_read()

    def list(self, flt: MemoryFilter = ALL) -> builtins.list[MemoryItem]:
        if flt.offset < 0 or (flt.limit is not None and flt.limit < 0):
            raise InvalidInput("offset and limit must be >= 0")
        pre, pargs = self._prefix_sql(flt.prefix)
        vis, vargs = self._visible_sql(self.now())
        since, sargs = ("", ()) if flt.since is None else (" AND created_at > ?", (flt.since,))
        limit = -1 if flt.limit is None else flt.limit
        with storage_errors():
            rows = self._conn.execute(
                f"SELECT {COLUMNS} FROM items WHERE 1{pre}{vis}{since} "
                "ORDER BY created_at, seq LIMIT ? OFFSET ?",
                (*pargs, *vargs, *sargs, limit, flt.offset),
            ).fetchall()
        return [self._stats.item(r) for r in rows]

    def keys(
        self, prefix: str = "", *, limit: int | None = None, reverse: bool = False
    ) -> builtins.list[str]:
        pre, pargs = self._prefix_sql(prefix)
        vis, vargs = self._visible_sql(self.now())
        order = "DESC" if reverse else "ASC"
        with storage_errors():
            rows = self._conn.execute(
                f"SELECT id FROM items WHERE 1{pre}{vis} ORDER BY id {order} LIMIT ?",
                (*pargs, *vargs, -1 if limit is None else limit),
            ).fetchall()
        return [r[0] for r in rows]

    def count(self, prefix: str = "") -> int:
        pre, pargs = self._prefix_sql(prefix)
        vis, vargs = self._visible_sql(self.now())
        with storage_errors():
            (n,) = self._conn.execute(
                f"SELECT count(*) FROM items WHERE 1{pre}{vis}", (*pargs, *vargs)
            ).fetchone()
        return int(n)

    def search(
        self, terms: Sequence[str], *, prefix: str = "", limit: int = 10
    ) -> builtins.list[tuple[str, float]]:
        if not terms or limit <= 0:
            return []
        # Tokens hold only word characters, but quote them properly anyway.
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms))
        policy = self._eviction.policy
        now = self.now()
        # First rank inside FTS5 alone: ORDER BY rank LIMIT k is its fast path
        # (a join or a second sort key makes SQLite score and sort every match).
        # Join the k hits to their rows (no SQL variable per hit) and keep those
        # inside the prefix and not expired. If some were hidden and there may
        # be more, ask once more with the filters in SQL, where they run before
        # bm25(): only visible matches are scored, whatever hides the others.
        with storage_errors():
            hits = self._conn.execute(
                "SELECT f.rank, i.id, i.created_at, i.pinned FROM "
                "(SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? "
                "ORDER BY rank LIMIT ?) AS f LEFT JOIN items AS i ON i.n = f.rowid "
                "ORDER BY f.rank",
                (match, limit),
            ).fetchall()
            out: builtins.list[tuple[str, float]] = []
            for rank, id, created, pinned in hits:
                if (
                    id is not None
                    and id.startswith(prefix)
                    and not is_expired(policy, created, bool(pinned), now)
                ):
                    out.append((id, -float(rank)))
            if len(out) == len(hits) or len(hits) < limit:
                return out
            vis, vargs = self._visible_sql(now)
            pre, pargs = self._prefix_sql(prefix)
            rows = self._conn.execute(
                "SELECT id, bm25(items_fts) AS r FROM items_fts "
                "JOIN items ON items.n = items_fts.rowid "
                f"WHERE items_fts MATCH ?{pre}{vis} ORDER BY r LIMIT ?",
                (match, *pargs, *vargs, limit),
            ).fetchall()
        return [(id, -float(r)) for id, r in rows]


def recall_victim(conn: sqlite3.Connection, policy: RecallBased, now: float) -> str:
    """The unpinned row of lowest ``(value, created_at, seq)``: the groups of
    equal ``recall_a`` in ascending order, each one's minimum from the index,
    until ``recall_a`` exceeds the best value (see ``_queues``)."""
    by_use = policy.recency_weight > 0
    order = "last_used, created_at, seq" if by_use else "created_at, seq"
    columns = "id, created_at, seq, access_seq, pinned, recall_count, recall_score_total"
    select = f"SELECT {columns}, recalled_at, last_used FROM items WHERE pinned = 0"
    best: tuple[float, float, int] | None = None
    chosen = ""
    (a,) = conn.execute("SELECT min(recall_a) FROM items WHERE pinned = 0").fetchone()
    while a is not None and (best is None or a <= best[0]):
        row = conn.execute(f"{select} AND recall_a = ? ORDER BY {order} LIMIT 1", (a,)).fetchone()
        if by_use and row[8] >= now:
            # Recency is 1 from here on in this group: they all tie, the oldest wins.
            row = conn.execute(
                f"{select} AND recall_a = ? AND last_used >= ? ORDER BY created_at, seq LIMIT 1",
                (a, now),
            ).fetchone()
        stats = ItemStats(*row[:8])
        found = (recall_value(policy, stats, now), stats.created_at, stats.seq)
        if best is None or found < best:
            best, chosen = found, stats.id
        (a,) = conn.execute(
            "SELECT min(recall_a) FROM items WHERE pinned = 0 AND recall_a > ?", (a,)
        ).fetchone()
    return chosen


class SqliteReader(SqliteReads):
    """The reads of a :class:`SqliteBackend` on a read-only connection of their own.

    Made by :meth:`SqliteBackend.reader`; shares the backend's pending
    statistics. WAL lets it read while the backend writes, and it sees every
    committed transaction. Writes are refused (it is not a writer). One thread
    at a time may use it.
    """

    def __init__(
        self,
        path: Path,
        eviction: EvictionConfig,
        clock: Clock,
        stats: PendingStats,
        busy_timeout: float,
    ) -> None:
        self._eviction = eviction
        self._clock = clock
        self._stats = stats
        with storage_errors():
            self._conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=ro",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout,
            )

    @classmethod
    def open(
        cls,
        path: str | Path,
        eviction: EvictionConfig | None = None,
        *,
        clock: Clock = time.time,
        busy_timeout: float = 10.0,
    ) -> SqliteReader:
        """A reader of a store file on its own, while a writer (in this process or
        another) may be writing to it: for tools that only look. The statistics
        its reads note are not written anywhere.

        Raises:
            StorageError: the file's schema is not this code's (a reader does not
                migrate: open the file once with a :class:`SqliteBackend`), or the
                file is not a store.
        """
        reader = cls(Path(path), eviction or EvictionConfig(), clock, PendingStats(0), busy_timeout)
        try:
            with storage_errors():
                (found,) = reader._conn.execute("PRAGMA user_version").fetchone()
            if found != SCHEMA_VERSION:
                raise StorageError(
                    f"{path} has schema version {found}, not {SCHEMA_VERSION}: a reader does "
                    "not migrate; open it once with a writer (SqliteBackend or a MemoryStore)"
                )
        except BaseException:
            reader.close()
            raise
        return reader

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise TypeError("a SqliteReader only reads")

    put = set_pinned = delete = evict = _refuse

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        yield  # reads need no transaction of ours

    def close(self) -> None:
        with storage_errors():
            self._conn.close()
