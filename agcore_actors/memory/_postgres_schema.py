"""The memory store's PostgreSQL schema, its migrations, connecting, and errors.

Tables (prefixed ``memory_`` so that they can share a schema with the session store's)::

    memory_items (n PK, id UNIQUE COLLATE "C", content, metadata (JSON text),
                  created_at, seq, pinned, accessed_at, access_seq, access_count,
                  recall_count, recall_score_total, recalled_at, recall_a, last_used,
                  dl: the indexed length in tokens, NULL when not indexed)
        indexes on (created_at, seq) and (access_seq) of unpinned rows, for eviction,
        and on (recall_a, last_used, created_at, seq) for recall-based eviction
    memory_postings (term, n, tf, dl; PK (term, n) INCLUDE (tf, dl))  the full-text
                  index: one row per distinct token of an indexed item (tokens come from
                  ``_text.tokens``); a search reads a term's postings from the primary
                  key alone (an index-only scan: postings of one term are adjacent there,
                  scattered in the table)
    memory_terms (term PK, df)   how many indexed items hold each term
    memory_meta (name PK, value) the schema version, the index's totals (``docs``:
                  indexed items, ``tokens``: their summed lengths) and ``unpinned``, the
                  count of unpinned rows that capacity bounds compare with (kept by every
                  write, under the write lock)
    memory_seq   the sequence of write and use order (``seq``, ``access_seq``)

With these, BM25 is FTS5's formula computed in SQL (see ``_postgres_reads``).

Migrations run on open in one transaction holding a transaction-level advisory lock, so
several hosts opening one database at once migrate it once. A schema newer than this
code's is refused.

Errors: :func:`classify` maps psycopg's to the memory layer's: a deadlock, a serialization
failure or a lock timeout is :class:`StorageBusy`; a lost or refused connection, or a
server out of resources or shutting down, :class:`StorageUnavailable` (the backend
connects again on its next call); a value PostgreSQL cannot hold :class:`InvalidInput`;
anything else :class:`StorageError`. No error carries the URL's password.
"""

from __future__ import annotations

from typing import Any

from .. import _postgres_common as common
from .._postgres_url import error_text
from ._errors import (
    InvalidInput,
    MemoryStoreError,
    StorageBusy,
    StorageError,
    StorageUnavailable,
)

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE memory_items (
        n bigserial PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        content text NOT NULL,
        metadata text NOT NULL DEFAULT '{}',
        created_at double precision NOT NULL,
        seq bigint NOT NULL,
        pinned boolean NOT NULL DEFAULT false,
        accessed_at double precision NOT NULL,
        access_seq bigint NOT NULL,
        access_count bigint NOT NULL DEFAULT 0,
        recall_count bigint NOT NULL DEFAULT 0,
        recall_score_total double precision NOT NULL DEFAULT 0,
        recalled_at double precision,
        recall_a double precision NOT NULL DEFAULT 0,
        last_used double precision NOT NULL,
        dl integer
    );
    CREATE INDEX memory_items_age ON memory_items (created_at, seq) WHERE NOT pinned;
    CREATE INDEX memory_items_use ON memory_items (access_seq) WHERE NOT pinned;
    CREATE INDEX memory_items_recall ON memory_items (recall_a, last_used, created_at, seq)
        WHERE NOT pinned;
    CREATE TABLE memory_postings (
        term text COLLATE "C" NOT NULL,
        n bigint NOT NULL,
        tf integer NOT NULL,
        dl integer NOT NULL,
        PRIMARY KEY (term, n) INCLUDE (tf, dl)
    );
    CREATE INDEX memory_postings_item ON memory_postings (n);
    CREATE TABLE memory_terms (term text COLLATE "C" PRIMARY KEY, df bigint NOT NULL);
    CREATE TABLE memory_meta (name text PRIMARY KEY, value double precision NOT NULL);
    INSERT INTO memory_meta (name, value) VALUES ('docs', 0), ('tokens', 0), ('unpinned', 0);
    CREATE SEQUENCE memory_seq;
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
_VERSION = "schema_version"
#: Advisory lock keys are this plus a hash of the schema name (see :data:`LOCK_KEY`).
MIGRATION_LOCK = "agcore.memory.migrate"
#: The SQL of the key of the store's write lock: one per database schema.
LOCK_KEY = "hashtext(current_schema() || %s)"


def import_psycopg() -> Any:
    """The psycopg module, or one clear line naming the extra to install."""
    return common.import_psycopg("a memory store on PostgreSQL")


#: Busy is retried by nobody here: the asker may send again (StorageBusy).
_ERRORS: dict[common.ErrorKind, type[MemoryStoreError]] = {
    "busy": StorageBusy,
    "unavailable": StorageUnavailable,
    "data": InvalidInput,  # a value the column cannot hold
    "other": StorageError,
}


def classify(exc: BaseException, url: str) -> MemoryStoreError:
    """The memory layer's error for one of psycopg's (see the module doc)."""
    return _ERRORS[common.error_kind(exc, import_psycopg())](error_text(exc, url))


def check_nul(*values: str) -> None:
    """PostgreSQL text cannot hold NUL: refuse it before anything is written."""
    for v in values:
        if "\x00" in v:
            raise InvalidInput("PostgreSQL text cannot contain NUL (\\x00) characters")


def migrate(conn: Any) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` under the advisory lock; the
    version found. ``conn`` is an autocommit psycopg connection."""
    with conn.transaction():
        conn.execute(f"SELECT pg_advisory_xact_lock({LOCK_KEY})", (MIGRATION_LOCK,))
        (exists,) = conn.execute("SELECT to_regclass('memory_meta') IS NOT NULL").fetchone()
        found = 0
        if exists:
            row = conn.execute(
                "SELECT value FROM memory_meta WHERE name = %s", (_VERSION,)
            ).fetchone()
            found = 0 if row is None else int(row[0])
        if common.apply_migrations(conn, MIGRATIONS, found, tables="memory", too_new=StorageError):
            conn.execute(
                "INSERT INTO memory_meta (name, value) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (_VERSION, SCHEMA_VERSION),
            )
    return found


def connect(url: str, *, connect_timeout: float, migrate_schema: bool) -> Any:
    """An autocommit psycopg connection to ``url``, the schema migrated if asked."""

    def setup(conn: Any) -> None:
        if migrate_schema:
            migrate(conn)
        # Statistics commit without an fsync; writes set it back (see _postgres_reads).
        conn.execute("SET synchronous_commit = off")

    return common.connect(
        url,
        psycopg=import_psycopg(),
        connect_timeout=connect_timeout,
        autocommit=True,
        setup=setup,
        classify=classify,
    )
