"""The session store's SQLite schema, its migrations, and the mapping of sqlite3 errors.

Tables (each maps 1:1 to PostgreSQL: TEXT → text, REAL → double precision, INTEGER →
bigint, a JSON body → jsonb; ``WITHOUT ROWID`` is SQLite's clustered primary key)::

    sessions (id PK, agent, status, open_turn, turns, last_index, compacted_upto,
              summary JSON, pending_calls JSON, usage per kind (5 columns),
              created_at, updated_at, version, owner, lease_until, fence)
        index sessions_idle (updated_at, id)            ListSessions / ExpireSessions,
                                                        ListSessions(status="idle")
        index sessions_open (status, updated_at, id) WHERE status != 'idle'
                                                        ListSessions(status="running"
                                                        or "interrupted")
    messages (session, idx, turn, role, body JSON, created_at; PK (session, idx))
        the primary key is the last-N index: a tail is a range scan of it
    facts (session, key, value; PK (session, key))
    leases (session PK, host, token, expires_at, released)      schema version 4
        index leases_host (host)
    hosts (host PK, address, registered_at, expires_at)         schema version 4
    blobs (hash PK, size, data BLOB)                             schema version 5
        the media of messages, once by SHA-256 (see :mod:`._blobs`)
    blob_refs (session, hash; PK (session, hash))                schema version 5
        index blob_refs_hash (hash)     which sessions keep a blob
    store_meta (key PK, value)  the schema version and one-off migrations done

``leases`` is a table of its own, not columns of ``sessions``, so that a session's
fencing token outlives the session's deletion (a recreated session's first lease still
gets a higher token). ``owner``, ``lease_until`` and ``fence`` of ``sessions`` (version
1) are unused.

Why ``sessions_open`` is partial (schema version 2; version 1 indexed every status):
a turn moves its session idle → running → idle, and a full status index took each move
as a delete and an insert on a leaf page of its own, one more random dirty page per
write. The partial index holds only the few sessions in a turn or interrupted, so its
pages are shared by every write of a batch; idle sessions, nearly all of them, are
listed through ``sessions_idle`` filtered by status.

Why ``messages`` is a rowid table (schema version 3; versions 1 and 2 made it ``WITHOUT
ROWID``, clustered by its primary key): a ``WITHOUT ROWID`` table keeps whole rows in its
interior pages too, and a message row (a few hundred bytes of body) left a 2 KiB interior
page room for a handful, so the tree was deep and appending a turn's messages split a
leaf and its parents nearly every time: 4.6 to 5.2 of the 6.3 to 7.1 pages a commit wrote
were the log's. As a rowid table the rows go to the end of the table, in pages every
write of a batch shares, and only the primary key's index (small entries) takes one
random leaf per commit: 1.4 pages of the log per commit, 3.4 to 4.5 in all. The rows of one
turn stay together, so a tail is a few page reads more, not one per message.

The schema version lives in ``store_meta``, not in ``PRAGMA user_version``, which
belongs to the memory store: both may share one file.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from .._sqlite_codes import sqlite_failure
from ._errors import InvalidRequest, StoreBusy, StoreStorageError, StoreUnavailable

#: The page size of a file the store creates (see :func:`connect`).
DEFAULT_PAGE_SIZE = 2048
#: WAL pages after which a commit checkpoints (see ``SqliteSessions.checkpoint_pages``).
DEFAULT_CHECKPOINT_PAGES = 20_000

#: Migration ``i`` takes the schema from version i to i + 1.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        agent TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'idle'
            CHECK (status IN ('idle', 'running', 'interrupted')),
        open_turn TEXT,
        turns INTEGER NOT NULL DEFAULT 0,
        last_index INTEGER NOT NULL DEFAULT -1,
        compacted_upto INTEGER NOT NULL DEFAULT 0,
        summary TEXT,
        pending_calls TEXT,
        input_tokens INTEGER NOT NULL DEFAULT 0,
        output_tokens INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        reasoning_tokens INTEGER NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        version INTEGER NOT NULL,
        owner TEXT,
        lease_until REAL,
        fence INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX sessions_idle ON sessions (updated_at, id);
    CREATE INDEX sessions_status ON sessions (status, updated_at, id);
    CREATE TABLE messages (
        session TEXT NOT NULL,
        idx INTEGER NOT NULL,
        turn TEXT NOT NULL,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (session, idx)
    ) WITHOUT ROWID;
    CREATE TABLE facts (
        session TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (session, key)
    ) WITHOUT ROWID;
    """,
    """
    DROP INDEX sessions_status;
    CREATE INDEX sessions_open ON sessions (status, updated_at, id) WHERE status != 'idle';
    """,
    """
    CREATE TABLE messages_v3 (
        session TEXT NOT NULL,
        idx INTEGER NOT NULL,
        turn TEXT NOT NULL,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (session, idx)
    );
    INSERT INTO messages_v3 (session, idx, turn, role, body, created_at)
        SELECT session, idx, turn, role, body, created_at FROM messages ORDER BY session, idx;
    DROP TABLE messages;
    ALTER TABLE messages_v3 RENAME TO messages;
    """,
    """
    CREATE TABLE leases (
        session TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        token INTEGER NOT NULL,
        expires_at REAL NOT NULL,
        released INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX leases_host ON leases (host);
    CREATE TABLE hosts (
        host TEXT PRIMARY KEY,
        address TEXT NOT NULL,
        registered_at REAL NOT NULL,
        expires_at REAL NOT NULL
    );
    """,
    """
    CREATE TABLE blobs (
        hash TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        data BLOB NOT NULL
    );
    CREATE TABLE blob_refs (
        session TEXT NOT NULL,
        hash TEXT NOT NULL,
        PRIMARY KEY (session, hash)
    ) WITHOUT ROWID;
    CREATE INDEX blob_refs_hash ON blob_refs (hash);
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
_VERSION_KEY = "sessions_schema_version"


def classify(exc: sqlite3.Error) -> StoreStorageError:
    """The store's error for one of SQLite's, by its primary result code: busy or
    locked past the busy timeout → :class:`StoreBusy`; full, read-only, I/O error,
    cannot open, no permission → :class:`StoreUnavailable`; anything else (corrupt, not
    a database, misuse) → :class:`StoreStorageError`."""
    kind, message = sqlite_failure(exc)
    if kind == "busy":
        return StoreBusy(message)
    if kind == "unavailable":
        return StoreUnavailable(message)
    return StoreStorageError(message)


@contextlib.contextmanager
def storage_errors() -> Iterator[None]:
    """sqlite3 errors become the store's (see :func:`classify`)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise classify(exc) from exc


def get_meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def _found(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'"
    ).fetchone()
    return int(get_meta(conn, _VERSION_KEY) or 0) if exists else 0


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` in one transaction; the version found.

    A current file is only read. A file written by a newer version of this code is
    refused.
    """
    found = _found(conn)
    if found == SCHEMA_VERSION:
        return found
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = _found(conn)  # again, under the write lock: another process may have won
        if found > SCHEMA_VERSION:
            raise StoreStorageError(
                f"the session tables have schema version {found}, newer than this "
                f"code's {SCHEMA_VERSION}"
            )
        conn.execute(
            "CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        for version in range(found, SCHEMA_VERSION):
            for statement in MIGRATIONS[version].split(";"):
                if statement.strip():
                    conn.execute(statement)
        set_meta(conn, _VERSION_KEY, str(SCHEMA_VERSION))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return found


def check_page_size(page_size: int) -> None:
    """Refuse a page size SQLite would ignore (a power of two, 512 to 65,536)."""
    if not 512 <= page_size <= 65_536 or page_size & (page_size - 1):
        raise InvalidRequest(f"page_size must be a power of two from 512 to 65536, not {page_size}")


def connect(
    path: str | Path,
    *,
    synchronous: Literal["FULL", "NORMAL"],
    busy_timeout: float,
    cache_mib: int,
    checkpoint_pages: int = DEFAULT_CHECKPOINT_PAGES,
    page_size: int = DEFAULT_PAGE_SIZE,
) -> sqlite3.Connection:
    """The file at ``path`` (created if missing), in WAL mode, its schema migrated.

    ``page_size`` applies to a file this creates; an existing one keeps its own (for
    instance a memory store's file, or one made before the option existed). Why 2,048,
    not SQLite's 4,096: a turn's commit dirties a few leaf pages at random places (its
    session's row, that row's ``sessions_idle`` entry, its messages, its facts), and
    each goes whole into the WAL and again into the database at a checkpoint, so the
    bytes a commit writes follow the page size (about 12 KiB at 2,048 against 21 at
    4,096), while a ``LoadSession`` tail of 50 messages reads a few more pages.
    """
    if synchronous not in ("FULL", "NORMAL"):
        raise InvalidRequest(f"synchronous must be FULL or NORMAL, not {synchronous!r}")
    check_page_size(page_size)
    with storage_errors():
        conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=busy_timeout
        )
        try:
            # PRAGMAs take no parameters; these are checked ints. The page size first:
            # it counts only before the file's first page is written.
            conn.execute(f"PRAGMA page_size = {int(page_size)}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreStorageError(f"cannot use WAL journal mode here (got {mode!r})")
            conn.execute(f"PRAGMA synchronous = {synchronous}")
            conn.execute(f"PRAGMA cache_size = {-1024 * int(cache_mib)}")
            conn.execute(f"PRAGMA wal_autocheckpoint = {int(checkpoint_pages)}")
            migrate(conn)
        except BaseException:
            conn.close()
            raise
    return conn
