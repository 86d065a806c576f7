"""The SQLite schema, its migrations, and the mapping of sqlite3 errors."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from typing import Any

from .._sqlite_codes import sqlite_failure
from ._errors import (
    InvalidInput,
    StorageBusy,
    StorageCorrupt,
    StorageError,
    StorageUnavailable,
)

#: Schema migrations; migration ``i`` takes ``PRAGMA user_version`` from i to i + 1.
MIGRATIONS: tuple[str, ...] = (
    # 1: the items table and the indexes eviction scans.
    """
    CREATE TABLE items (
        n INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        content TEXT NOT NULL,
        metadata TEXT NOT NULL DEFAULT '{}',
        created_at REAL NOT NULL,
        seq INTEGER NOT NULL,
        pinned INTEGER NOT NULL DEFAULT 0,
        accessed_at REAL NOT NULL,
        access_seq INTEGER NOT NULL,
        access_count INTEGER NOT NULL DEFAULT 0,
        recall_count INTEGER NOT NULL DEFAULT 0,
        recall_score_total REAL NOT NULL DEFAULT 0,
        recalled_at REAL
    );
    CREATE INDEX items_age ON items (created_at, seq) WHERE pinned = 0;
    CREATE INDEX items_use ON items (access_seq) WHERE pinned = 0;
    """,
    # 2: the full-text index. Rows hold pre-tokenised text (see _text.tokens:
    # lowercase words, CJK bigrams, space-separated), so the plain 'ascii'
    # tokenizer (non-ASCII characters are token characters) splits exactly
    # where our tokenizer did; rowid = items.n.
    """
    CREATE VIRTUAL TABLE items_fts USING fts5 (body, tokenize = 'ascii');
    """,
    # 3: what opening the file needs without a scan (counters in ``meta``), and
    # the columns recall-based eviction orders by: ``recall_a`` (recall_base
    # with the weights named in meta 'recall_weights'; NULL there: recompute)
    # and ``last_used``. Its index is made when a RecallBased policy opens it.
    """
    ALTER TABLE items ADD COLUMN recall_a REAL NOT NULL DEFAULT 0;
    ALTER TABLE items ADD COLUMN last_used REAL;
    UPDATE items SET last_used = max(created_at, coalesce(recalled_at, created_at));
    CREATE TABLE meta (name TEXT PRIMARY KEY, value) WITHOUT ROWID;
    INSERT INTO meta (name, value)
        SELECT 'seq', max(coalesce(max(seq), 0), coalesce(max(access_seq), 0)) FROM items;
    INSERT INTO meta (name, value) SELECT 'unpinned', count(*) FROM items WHERE pinned = 0;
    INSERT INTO meta (name, value) VALUES ('recall_weights', NULL);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)


def classify(exc: sqlite3.Error) -> StorageError:
    """The memory layer's error for one of SQLite's, by its primary result code:

    - busy or locked (the busy timeout ran out): :class:`StorageBusy`;
    - full, read-only, I/O error, cannot open, no permission: :class:`StorageUnavailable`;
    - corrupt, not a database: :class:`StorageCorrupt`;
    - anything else: :class:`StorageError`.
    """
    kind, message = sqlite_failure(exc)
    if kind == "busy":
        return StorageBusy(message)
    if kind == "unavailable":
        return StorageUnavailable(message)
    if kind == "corrupt":
        return StorageCorrupt(message)
    return StorageError(message)


@contextlib.contextmanager
def storage_errors() -> Iterator[None]:
    """Map sqlite3's errors to the memory layer's (see :func:`classify`; a string
    SQLite cannot take, such as one with a lone surrogate, is the caller's
    :class:`InvalidInput`)."""
    try:
        yield
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"a string cannot be stored: {exc.reason}") from None
    except sqlite3.Error as exc:
        raise classify(exc) from exc


RECALL_INDEX = (
    "CREATE INDEX IF NOT EXISTS items_recall "
    "ON items (recall_a, last_used, created_at, seq) WHERE pinned = 0"
)


def read_meta(conn: sqlite3.Connection) -> dict[str, Any]:
    """The ``meta`` table as a dict (a handful of rows)."""
    return dict(conn.execute("SELECT name, value FROM meta").fetchall())


def write_meta(conn: sqlite3.Connection, values: dict[str, Any]) -> None:
    conn.executemany(
        "INSERT INTO meta (name, value) VALUES (?, ?) "
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        list(values.items()),
    )


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION`, one transaction per step.

    Returns the version found. A file from a newer version is refused.
    """
    (found,) = conn.execute("PRAGMA user_version").fetchone()
    if found > SCHEMA_VERSION:
        raise StorageError(
            f"the database has schema version {found}, newer than this code's {SCHEMA_VERSION}"
        )
    for version in range(found, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    conn.execute(statement)
            # user_version lives in the file header, so it commits atomically
            # with the migration. (A PRAGMA takes no parameters; it is an int.)
            conn.execute(f"PRAGMA user_version = {int(version) + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return int(found)
