"""SQLite's failures, each produced for real, map to the memory layer's errors:
busy to StorageBusy, read-only to StorageUnavailable, not a database to
StorageCorrupt; an integrity check at open finds a damaged full-text index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agcore_actors.memory import StorageBusy, StorageCorrupt, StorageUnavailable
from agcore_actors.memory._schema import storage_errors
from agcore_actors.memory.lowlevel import SqliteBackend


def test_a_lock_held_past_the_busy_timeout_is_storage_busy(tmp_path: Path) -> None:
    SqliteBackend(tmp_path / "m.db").close()
    holder = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        store = SqliteBackend(tmp_path / "m.db", busy_timeout=0.05)
        with pytest.raises(StorageBusy) as info:
            store.put("a", "x")
        assert info.value.is_retryable()
        holder.execute("ROLLBACK")
        store.put("a", "x")  # the same request, again: it goes through
        assert store.keys() == ["a"]
        store.close()
    finally:
        holder.close()


def test_writing_a_read_only_database_is_storage_unavailable(tmp_path: Path) -> None:
    store = SqliteBackend(tmp_path / "m.db")
    store.put("a", "x")
    store.close()
    conn = sqlite3.connect(f"file:{tmp_path / 'm.db'}?mode=ro", uri=True, isolation_level=None)
    try:
        with pytest.raises(StorageUnavailable, match="READONLY"), storage_errors():
            conn.execute("DELETE FROM items")
    finally:
        conn.close()


def test_a_file_that_is_not_a_database_is_storage_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageCorrupt):
        SqliteBackend(path)


def test_the_integrity_check_finds_a_full_text_entry_of_no_item(tmp_path: Path) -> None:
    store = SqliteBackend(tmp_path / "m.db")
    store.put("page", "x", index_text="some words")
    store.put("other", "y")
    store.close()
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    conn.execute("DELETE FROM items WHERE id = 'page'")  # behind the store's back
    conn.close()
    SqliteBackend(tmp_path / "m.db").close()  # not asked: not checked
    with pytest.raises(StorageCorrupt, match="full-text"):
        SqliteBackend(tmp_path / "m.db", check_integrity=True)


def test_the_integrity_check_finds_a_damaged_page(tmp_path: Path) -> None:
    store = SqliteBackend(tmp_path / "m.db", synchronous="FULL")
    with store.batch():
        for i in range(2_000):
            store.put(f"item:{i:05d}", "x" * 200, index_text=f"word{i}")
    store.close()
    data = bytearray((tmp_path / "m.db").read_bytes())
    page = 4096
    assert len(data) > 20 * page
    for n in range(10, 15):  # the headers of a few b-tree pages
        data[n * page : n * page + 12] = b"\xff" * 12
    (tmp_path / "m.db").write_bytes(bytes(data))
    with pytest.raises(StorageCorrupt):
        SqliteBackend(tmp_path / "m.db", check_integrity=True)


def test_the_integrity_check_repairs_counters_that_disagree(tmp_path: Path) -> None:
    store = SqliteBackend(tmp_path / "m.db")
    store.put("a", "x")
    store.put("b", "y")
    store.close()
    conn = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
    conn.execute("UPDATE meta SET value = 7 WHERE name = 'unpinned'")
    conn.close()
    store = SqliteBackend(tmp_path / "m.db", check_integrity=True)
    store.close()
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        assert conn.execute("SELECT value FROM meta WHERE name = 'unpinned'").fetchone() == (2,)
    finally:
        conn.close()
