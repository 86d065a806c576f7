"""Opening a store file: WAL, the schema, the counters, an optional integrity check.

What ``check_integrity`` checks (once, at open; it reads the whole file, so it
costs time in proportion to the file):

- ``PRAGMA integrity_check``: every b-tree page, every index against its table,
  free lists, constraints;
- the full-text index: FTS5's own ``integrity-check`` (the index matches the text
  it holds), and every indexed row belongs to an item;
- the counters the store keeps in ``meta`` agree with the rows (the count of
  unpinned items, the sequence counter); a disagreement is repaired, not refused.

A failure is :class:`StorageCorrupt` and nothing is opened.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

from ._errors import StorageCorrupt, StorageError
from ._eviction import RecallBased, recall_base
from ._schema import RECALL_INDEX, migrate, read_meta, write_meta

log = logging.getLogger("agcore_actors.memory")


def open_database(
    path: Path,
    *,
    synchronous: str,
    busy_timeout: float,
    weights: RecallBased,
    recall_index: bool,
    check_integrity: bool,
) -> tuple[sqlite3.Connection, dict[str, Any]]:
    """A connection to the file at the current schema, and its ``meta`` values.

    The connection has the SQL function ``recall_base(count, total)`` with
    ``weights``. Raises sqlite3 errors (the caller maps them).
    """
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=busy_timeout
    )
    try:
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StorageError(f"cannot use WAL journal mode here (got {mode!r})")
        conn.execute(f"PRAGMA synchronous = {'FULL' if synchronous == 'FULL' else 'NORMAL'}")
        migrate(conn)

        def base(count: int, total: float) -> float:
            return recall_base(weights, count, total)

        conn.create_function("recall_base", 2, base, deterministic=True)
        if check_integrity:
            _check(conn)
        _prepare(conn, weights, recall_index)
        return conn, read_meta(conn)
    except BaseException:
        conn.close()
        raise


def _prepare(conn: sqlite3.Connection, weights: RecallBased, recall_index: bool) -> None:
    wanted = json.dumps([weights.recall_weight, weights.score_weight])
    stale = read_meta(conn).get("recall_weights") != wanted
    if not stale and not recall_index:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if stale:
            # recall_a was computed with other weights (or never): once, recompute.
            conn.execute(
                "UPDATE items SET recall_a = recall_base(recall_count, recall_score_total) "
                "WHERE recall_count > 0"
            )
            write_meta(conn, {"recall_weights": wanted})
        if recall_index:
            conn.execute(RECALL_INDEX)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _check(conn: sqlite3.Connection) -> None:
    problems = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
    if problems != ["ok"]:
        raise StorageCorrupt("integrity check: " + "; ".join(problems[:5]))
    try:
        conn.execute("INSERT INTO items_fts (items_fts, rank) VALUES ('integrity-check', 0)")
    except sqlite3.DatabaseError as exc:
        raise StorageCorrupt(f"full-text index: {exc}") from exc
    (orphans,) = conn.execute(
        "SELECT count(*) FROM items_fts AS f WHERE NOT EXISTS "
        "(SELECT 1 FROM items AS i WHERE i.n = f.rowid)"
    ).fetchone()
    if orphans:
        raise StorageCorrupt(f"full-text index: {orphans} entries of no item")
    meta = read_meta(conn)
    (unpinned, seq) = conn.execute(
        "SELECT count(*) FILTER (WHERE pinned = 0), "
        "max(coalesce(max(seq), 0), coalesce(max(access_seq), 0)) FROM items"
    ).fetchone()
    if meta.get("unpinned") != unpinned or int(meta.get("seq") or 0) < seq:
        log.warning(
            "memory store %s: counters repaired (unpinned %s -> %s, seq %s -> %s)",
            conn,
            meta.get("unpinned"),
            unpinned,
            meta.get("seq"),
            max(seq, int(meta.get("seq") or 0)),
        )
        conn.execute("BEGIN IMMEDIATE")
        write_meta(conn, {"unpinned": unpinned, "seq": max(seq, int(meta.get("seq") or 0))})
        conn.execute("COMMIT")
