"""The PostgreSQL backend: the memory store in a database that several hosts share.

Same protocol and semantics as :class:`SqliteBackend` (the stateful and retrieval tests
hold all three backends to one model), so every host of a cluster sees the same pages
and memories.

Durability: every write (``put``, ``delete``, ``set_pinned``, ``evict``, each outermost
``batch()``) is one transaction, committed before the call returns (durable by the
server's ``synchronous_commit``, on by default). A ``get``'s access and a recall are
written at once, without waiting for the server's disk (see ``_postgres_reads``).

Several hosts: every write transaction first takes a transaction-level advisory lock,
one per database schema, so writes from all hosts run one at a time, as on one SQLite
writer: capacity bounds, the write and use order (one database sequence) and the
full-text totals stay exact whoever writes. A write waiting for that lock longer than
``busy_timeout`` fails with :class:`StorageBusy`, having written nothing. Reads take no
lock. Timestamps come from each host's clock (``clock``): hosts sharing a store with a
TTL or recall-based policy should keep their clocks in step (NTP).

Costs, with n items: a put, delete or pin is O(log n) round trips of index lookups
plus one row per distinct token of the indexed text; the count of unpinned rows that a
capacity bound needs is a counter every write keeps in the same transaction.

Threads: like the SQLite backend's, called from one worker thread at a time.
"""

from __future__ import annotations

import builtins
import contextlib
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from ._errors import NotFound
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
from ._postgres_reads import COLUMNS, PostgresReads
from ._postgres_schema import LOCK_KEY, check_nul, connect
from ._store import Clock, check_put

#: The key of the advisory lock of writes (with the schema's name).
WRITE_LOCK = "agcore.memory.write"

_UPSERT = (
    "INSERT INTO memory_items (id, content, metadata, created_at, seq, pinned, "
    "accessed_at, access_seq, access_count, recall_count, recall_score_total, "
    "recalled_at, recall_a, last_used, dl) "
    "VALUES (%s, %s, %s, %s, nextval('memory_seq'), %s, %s, nextval('memory_seq'), "
    "%s, %s, %s, %s, %s, %s, %s) "
    "ON CONFLICT (id) DO UPDATE SET content = excluded.content, "
    "metadata = excluded.metadata, created_at = excluded.created_at, "
    "seq = excluded.seq, pinned = excluded.pinned, "
    "accessed_at = excluded.accessed_at, access_seq = excluded.access_seq, "
    "access_count = excluded.access_count, recall_count = excluded.recall_count, "
    "recall_score_total = excluded.recall_score_total, "
    "recalled_at = excluded.recalled_at, recall_a = excluded.recall_a, "
    "last_used = excluded.last_used, dl = excluded.dl RETURNING n"
)
_INDEX = (
    "WITH p AS (INSERT INTO memory_postings (term, n, tf, dl) "
    "SELECT term, %s, tf, %s FROM unnest(%s::text[], %s::int[]) AS u (term, tf) "
    "RETURNING term) "
    "INSERT INTO memory_terms (term, df) SELECT term, 1 FROM p "
    "ON CONFLICT (term) DO UPDATE SET df = memory_terms.df + 1"
)
_UNINDEX = (
    "WITH gone AS (DELETE FROM memory_postings WHERE n = ANY(%s) RETURNING term), "
    "c AS (SELECT term, count(*) AS k FROM gone GROUP BY term) "
    "UPDATE memory_terms AS t SET df = t.df - c.k FROM c WHERE t.term = c.term"
)
_TOTALS = (
    "UPDATE memory_meta SET value = value + CASE name WHEN 'docs' THEN %s::float8 "
    "ELSE %s::float8 END WHERE name IN ('docs', 'tokens')"
)


class PostgresBackend(PostgresReads):
    """A store in a PostgreSQL database (see the module doc for the guarantees).

    ``url``: ``postgresql://user:password@host:port/database`` (a ``search_path`` in
    ``options`` picks the schema). The tables are created or migrated on open.
    ``busy_timeout``: seconds a write waits for another host's write (then
    :class:`StorageBusy`). ``connect_timeout``: seconds to connect.

    Raises (opening): :class:`StorageUnavailable` when the server cannot be reached,
    :class:`StorageError` for a schema newer than this code's, ``ModuleNotFoundError``
    (one line naming the ``postgres`` extra) without psycopg.
    """

    def __init__(
        self,
        url: str,
        eviction: EvictionConfig | None = None,
        *,
        clock: Clock = time.time,
        busy_timeout: float = 10.0,
        connect_timeout: float = 10.0,
    ) -> None:
        self._eviction = eviction or EvictionConfig()
        self._clock = clock
        self._url = url
        self._connect_timeout = connect_timeout
        self._busy_ms = max(1, round(busy_timeout * 1000))
        self._depth = 0
        self._writes = 0
        policy = self._eviction.policy
        self._weights = policy if isinstance(policy, RecallBased) else RecallBased(max_items=0)
        self._conn = connect(url, connect_timeout=connect_timeout, migrate_schema=True)
        try:
            self._prepare()
        except BaseException:
            self._conn.close()
            raise

    def _prepare(self) -> None:
        """Recompute ``recall_a`` once if it was computed with other weights."""
        wanted = (self._weights.recall_weight, self._weights.score_weight)
        with self._errors(), self._conn.transaction():
            self._lock()
            rows = dict(
                self._conn.execute(
                    "SELECT name, value FROM memory_meta WHERE name IN ('w_recall', 'w_score')"
                ).fetchall()
            )
            if (rows.get("w_recall"), rows.get("w_score")) == wanted:
                return
            found = self._conn.execute(
                "SELECT id, recall_count, recall_score_total FROM memory_items "
                "WHERE recall_count > 0"
            ).fetchall()
            self._conn.cursor().executemany(
                "UPDATE memory_items SET recall_a = %s WHERE id = %s",
                [(recall_base(self._weights, c, t), i) for i, c, t in found],
            )
            self._conn.cursor().executemany(
                "INSERT INTO memory_meta (name, value) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                [("w_recall", wanted[0]), ("w_score", wanted[1])],
            )

    def _lock(self) -> None:
        """Take the write lock, waiting at most the busy timeout; commit durably (the
        server's own ``synchronous_commit``, which the connection turned off for
        statistics)."""
        self._conn.execute(
            f"SET LOCAL lock_timeout = {int(self._busy_ms)}; "
            "SET LOCAL synchronous_commit TO DEFAULT"
        )
        self._conn.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY})", (WRITE_LOCK,))

    # -- transactions --------------------------------------------------------

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """One transaction around the block (nested blocks join the outer one),
        holding the store's write lock; the outermost block commits on success, and
        an exception rolls everything in it back."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        saved = self._writes
        self._depth = 1
        try:
            with self._errors():
                conn = self._connection()
                with conn.transaction():
                    self._lock()
                    yield
        except BaseException:
            self._writes = saved
            raise
        finally:
            self._depth = 0

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
        check_nul(id, content, index_text or "")
        words = None if index_text is None else index_text.split()
        with self.batch():
            now = self.now()
            created = now if created_at is None else created_at
            old = self._conn.execute(
                "SELECT n, created_at, pinned, access_count, recall_count, "
                "recall_score_total, recalled_at, dl FROM memory_items WHERE id = %s FOR UPDATE",
                (id,),
            ).fetchone()
            keep = old is not None and not is_expired(self._eviction.policy, old[1], old[2], now)
            was_pinned = bool(old[2]) if old is not None else False
            new_pinned = (was_pinned if keep else False) if pinned is None else pinned
            stats = tuple(old[3:7]) if keep else (0, 0, 0.0, None)
            a = recall_base(self._weights, stats[1], stats[2])
            last = created if stats[3] is None else max(created, stats[3])
            if old is not None and old[7] is not None:
                self._unindex([old[0]], 1, old[7])
            dl = None if words is None else len(words)
            (n,) = self._conn.execute(
                _UPSERT, (id, content, meta, created, new_pinned, now, *stats, a, last, dl)
            ).fetchone()
            self._count_unpinned(int(not new_pinned) - int(old is not None and not was_pinned))
            if words is not None:
                counts = Counter(words)
                terms = sorted(counts)
                self._conn.execute(_INDEX, (n, dl, terms, [counts[t] for t in terms]))
                self._conn.execute(_TOTALS, (1, len(words)))
            item = row_item((id, content, meta, created, new_pinned, now, *stats))
            self._after_write()
        return item

    def _unindex(self, ns: Sequence[int], docs: int, tokens: int) -> None:
        """Take items ``ns`` (``docs`` of them indexed, ``tokens`` long) out of the index."""
        if docs:
            self._conn.execute(_UNINDEX, (builtins.list(ns),))
            self._conn.execute(_TOTALS, (-docs, -tokens))

    def _unpinned(self) -> int:
        (n,) = self._conn.execute(
            "SELECT value FROM memory_meta WHERE name = 'unpinned'"
        ).fetchone()
        return int(n)

    def _count_unpinned(self, delta: int) -> None:
        if delta:
            self._conn.execute(
                "UPDATE memory_meta SET value = value + %s WHERE name = 'unpinned'", (delta,)
            )

    def _after_write(self) -> None:
        self._writes += 1
        cap = max_items_of(self._eviction.policy)
        unpinned = 0 if cap is None else self._unpinned()
        if sweep_due(self._eviction, self._writes, unpinned):
            self._sweep()

    def _delete(self, where: str, args: Sequence[Any]) -> builtins.list[str]:
        """Delete the rows ``where`` selects (and their postings); their ids, sorted."""
        rows = self._conn.execute(
            f"DELETE FROM memory_items WHERE {where} RETURNING n, id, dl, pinned", args
        ).fetchall()
        indexed = [(n, dl) for n, _, dl, _ in rows if dl is not None]
        self._unindex([n for n, _ in indexed], len(indexed), sum(dl for _, dl in indexed))
        self._count_unpinned(-sum(not pinned for *_, pinned in rows))
        return sorted(i for _, i, _, _ in rows)

    def _sweep(self) -> builtins.list[str]:
        """Full sweep inside the current transaction."""
        self._writes = 0
        now = self.now()
        policy = self._eviction.policy
        victims: builtins.list[str] = []
        cutoff = expiry_cutoff(policy, now)
        if cutoff is not None:
            victims.extend(self._delete("NOT pinned AND created_at <= %s", (cutoff,)))
        cap = max_items_of(policy)
        while cap is not None and (excess := self._unpinned() - cap) > 0:
            if isinstance(policy, RecallBased):
                chosen = [self._recall_victim(policy, now)]
            else:
                order = "access_seq" if isinstance(policy, Lru) else "created_at, seq"
                chosen = [
                    r[0]
                    for r in self._conn.execute(
                        f"SELECT id FROM memory_items WHERE NOT pinned ORDER BY {order} LIMIT %s",
                        (excess,),
                    )
                ]
            # In the policy's order, as the other backends report them.
            self._delete("id = ANY(%s)", (chosen,))
            victims.extend(chosen)
        return victims

    def evict(self) -> builtins.list[str]:
        with self.batch():
            return self._sweep()

    def delete(self, id: str) -> bool:
        with self.batch():
            row = self._conn.execute(
                "SELECT created_at, pinned FROM memory_items WHERE id = %s FOR UPDATE", (id,)
            ).fetchone()
            if row is None:
                return False
            self._delete("id = %s", (id,))
            return not is_expired(self._eviction.policy, row[0], row[1], self.now())

    def set_pinned(self, id: str, pinned: bool) -> MemoryItem:
        with self.batch():
            vis, vargs = self._visible_sql(self.now())
            row = self._conn.execute(
                f"SELECT {COLUMNS} FROM memory_items WHERE id = %s{vis} FOR UPDATE", (id, *vargs)
            ).fetchone()
            if row is None:
                raise NotFound(id)
            if row[4] != pinned:
                self._conn.execute(
                    "UPDATE memory_items SET pinned = %s WHERE id = %s", (pinned, id)
                )
                self._count_unpinned(-1 if pinned else 1)
            item = row_item((*row[:4], pinned, *row[5:]))
            self._after_write()
        return item

    def close(self) -> None:
        """Close the connection (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
