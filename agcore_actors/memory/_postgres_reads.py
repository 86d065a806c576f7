"""The PostgreSQL backend's reads, its connection handling, and BM25 in SQL.

Statistics are written as they happen: a ``get`` is one ``UPDATE … RETURNING`` and a
recall one ``UPDATE`` (an access counts in the database at once, so every host sees
the same LRU order). They commit without waiting for the server's disk
(``synchronous_commit = off`` on the connection; write transactions set it back to
the server's setting): a crash of the *server* may lose the last few statistics, never
an item, and a read costs one round trip, no fsync. Nothing is buffered in the process.

BM25 (:meth:`PostgresReads.search`) is FTS5's formula, computed in SQL from the
posting table: ``k1 = 1.2``, ``b = 0.75``, ``idf = ln((N - n + 0.5) / (n + 0.5))``
(1e-6 when not positive), with ``N`` and the average length over every indexed item,
expired ones not yet swept included, as FTS5 and the in-memory index count them. So the
three backends give the same scores (to float rounding) and the same rankings. As on
SQLite, the best ``limit`` are ranked from the postings alone first, then joined to their
rows and kept if visible and inside the prefix; if some were hidden, the query runs once
more with the filters inside it.

Connection loss: a call that finds its connection broken fails with
:class:`StorageUnavailable`, and the next call connects again.
"""

from __future__ import annotations

import builtins
import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ._errors import InvalidInput, StorageError, StorageUnavailable
from ._eviction import EvictionConfig, ItemStats, RecallBased, expiry_cutoff, recall_value
from ._item import ALL, MemoryFilter, MemoryItem, prefix_upper_bound, row_item
from ._postgres_schema import SCHEMA_VERSION, classify, connect, import_psycopg
from ._store import BackendBase

COLUMNS = (
    "id, content, metadata, created_at, pinned, accessed_at, access_count, "
    "recall_count, recall_score_total, recalled_at"
)

# FTS5's bm25 over the postings of the query's terms; %s: terms, limit (fast path).
# Every constant a float8: a bare 0.5 is numeric in PostgreSQL, slower and rounded
# differently from FTS5's doubles.
_IDF = (
    "CASE WHEN ln((m.docs - t.df + 0.5::float8) / (t.df + 0.5::float8)) <= 0 "
    "THEN 1e-6::float8 ELSE ln((m.docs - t.df + 0.5::float8) / (t.df + 0.5::float8)) END"
)
_TERM = (
    "(p.tf * 2.2::float8 / (p.tf + 1.2::float8 * (0.25::float8 + 0.75::float8 * p.dl / m.avgdl)))"
)
_TOTALS = (
    "m AS (SELECT max(value) FILTER (WHERE name = 'docs') AS docs, "
    "greatest(max(value) FILTER (WHERE name = 'tokens'), 0) / "
    "greatest(max(value) FILTER (WHERE name = 'docs'), 1) AS avgdl "
    "FROM memory_meta WHERE name IN ('docs', 'tokens'))"
)
_TOP = (
    f"WITH {_TOTALS}, q AS (SELECT t.term, {_IDF} AS idf FROM memory_terms t, m "
    "WHERE t.term = ANY(%s) AND t.df > 0), "
    f"s AS (SELECT p.n, sum(q.idf * {_TERM}) AS score "
    "FROM q JOIN memory_postings p ON p.term = q.term, m GROUP BY p.n "
    "ORDER BY score DESC, p.n LIMIT %s) "
    "SELECT s.score, i.id, i.created_at, i.pinned FROM s LEFT JOIN memory_items i ON i.n = s.n "
    "ORDER BY s.score DESC, i.id"
)


def _filtered(where: str) -> str:
    return (
        f"WITH {_TOTALS}, q AS (SELECT t.term, {_IDF} AS idf FROM memory_terms t, m "
        "WHERE t.term = ANY(%s) AND t.df > 0) "
        f"SELECT i.id, sum(q.idf * {_TERM}) AS score "
        "FROM q JOIN memory_postings p ON p.term = q.term "
        f"JOIN memory_items i ON i.n = p.n, m WHERE true{where} "
        "GROUP BY i.id ORDER BY score DESC, i.id LIMIT %s"
    )


class PostgresReads(BackendBase):
    """The read half of the backend protocol, and the connection (see the module doc)."""

    _conn: Any
    _url: str
    _connect_timeout: float
    _weights: RecallBased
    _depth: int

    def _connection(self) -> Any:
        """The open connection, connecting again if the last one broke."""
        if self._conn is None or self._conn.broken:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None
            self._conn = connect(
                self._url, connect_timeout=self._connect_timeout, migrate_schema=False
            )
        return self._conn

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        psycopg = import_psycopg()
        try:
            yield
        except psycopg.Error as exc:
            raise classify(exc, self._url) from exc

    def _execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        with self._errors():
            return self._connection().execute(sql, args)

    def _visible_sql(self, now: float, t: str = "") -> tuple[str, tuple[Any, ...]]:
        """The condition of visibility at ``now`` (``t``: a table alias and dot)."""
        cutoff = expiry_cutoff(self._eviction.policy, now)
        if cutoff is None:
            return "", ()
        return f" AND ({t}pinned OR {t}created_at > %s)", (cutoff,)

    @staticmethod
    def _prefix_sql(prefix: str, t: str = "") -> tuple[str, tuple[Any, ...]]:
        if not prefix:
            return "", ()
        upper = prefix_upper_bound(prefix)
        if upper is None:
            return f" AND {t}id >= %s", (prefix,)
        return f" AND {t}id >= %s AND {t}id < %s", (prefix, upper)

    def get(self, id: str) -> MemoryItem | None:
        now = self.now()
        vis, vargs = self._visible_sql(now)
        row = self._execute(
            "UPDATE memory_items SET accessed_at = %s, access_seq = nextval('memory_seq'), "
            f"access_count = access_count + 1 WHERE id = %s{vis} RETURNING {COLUMNS}",
            (now, id, *vargs),
        ).fetchone()
        return None if row is None else row_item(row)

    def peek(self, id: str) -> MemoryItem | None:
        vis, vargs = self._visible_sql(self.now())
        row = self._execute(
            f"SELECT {COLUMNS} FROM memory_items WHERE id = %s{vis}", (id, *vargs)
        ).fetchone()
        return None if row is None else row_item(row)

    def record_recall(self, id: str, score: float) -> None:
        # recall_a = recall_base(...) in SQL, the same IEEE operations in the same
        # order, ln(1 + c) for log1p(c) (c a whole number: 1 + c is exact). It only
        # orders the groups recall-based eviction visits (``_recall_victim``).
        now = self.now()
        vis, vargs = self._visible_sql(now)
        w = self._weights
        self._execute(
            "UPDATE memory_items SET recall_count = recall_count + 1, "
            "recall_score_total = recall_score_total + %s, recalled_at = %s, "
            "last_used = greatest(created_at, %s), "
            "recall_a = ln(2 + recall_count) * %s "
            "+ ((recall_score_total + %s) / (recall_count + 1)) * %s "
            f"WHERE id = %s{vis}",
            (score, now, now, w.recall_weight, score, w.score_weight, id, *vargs),
        )

    def list(self, flt: MemoryFilter = ALL) -> builtins.list[MemoryItem]:
        if flt.offset < 0 or (flt.limit is not None and flt.limit < 0):
            raise InvalidInput("offset and limit must be >= 0")
        pre, pargs = self._prefix_sql(flt.prefix)
        vis, vargs = self._visible_sql(self.now())
        since, sargs = ("", ()) if flt.since is None else (" AND created_at > %s", (flt.since,))
        rows = self._execute(
            f"SELECT {COLUMNS} FROM memory_items WHERE true{pre}{vis}{since} "
            "ORDER BY created_at, seq LIMIT %s OFFSET %s",
            (*pargs, *vargs, *sargs, flt.limit, flt.offset),
        ).fetchall()
        return [row_item(r) for r in rows]

    def keys(
        self, prefix: str = "", *, limit: int | None = None, reverse: bool = False
    ) -> builtins.list[str]:
        pre, pargs = self._prefix_sql(prefix)
        vis, vargs = self._visible_sql(self.now())
        order = "DESC" if reverse else "ASC"
        rows = self._execute(
            f"SELECT id FROM memory_items WHERE true{pre}{vis} ORDER BY id {order} LIMIT %s",
            (*pargs, *vargs, limit),
        ).fetchall()
        return [r[0] for r in rows]

    def count(self, prefix: str = "") -> int:
        pre, pargs = self._prefix_sql(prefix)
        vis, vargs = self._visible_sql(self.now())
        (n,) = self._execute(
            f"SELECT count(*) FROM memory_items WHERE true{pre}{vis}", (*pargs, *vargs)
        ).fetchone()
        return int(n)

    def search(
        self, terms: Sequence[str], *, prefix: str = "", limit: int = 10
    ) -> builtins.list[tuple[str, float]]:
        if not terms or limit <= 0:
            return []
        unique = builtins.list(dict.fromkeys(terms))
        now = self.now()
        policy = self._eviction.policy
        cutoff = expiry_cutoff(policy, now)
        hits = self._execute(_TOP, (unique, limit)).fetchall()
        out: builtins.list[tuple[str, float]] = []
        for score, id, created, pinned in hits:
            if (
                id is not None
                and id.startswith(prefix)
                and (cutoff is None or pinned or created > cutoff)
            ):
                out.append((id, float(score)))
        if len(out) == len(hits) or len(hits) < limit:
            return out
        vis, vargs = self._visible_sql(now, "i.")
        pre, pargs = self._prefix_sql(prefix, "i.")
        rows = self._execute(_filtered(pre + vis), (unique, *pargs, *vargs, limit)).fetchall()
        return [(id, float(score)) for id, score in rows]

    def _recall_victim(self, policy: RecallBased, now: float) -> str:
        """The unpinned row of lowest ``(value, created_at, seq)``: the groups of
        equal ``recall_a`` in ascending order, each one's minimum from the index,
        until ``recall_a`` exceeds the best value (as ``_sqlite_reads.recall_victim``)."""
        by_use = policy.recency_weight > 0
        order = "last_used, created_at, seq" if by_use else "created_at, seq"
        columns = "id, created_at, seq, access_seq, pinned, recall_count, recall_score_total"
        select = f"SELECT {columns}, recalled_at, last_used FROM memory_items WHERE NOT pinned"
        best: tuple[float, float, int] | None = None
        chosen = ""
        (a,) = self._execute("SELECT min(recall_a) FROM memory_items WHERE NOT pinned").fetchone()
        while a is not None and (best is None or a <= best[0]):
            row = self._execute(
                f"{select} AND recall_a = %s ORDER BY {order} LIMIT 1", (a,)
            ).fetchone()
            if by_use and row[8] >= now:
                row = self._execute(
                    f"{select} AND recall_a = %s AND last_used >= %s "
                    "ORDER BY created_at, seq LIMIT 1",
                    (a, now),
                ).fetchone()
            stats = ItemStats(*row[:8])
            found = (recall_value(policy, stats, now), stats.created_at, stats.seq)
            if best is None or found < best:
                best, chosen = found, stats.id
            (a,) = self._execute(
                "SELECT min(recall_a) FROM memory_items WHERE NOT pinned AND recall_a > %s", (a,)
            ).fetchone()
        return chosen


class PostgresReader(PostgresReads):
    """The reads of a PostgreSQL memory store, for tools that only look (the shell's
    ``memory stats`` and ``search``): it never migrates, and writes nothing, not even
    access or recall statistics (``get`` is ``peek``, ``record_recall`` does nothing).

    Raises (opening): :class:`StorageUnavailable` when the server cannot be reached,
    :class:`StorageError` when the tables are missing or at another schema version.
    """

    def __init__(self, url: str, eviction: EvictionConfig | None = None) -> None:
        self._eviction = eviction or EvictionConfig()
        self._clock = time.time
        self._url = url
        self._connect_timeout = 10.0
        self._weights = RecallBased(max_items=0)
        self._depth = 0
        self._conn = None
        try:
            row = self._execute(
                "SELECT value FROM memory_meta WHERE name = 'schema_version'"
            ).fetchone()
        except StorageUnavailable:
            self.close()
            raise
        except StorageError as exc:
            self.close()
            raise StorageError(f"not a memory store at this URL: {exc}") from None
        if row is None or int(row[0]) != SCHEMA_VERSION:
            self.close()
            raise StorageError(
                f"the memory tables have schema version {row and int(row[0])}, not "
                f"{SCHEMA_VERSION}: a reader does not migrate; open the store once with "
                "a PostgresBackend or a MemoryStore"
            )

    def get(self, id: str) -> MemoryItem | None:
        return self.peek(id)

    def record_recall(self, id: str, score: float) -> None:
        pass

    def integrity_check(self) -> str:
        """ "ok": the server checks its own pages (there is no file to check here)."""
        return "ok"

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise TypeError("a PostgresReader only reads")

    put = set_pinned = delete = evict = _refuse

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        yield  # reads need no transaction of ours

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
