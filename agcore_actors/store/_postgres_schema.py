"""The session store's PostgreSQL schema, its migrations, connecting, and errors.

Tables mirror the SQLite ones (:mod:`._schema`) column for column: text, bigint, double
precision, boolean; ids and keys sort by code point (``COLLATE "C"``, as Python and
SQLite compare strings). Message bodies, summaries and pending calls are stored as the exact
JSON text msgspec wrote (``text``, not ``jsonb``: jsonb would reorder keys and re-render
numbers, and a body must read back byte for byte)::

    sessions (id PK, agent, status, open_turn, turns, last_index, compacted_upto,
              summary, pending_calls, usage per kind (5 columns), created_at,
              updated_at, version)
        index sessions_idle (updated_at, id)
        index sessions_open (status, updated_at, id) WHERE status <> 'idle'
    messages (session, idx, turn, role, body, created_at; PK (session, idx))
    facts (session, key, value; PK (session, key))
    leases (session PK, host, token, expires_at, released)   outlive their session
        index leases_host (host)
    hosts (host PK, address, registered_at, expires_at)
    blobs (hash PK, size, data bytea)                          schema version 2
    blob_refs (session, hash; PK (session, hash))              schema version 2
        index blob_refs_hash (hash)
    store_meta (key PK, value)  the schema version

Migrations run on open, in one transaction holding a transaction-level advisory lock
(:data:`MIGRATION_LOCK`), so several processes opening one database at once migrate it
once: the others wait for the lock, then find the schema current. A database whose
schema is newer than this code's is refused.

Errors: :func:`classify` maps psycopg's. A lost or refused connection is
:class:`StoreUnavailable` (the backend reconnects on its next batch); a deadlock, a
serialization failure or a lock timeout is retried by the backend, then
:class:`StoreBusy`. No error or log line carries the URL's password (:func:`redact`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import _postgres_common as common
from .._postgres_url import error_text
from .._postgres_url import redact as redact  # re-exported: tests and callers use it here
from ._errors import InvalidRequest, StoreBusy, StoreStorageError, StoreUnavailable

#: Migration ``i`` takes the schema from version i to i + 1.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        id text COLLATE "C" PRIMARY KEY,
        agent text NOT NULL DEFAULT '',
        status text NOT NULL DEFAULT 'idle'
            CHECK (status IN ('idle', 'running', 'interrupted')),
        open_turn text,
        turns bigint NOT NULL DEFAULT 0,
        last_index bigint NOT NULL DEFAULT -1,
        compacted_upto bigint NOT NULL DEFAULT 0,
        summary text,
        pending_calls text,
        input_tokens bigint NOT NULL DEFAULT 0,
        output_tokens bigint NOT NULL DEFAULT 0,
        cache_read_tokens bigint NOT NULL DEFAULT 0,
        cache_write_tokens bigint NOT NULL DEFAULT 0,
        reasoning_tokens bigint NOT NULL DEFAULT 0,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL,
        version bigint NOT NULL
    );
    CREATE INDEX sessions_idle ON sessions (updated_at, id);
    CREATE INDEX sessions_open ON sessions (status, updated_at, id) WHERE status <> 'idle';
    CREATE TABLE messages (
        session text COLLATE "C" NOT NULL,
        idx bigint NOT NULL,
        turn text NOT NULL,
        role text NOT NULL,
        body text NOT NULL,
        created_at double precision NOT NULL,
        PRIMARY KEY (session, idx)
    );
    CREATE TABLE facts (
        session text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        value text NOT NULL,
        PRIMARY KEY (session, key)
    );
    CREATE TABLE leases (
        session text COLLATE "C" PRIMARY KEY,
        host text NOT NULL,
        token bigint NOT NULL,
        expires_at double precision NOT NULL,
        released boolean NOT NULL DEFAULT false
    );
    CREATE INDEX leases_host ON leases (host);
    CREATE TABLE hosts (
        host text COLLATE "C" PRIMARY KEY,
        address text NOT NULL,
        registered_at double precision NOT NULL,
        expires_at double precision NOT NULL
    );
    """,
    """
    CREATE TABLE blobs (
        hash text COLLATE "C" PRIMARY KEY,
        size bigint NOT NULL,
        data bytea NOT NULL
    );
    CREATE TABLE blob_refs (
        session text COLLATE "C" NOT NULL,
        hash text COLLATE "C" NOT NULL,
        PRIMARY KEY (session, hash)
    );
    CREATE INDEX blob_refs_hash ON blob_refs (hash);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
_VERSION_KEY = "sessions_schema_version"
#: The advisory lock held while the schema is checked and migrated ("agcore" + 27).
MIGRATION_LOCK = 0x6167636F7265_27

_INT64 = 1 << 63


def check_values(values: Sequence[Any]) -> None:
    """Refuse what PostgreSQL cannot store before anything is written: a NUL in a text
    value, an integer beyond ``bigint``."""
    for v in values:
        if isinstance(v, str):
            if "\x00" in v:
                raise InvalidRequest("PostgreSQL text cannot contain NUL (\\x00) characters")
        elif isinstance(v, int) and not -_INT64 <= v < _INT64:
            raise InvalidRequest(f"an integer beyond 64 bits: {v}")


def import_psycopg() -> Any:
    """The psycopg module, or one clear line naming the extra to install."""
    return common.import_psycopg("PostgresSessions")


#: SQLSTATE codes retried by the backend, then StoreBusy: the common busy ones and a
#: unique violation (two first writes of one row racing).
RETRYABLE = common.BUSY | {"23505"}
_ERRORS: dict[common.ErrorKind, type[StoreStorageError]] = {
    "busy": StoreBusy,
    "unavailable": StoreUnavailable,
    "data": StoreStorageError,
    "other": StoreStorageError,
}


def classify(exc: BaseException, url: str) -> StoreStorageError:
    """The store's error for one of psycopg's (see the module doc)."""
    kind = common.error_kind(exc, import_psycopg(), busy=RETRYABLE)
    return _ERRORS[kind](error_text(exc, url))


def _current_version(conn: Any) -> int | None:
    """The schema version, read without a lock (None: no ``store_meta`` table yet)."""
    row = conn.execute("SELECT to_regclass('store_meta') IS NOT NULL").fetchone()
    if not row[0]:
        conn.rollback()
        return None
    got = conn.execute("SELECT value FROM store_meta WHERE key = %s", (_VERSION_KEY,))
    found = got.fetchone()
    conn.rollback()
    return 0 if found is None else int(found[0])


def migrate(conn: Any) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` under the advisory lock; the version
    found. ``conn`` is a psycopg connection outside any transaction; it is left so."""
    current = _current_version(conn)
    if current == SCHEMA_VERSION:
        return current
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS store_meta (key text PRIMARY KEY, value text NOT NULL)"
        )
        row = conn.execute(
            "SELECT value FROM store_meta WHERE key = %s", (_VERSION_KEY,)
        ).fetchone()
        found = 0 if row is None else int(row[0])
        if common.apply_migrations(
            conn, MIGRATIONS, found, tables="session", too_new=StoreStorageError
        ):
            conn.execute(
                "INSERT INTO store_meta (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (_VERSION_KEY, str(SCHEMA_VERSION)),
            )
    return found


def connect(
    url: str, *, connect_timeout: float, migrate_schema: bool, stall_timeout: float | None = None
) -> Any:
    """A psycopg connection to ``url`` (not autocommit), its schema migrated if asked;
    with ``stall_timeout``, the server ends a transaction of it left idle that long."""

    def setup(conn: Any) -> None:
        if migrate_schema:
            migrate(conn)
        conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")
        if stall_timeout is not None:
            # Outside any transaction: set inside one, the timer would already run
            # until its COMMIT arrives (late, over a slow link).
            conn.commit()
            conn.autocommit = True
            milliseconds = max(1, round(stall_timeout * 1000))
            conn.execute(f"SET idle_in_transaction_session_timeout = {milliseconds:d}")
            conn.autocommit = False
        conn.commit()

    return common.connect(
        url,
        psycopg=import_psycopg(),
        connect_timeout=connect_timeout,
        autocommit=False,
        setup=setup,
        classify=classify,
    )
