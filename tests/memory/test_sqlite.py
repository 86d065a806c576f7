"""SQLite specifics: schema migrations, the file's settings, statistics that
survive a reopen, rollback of a failed batch."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agcore_actors.memory import (
    Capacity,
    EvictionConfig,
    InvalidInput,
    Lru,
    MemoryFilter,
    RecallBased,
    StorageError,
    StorageUnavailable,
    StoreInUse,
    Ttl,
)
from agcore_actors.memory._schema import MIGRATIONS
from agcore_actors.memory.lowlevel import SCHEMA_VERSION, SqliteBackend, SqliteReader
from tests.memory.helpers import FakeClock

REPO = Path(__file__).resolve().parents[2]


def test_a_new_file_gets_the_current_schema_in_wal_mode(tmp_path: Path) -> None:
    store = SqliteBackend(tmp_path / "m.db")
    store.close()
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_a_version_1_file_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO items (id, content, created_at, seq, accessed_at, access_seq) "
        "VALUES ('a', 'from v1', 5.0, 1, 5.0, 2)"
    )
    conn.close()
    store = SqliteBackend(path, clock=FakeClock(10.0))
    try:
        assert [i.content for i in store.list()] == ["from v1"]
        store.put("b", "new", index_text="searchable words")
        assert [i for i, _ in store.search(["searchable"])] == ["b"]
        # The counters continue after the old rows' sequence numbers.
        assert [i.id for i in store.list(MemoryFilter())] == ["a", "b"]
    finally:
        store.close()


def test_a_version_2_file_keeps_its_counters_and_recall_order(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(MIGRATIONS[0] + MIGRATIONS[1])
    conn.execute("PRAGMA user_version = 2")
    rows = [  # id, created_at, seq, pinned, access_seq, recall_count, total, recalled_at
        ("often", 1.0, 1, 0, 2, 5, 4.5, 9.0),
        ("never", 2.0, 3, 0, 4, 0, 0.0, None),
        ("pinned", 3.0, 5, 1, 6, 0, 0.0, None),
    ]
    conn.executemany(
        "INSERT INTO items (id, content, created_at, seq, pinned, accessed_at, access_seq, "
        "recall_count, recall_score_total, recalled_at) VALUES (?, 'x', ?, ?, ?, 0, ?, ?, ?, ?)",
        rows,
    )
    conn.close()
    clock = FakeClock(10.0)
    config = EvictionConfig(policy=RecallBased(max_items=2), check_interval=1000)
    store = SqliteBackend(path, config, clock=clock)
    try:
        store.put("new", "x")  # three unpinned now: the least valuable goes
        assert store.keys() == ["new", "often", "pinned"]
        assert store.put("newer", "x").id == "newer"
        # "new" and "newer" tie (written at this instant): the first written goes.
        assert store.keys() == ["newer", "often", "pinned"]
    finally:
        store.close()


def test_a_file_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StorageError, match="newer"):
        SqliteBackend(path)


def test_not_a_database_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError):
        SqliteBackend(path)


def test_synchronous_level_is_checked(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        SqliteBackend(tmp_path / "m.db", synchronous="OFF")  # type: ignore[arg-type]


def test_access_statistics_survive_a_reopen(tmp_path: Path) -> None:
    clock = FakeClock()
    config = EvictionConfig(policy=Lru(max_items=2), check_interval=1)
    store = SqliteBackend(tmp_path / "m.db", config, clock=clock)
    store.put("a", "1")
    store.put("b", "2")
    assert store.get("a") is not None  # a is now more recently used than b
    store.close()
    store = SqliteBackend(tmp_path / "m.db", config, clock=clock)
    got = store.get("a")
    assert got is not None and got.access_count == 2
    store.put("c", "3")  # evicts the least recently used: b
    assert store.keys() == ["a", "c"]
    store.close()


def _lower_variable_limit(store: SqliteBackend, limit: int) -> None:
    # This machine's SQLite allows 250,000 variables a statement; default builds
    # allow 32,766 and older ones 999. A search must not depend on it: lower it.
    store._conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, limit)


def test_a_search_for_more_hits_than_sql_variables_works(tmp_path: Path) -> None:
    store = SqliteBackend(tmp_path / "m.db", clock=FakeClock())
    with store.batch():
        for i in range(1_200):
            store.put(f"i{i:05d}", "x", index_text="common word")
    _lower_variable_limit(store, 999)
    assert len(store.search(["common"], limit=5_000)) == 1_200
    store.close()


def test_a_top_10_behind_many_expired_matches_works(tmp_path: Path) -> None:
    clock = FakeClock()
    store = SqliteBackend(
        tmp_path / "m.db",
        EvictionConfig(policy=Ttl(ttl=60.0), check_interval=100_000),
        clock=clock,
    )
    with store.batch():
        for i in range(1_200):
            store.put(f"old{i:05d}", "x", index_text="common common common word")
    clock.advance(120)  # all expired, not yet swept
    with store.batch():
        for i in range(10):
            store.put(f"new{i:02d}", "x", index_text="common other words here")
    _lower_variable_limit(store, 999)
    assert sorted(i for i, _ in store.search(["common"], limit=10)) == [
        f"new{i:02d}" for i in range(10)
    ]
    store.close()


def test_a_second_writer_on_one_file_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    first = SqliteBackend(tmp_path / "m.db")
    with pytest.raises(StoreInUse, match=r"m\.db"):
        SqliteBackend(tmp_path / "m.db")
    first.put("a", "x")
    first.close()
    second = SqliteBackend(tmp_path / "m.db")
    assert second.keys() == ["a"]
    second.close()


HOLDER = """
import sys
from agcore_actors.memory.lowlevel import SqliteBackend
store = SqliteBackend(sys.argv[1])
print("open", flush=True)
sys.stdin.read()
"""


def test_another_process_writing_to_the_file_is_refused_at_once(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "open\n"
            with pytest.raises(StoreInUse):
                SqliteBackend(db, EvictionConfig(policy=Capacity(max_items=200)))
        finally:
            holder.kill()  # not a clean close: the lock goes with the process
            holder.wait()
    SqliteBackend(db).close()


def test_a_reader_of_its_own_reads_while_the_writer_is_open(tmp_path: Path) -> None:
    writer = SqliteBackend(tmp_path / "m.db")
    writer.put("a", "x", index_text="some words")
    reader = SqliteReader.open(tmp_path / "m.db")
    try:
        assert reader.keys() == ["a"] and [i for i, _ in reader.search(["words"])] == ["a"]
        writer.put("b", "y")
        assert reader.keys() == ["a", "b"]  # every committed write
        with pytest.raises(TypeError):
            reader.put("c", "z")
    finally:
        reader.close()
        writer.close()


def test_a_reader_refuses_a_file_it_would_misread_and_migrates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    with pytest.raises(StorageError, match="schema version 1"):
        SqliteReader.open(path)
    conn = sqlite3.connect(path, isolation_level=None)
    assert conn.execute("PRAGMA user_version").fetchone() == (1,)
    conn.close()
    SqliteBackend(path).close()  # a writer migrates it
    SqliteReader.open(path).close()


def test_a_missing_parent_directory_is_storage_unavailable_not_a_raw_os_error(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-such-dir" / "m.db"
    with pytest.raises(StorageUnavailable, match="no-such-dir"):
        SqliteBackend(missing)
    assert not missing.parent.exists()
