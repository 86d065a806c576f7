"""The session tables' migrations (a file written by an older version opens, migrated in
place), the indexes the reads use, and how SQLite's errors are classified."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agcore_actors.store import SessionStatus, StoreBusy, StoreStorageError, StoreUnavailable
from agcore_actors.store._backend import encode_message
from agcore_actors.store._schema import MIGRATIONS, classify, storage_errors
from agcore_actors.store.lowlevel import SCHEMA_VERSION, SqliteSessionBackend

BODIES = ['{"role":"user","content":"hi"}', '{"role":"assistant","content":"hello"}']
SESSIONS = [  # id, status, open turn, updated_at
    ("a", "idle", None, 10.0),
    ("b", "running", "t1", 20.0),
    ("c", "interrupted", None, 30.0),
    ("d", "idle", None, 40.0),
    ("e", "running", "t2", 50.0),
]


def write_old_version(path: Path, version: int) -> None:
    """A file as the version-``version`` code left it: its schema (version 1: the full
    status index; 1 and 2: messages ``WITHOUT ROWID``), a few sessions in every status,
    their messages and facts."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        for migration in MIGRATIONS[:version]:
            for statement in migration.split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute("INSERT INTO store_meta VALUES ('sessions_schema_version', ?)", (version,))
        for sid, status, turn, at in SESSIONS:
            conn.execute(
                "INSERT INTO sessions (id, status, open_turn, turns, last_index, created_at, "
                "updated_at, version) VALUES (?, ?, ?, 1, 0, ?, ?, 2)",
                (sid, status, turn, at, at),
            )
            for idx, body in enumerate(BODIES):
                conn.execute(
                    "INSERT INTO messages VALUES (?, ?, 't0', ?, ?, ?)",
                    (sid, idx, "user" if idx == 0 else "assistant", body, at),
                )
            conn.execute("INSERT INTO facts VALUES (?, 'k', 'v')", (sid,))
    finally:
        conn.close()


def indexes(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions' "
        "AND sql IS NOT NULL"
    )
    return {name for (name,) in rows}


def plan(conn: sqlite3.Connection, sql: str) -> str:
    return " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}"))


def without_rowid(conn: sqlite3.Connection, table: str) -> bool:
    (sql,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return "WITHOUT ROWID" in str(sql).upper()


@pytest.mark.parametrize("version", [1, 2])
def test_an_older_file_opens_migrated_with_every_session_and_message_as_before(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / f"v{version}.db"
    write_old_version(path, version)
    backend = SqliteSessionBackend(path)
    try:
        conn = backend.connection
        assert conn.execute(
            "SELECT value FROM store_meta WHERE key = 'sessions_schema_version'"
        ).fetchone() == (str(SCHEMA_VERSION),)
        assert indexes(conn) == {"sessions_idle", "sessions_open"}
        for status in ("idle", "running", "interrupted"):
            want = [sid for sid, st, _, _ in SESSIONS if st == status]
            assert [r.id for r in backend.page(None, status, None, 10)] == want
            assert [r.id for r in backend.page(45.0, status, None, 10)] == [
                sid for sid, st, _, at in SESSIONS if st == status and at < 45.0
            ]
        assert [r.id for r in backend.page(None, None, (20.0, "b"), 10)] == ["c", "d", "e"]
        assert backend.record("b") is not None and backend.record("b").open_turn == "t1"  # type: ignore[union-attr]
        assert backend.facts("e") == {"k": "v"}
        for sid, *_ in SESSIONS:
            entries = backend.entries(sid, 0, 2)
            assert [encode_message(e.message).decode() for e in entries] == BODIES
        assert not without_rowid(conn, "messages")  # version 3
        assert backend.integrity_check() == "ok"
    finally:
        backend.close()
    SqliteSessionBackend(path).close()  # a current file is only read


def test_a_new_file_keeps_messages_in_a_rowid_table_and_reads_a_tail_through_its_key(
    tmp_path: Path,
) -> None:
    # A WITHOUT ROWID table keeps whole rows in its interior pages: a message log as one
    # split a leaf and its parents on nearly every appended turn (see _schema).
    backend = SqliteSessionBackend(tmp_path / "s.db")
    try:
        conn = backend.connection
        assert not without_rowid(conn, "messages")
        assert without_rowid(conn, "facts")  # small rows: clustered is right there
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        backend.messages("a", 3, 8)
        backend.group_start("a", 7)
        for statement in seen:
            found = plan(conn, statement)
            assert "USING INDEX sqlite_autoindex_messages_1 (session=?" in found, found
            assert "TEMP B-TREE" not in found
    finally:
        backend.close()


def test_every_listing_reads_through_an_index_in_order(tmp_path: Path) -> None:
    backend = SqliteSessionBackend(tmp_path / "s.db")
    try:
        conn = backend.connection
        seen: list[str] = []
        conn.set_trace_callback(seen.append)  # the statements as run, values bound
        cases: list[tuple[SessionStatus | None, str]] = [
            ("running", "sessions_open"),
            ("interrupted", "sessions_open"),
            ("idle", "sessions_idle"),
            (None, "sessions_idle"),
        ]
        for status, index in cases:
            seen.clear()
            backend.page(1.0, status, (0.5, "x"), 100)
            (statement,) = seen
            found = plan(conn, statement)
            assert f"INDEX {index} (" in found, (status, found)
            assert "TEMP B-TREE" not in found  # the index gives the order: no sort
    finally:
        backend.close()


def test_sqlite_errors_are_classified_by_their_primary_result_code(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    try:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("PRAGMA query_only = 1")
        with pytest.raises(StoreUnavailable, match="SQLITE_READONLY"), storage_errors():
            conn.execute("INSERT INTO t VALUES (1)")
        busy = sqlite3.OperationalError("database is locked")
        busy.sqlite_errorcode = sqlite3.SQLITE_BUSY
        busy.sqlite_errorname = "SQLITE_BUSY"
        assert type(classify(busy)) is StoreBusy
        corrupt = sqlite3.DatabaseError("file is not a database")
        corrupt.sqlite_errorcode = sqlite3.SQLITE_NOTADB
        corrupt.sqlite_errorname = "SQLITE_NOTADB"
        assert type(classify(corrupt)) is StoreStorageError  # a crash: reopen the file
    finally:
        conn.close()
