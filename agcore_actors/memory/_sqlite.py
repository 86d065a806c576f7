"""The SQLite store: one file, WAL, FTS5, versioned schema.

Durability: every write (``put``, ``delete``, ``set_pinned``, ``evict``, and
each outermost ``batch()``) is one transaction, committed before the call
returns. The journal is WAL. ``synchronous="FULL"`` (the default) fsyncs the
WAL at every commit, so an acknowledged write survives a process crash *and*
a power loss or OS crash. ``synchronous="NORMAL"`` skips that fsync (the WAL
is synced at checkpoints): an acknowledged write still survives the process
being killed, because the commit is in the OS's page cache, but the last
commits may be lost if the machine goes down; it writes several times faster.

Access and recall statistics are *advisory* and are not worth an fsync per
read: ``get`` and ``record_recall`` update them in memory, and they are
written at the start of the next write transaction, at a sweep, and at
``close``. A crash may lose statistics gathered since the last write; it never
loses an item.

Threads: the connection is opened with ``check_same_thread=False`` because the
actor calls the store from trio's worker threads; the store itself is not
thread-safe and the actor (serial, one call at a time) guarantees that only
one thread uses it at a time. All SQL is parameterised; the few clauses
assembled in Python are fixed fragments chosen by flags, never values.
"""

from __future__ import annotations

import builtins
import contextlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec

from ._errors import InvalidInput, NotFound, StorageError
from ._eviction import (
    Capacity,
    EvictionConfig,
    Hybrid,
    ItemStats,
    Lru,
    RecallBased,
    choose_victims,
    expiry_cutoff,
    is_expired,
    max_items_of,
    sweep_due,
)
from ._item import ALL, MemoryFilter, MemoryItem, prefix_upper_bound
from ._schema import migrate, storage_errors
from ._store import Clock, check_put

_COLUMNS = (
    "id, content, metadata, created_at, pinned, accessed_at, access_count, "
    "recall_count, recall_score_total, recalled_at"
)
_PENDING_LIMIT = 4096


class SqliteBackend:
    """A store in one SQLite file (see the module doc for the guarantees)."""

    def __init__(
        self,
        path: str | Path,
        eviction: EvictionConfig | None = None,
        *,
        clock: Clock = time.time,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise InvalidInput(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
        self._eviction = eviction or EvictionConfig()
        self._clock = clock
        self.path = Path(path)
        self._depth = 0
        self._writes = 0
        # id -> [accessed_at, access_seq, count increment]
        self._pending_access: dict[str, list[Any]] = {}
        # id -> [count increment, score increment, recalled_at]
        self._pending_recall: dict[str, list[Any]] = {}
        with storage_errors():
            self._conn = sqlite3.connect(
                self.path, isolation_level=None, check_same_thread=False, timeout=10.0
            )
            try:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise StorageError(f"cannot use WAL journal mode here (got {mode!r})")
                self._conn.execute(f"PRAGMA synchronous = {synchronous}")
                migrate(self._conn)
                seq, unpinned = self._conn.execute(
                    "SELECT max(coalesce(max(seq), 0), coalesce(max(access_seq), 0)), "
                    "count(*) FILTER (WHERE pinned = 0) FROM items"
                ).fetchone()
            except BaseException:
                self._conn.close()
                raise
        self._seq = int(seq)
        self._unpinned = int(unpinned)

    # -- plumbing -----------------------------------------------------------

    @property
    def eviction(self) -> EvictionConfig:
        return self._eviction

    def now(self) -> float:
        return self._clock()

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction around the block (nested blocks join the outer one).

        The outermost block commits on success; on an exception everything in
        it is rolled back and the store's counters are restored.
        """
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        saved = (self._seq, self._unpinned, self._writes)
        access = {k: list(v) for k, v in self._pending_access.items()}
        recall = {k: list(v) for k, v in self._pending_recall.items()}
        with storage_errors():
            self._conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            with storage_errors():
                self._flush_pending()
            yield
            with storage_errors():
                self._conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            self._seq, self._unpinned, self._writes = saved
            self._pending_access, self._pending_recall = access, recall
            raise
        finally:
            self._depth = 0

    def _flush_pending(self) -> None:
        if self._pending_access:
            self._conn.executemany(
                "UPDATE items SET accessed_at = ?, access_seq = ?, "
                "access_count = access_count + ? WHERE id = ?",
                [(a, s, c, i) for i, (a, s, c) in self._pending_access.items()],
            )
            self._pending_access = {}
        if self._pending_recall:
            self._conn.executemany(
                "UPDATE items SET recall_count = recall_count + ?, "
                "recall_score_total = recall_score_total + ?, recalled_at = ? WHERE id = ?",
                [(c, s, r, i) for i, (c, s, r) in self._pending_recall.items()],
            )
            self._pending_recall = {}

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

    def _item(self, row: Sequence[Any]) -> MemoryItem:
        id, content, meta, created, pinned, accessed, count, r_count, r_total, r_at = row
        access = self._pending_access.get(id)
        if access is not None:
            accessed, count = access[0], count + access[2]
        recall = self._pending_recall.get(id)
        if recall is not None:
            r_count, r_total, r_at = r_count + recall[0], r_total + recall[1], recall[2]
        return MemoryItem(
            id=id,
            content=content,
            metadata=msgspec.json.decode(meta),
            created_at=created,
            pinned=bool(pinned),
            accessed_at=accessed,
            access_count=count,
            recall_count=r_count,
            recall_score_total=r_total,
            recalled_at=r_at,
        )

    # -- writes -------------------------------------------------------------

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
            seq = self._next_seq()
            access_seq = self._next_seq()
            (n,) = self._conn.execute(
                "INSERT INTO items (id, content, metadata, created_at, seq, pinned, "
                "accessed_at, access_seq, access_count, recall_count, recall_score_total, "
                "recalled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET content = excluded.content, "
                "metadata = excluded.metadata, created_at = excluded.created_at, "
                "seq = excluded.seq, pinned = excluded.pinned, "
                "accessed_at = excluded.accessed_at, access_seq = excluded.access_seq, "
                "access_count = excluded.access_count, recall_count = excluded.recall_count, "
                "recall_score_total = excluded.recall_score_total, "
                "recalled_at = excluded.recalled_at RETURNING n",
                (id, content, meta, created, seq, int(new_pinned), now, access_seq, *stats),
            ).fetchone()
            if old is not None:
                self._conn.execute("DELETE FROM items_fts WHERE rowid = ?", (n,))
                if not was_pinned:
                    self._unpinned -= 1
            if index_text is not None:
                self._conn.execute(
                    "INSERT INTO items_fts (rowid, body) VALUES (?, ?)", (n, index_text)
                )
            if not new_pinned:
                self._unpinned += 1
            item = MemoryItem(
                id=id,
                content=content,
                metadata=msgspec.json.decode(meta),
                created_at=created,
                pinned=new_pinned,
                accessed_at=now,
                access_count=stats[0],
                recall_count=stats[1],
                recall_score_total=stats[2],
                recalled_at=stats[3],
            )
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
                if not row[1]:
                    self._unpinned -= 1

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
        if cap is not None and self._unpinned > cap:
            excess = self._unpinned - cap
            if isinstance(policy, RecallBased):
                stats = [
                    ItemStats(*r)
                    for r in self._conn.execute(
                        "SELECT id, created_at, seq, access_seq, pinned, recall_count, "
                        "recall_score_total, recalled_at FROM items WHERE pinned = 0"
                    )
                ]
                chosen = choose_victims(policy, stats, now)
            elif isinstance(policy, Lru):
                chosen = [
                    r[0]
                    for r in self._conn.execute(
                        "SELECT id FROM items WHERE pinned = 0 ORDER BY access_seq LIMIT ?",
                        (excess,),
                    )
                ]
            else:
                assert isinstance(policy, Capacity | Hybrid)
                chosen = [
                    r[0]
                    for r in self._conn.execute(
                        "SELECT id FROM items WHERE pinned = 0 ORDER BY created_at, seq LIMIT ?",
                        (excess,),
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
                f"SELECT {_COLUMNS} FROM items WHERE id = ?{vis}", (id, *vargs)
            ).fetchone()
            if row is None:
                raise NotFound(id)
            if bool(row[4]) != pinned:
                self._conn.execute("UPDATE items SET pinned = ? WHERE id = ?", (int(pinned), id))
                self._unpinned += -1 if pinned else 1
            item = self._item((*row[:4], int(pinned), *row[5:]))
            self._after_write()
        return item

    def record_recall(self, id: str, score: float) -> None:
        now = self.now()
        pending = self._pending_recall.get(id)
        if pending is None:
            self._pending_recall[id] = [1, score, now]
        else:
            pending[0] += 1
            pending[1] += score
            pending[2] = now
        self._maybe_flush()

    def _maybe_flush(self) -> None:
        if len(self._pending_access) + len(self._pending_recall) > _PENDING_LIMIT:
            with self.batch():
                pass  # batch() flushes the pending statistics first

    # -- reads --------------------------------------------------------------

    def get(self, id: str) -> MemoryItem | None:
        now = self.now()
        vis, vargs = self._visible_sql(now)
        with storage_errors():
            row = self._conn.execute(
                f"SELECT {_COLUMNS} FROM items WHERE id = ?{vis}", (id, *vargs)
            ).fetchone()
        if row is None:
            return None
        pending = self._pending_access.get(id)
        access_seq = self._next_seq()
        if pending is None:
            self._pending_access[id] = [now, access_seq, 1]
        else:
            pending[0], pending[1] = now, access_seq
            pending[2] += 1
        item = self._item(row)
        self._maybe_flush()
        return item

    def peek(self, id: str) -> MemoryItem | None:
        vis, vargs = self._visible_sql(self.now())
        with storage_errors():
            row = self._conn.execute(
                f"SELECT {_COLUMNS} FROM items WHERE id = ?{vis}", (id, *vargs)
            ).fetchone()
        return None if row is None else self._item(row)

    def list(self, flt: MemoryFilter = ALL) -> builtins.list[MemoryItem]:
        if flt.offset < 0 or (flt.limit is not None and flt.limit < 0):
            raise InvalidInput("offset and limit must be >= 0")
        pre, pargs = self._prefix_sql(flt.prefix)
        vis, vargs = self._visible_sql(self.now())
        since, sargs = ("", ()) if flt.since is None else (" AND created_at > ?", (flt.since,))
        limit = -1 if flt.limit is None else flt.limit
        with storage_errors():
            rows = self._conn.execute(
                f"SELECT {_COLUMNS} FROM items WHERE 1{pre}{vis}{since} "
                "ORDER BY created_at, seq LIMIT ? OFFSET ?",
                (*pargs, *vargs, *sargs, limit, flt.offset),
            ).fetchall()
        return [self._item(r) for r in rows]

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
        # Rank inside FTS5 alone (ORDER BY rank LIMIT k is its fast path; a join
        # or a second sort key makes SQLite score and sort every match), join
        # the k hits to their rows (no SQL variable per hit), drop hits outside
        # the prefix or expired, and ask for more if needed.
        k = limit
        with storage_errors():
            while True:
                hits = self._conn.execute(
                    "SELECT f.rank, i.id, i.created_at, i.pinned FROM "
                    "(SELECT rowid, rank FROM items_fts WHERE items_fts MATCH ? "
                    "ORDER BY rank LIMIT ?) AS f LEFT JOIN items AS i ON i.n = f.rowid "
                    "ORDER BY f.rank",
                    (match, k),
                ).fetchall()
                out: builtins.list[tuple[str, float]] = []
                for rank, id, created, pinned in hits:
                    if (
                        id is not None
                        and id.startswith(prefix)
                        and not is_expired(policy, created, bool(pinned), now)
                    ):
                        out.append((id, -float(rank)))
                if len(out) >= limit or len(hits) < k:
                    return out[:limit]
                k *= 4

    # -- maintenance --------------------------------------------------------

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``'s first line: "ok" for a sound file."""
        with storage_errors():
            return str(self._conn.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        """Write pending statistics and close the connection (idempotent)."""
        if self._conn is None:
            return
        try:
            if self._pending_access or self._pending_recall:
                with self.batch():
                    pass
        finally:
            with storage_errors():
                self._conn.close()
            self._conn = None  # type: ignore[assignment]
