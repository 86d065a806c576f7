"""The SQLite backend: its schema and sharing one file with the memory store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.llm import assistant
from agcore_actors.memory import MemoryStoreConfig, StorageUnavailable, memory_store_spec
from agcore_actors.memory import messages as mm
from agcore_actors.memory._schema import SCHEMA_VERSION as MEMORY_SCHEMA_VERSION
from agcore_actors.store import (
    Conflict,
    SessionNotFound,
    SqliteSessions,
    StoreStorageError,
    StoreUnavailable,
    session_store_spec,
)
from agcore_actors.store import _ops as ops
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import SCHEMA_VERSION, SqliteSessionBackend
from tests.store.helpers import user


async def test_the_store_and_the_memory_store_write_one_file_at_once_without_locking(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "shared.db")
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(
            memory_store_spec("memory", config=MemoryStoreConfig(path=path))
        )
        store = await system.root.start_child(
            session_store_spec("sessions", backend=SqliteSessions(path))
        )

        async def puts() -> None:
            for i in range(150):
                await memory.ask(mm.Put(id=f"item:{i}", content="x" * 500))

        async def turns(worker: int) -> None:
            for i in range(30):
                sid = f"w{worker}-{i}"
                rec = await store.ask(
                    sm.BeginTurn(session=sid, turn="t", expected_version=0, messages=[user()])
                )
                await store.ask(
                    sm.CommitTurn(
                        session=sid,
                        turn="t",
                        expected_version=rec.version,
                        messages=[assistant("a")],
                    )
                )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(puts)
            nursery.start_soon(puts)
            for worker in range(5):
                nursery.start_soon(turns, worker)
        assert await memory.ask(mm.Count("item:")) == 150
        page = await store.ask(sm.ListSessions(limit=1000))
        assert len(page.sessions) == 150
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # The memory store's schema version is its own; ours lives in store_meta.
        memory_version = conn.execute("PRAGMA user_version").fetchone()[0]
        assert memory_version == MEMORY_SCHEMA_VERSION
    conn.close()


def test_the_schema_version_is_kept_in_store_meta_and_a_newer_file_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    SqliteSessionBackend(path).close()
    with sqlite3.connect(path) as conn:
        stored = conn.execute(
            "SELECT value FROM store_meta WHERE key = 'sessions_schema_version'"
        ).fetchone()
        assert stored == (str(SCHEMA_VERSION),)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
        conn.execute("UPDATE store_meta SET value = '99' WHERE key = 'sessions_schema_version'")
    conn.close()
    with pytest.raises(StoreStorageError, match="newer"):
        SqliteSessionBackend(path)


def test_a_bad_synchronous_setting_is_refused_where_it_is_written() -> None:
    with pytest.raises(ValueError, match="synchronous"):
        SqliteSessions("x.db", synchronous="OFF")  # type: ignore[arg-type]


def _page_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def test_a_file_the_store_creates_gets_its_page_size_and_an_existing_file_keeps_its_own(
    tmp_path: Path,
) -> None:
    SqliteSessionBackend(tmp_path / "default.db").close()
    assert _page_size(tmp_path / "default.db") == 2048
    SqliteSessionBackend(tmp_path / "big.db", page_size=8192).close()
    assert _page_size(tmp_path / "big.db") == 8192
    existing = tmp_path / "existing.db"
    conn = sqlite3.connect(existing)
    conn.execute("CREATE TABLE other (x)")  # a file made elsewhere, at SQLite's 4,096
    conn.close()
    backend = SqliteSessionBackend(existing, page_size=1024)
    try:
        record = backend.run_batch([partial(ops.begin, backend, _begin("s", 0), 1.0)], True)
        assert record[0].unwrap().version == 1
    finally:
        backend.close()
    assert _page_size(existing) == 4096


@pytest.mark.parametrize("size", [0, 256, 3000, 131_072])
def test_a_page_size_sqlite_would_ignore_is_refused_where_it_is_written(
    tmp_path: Path, size: int
) -> None:
    with pytest.raises(ValueError, match="page_size"):
        SqliteSessions("x.db", page_size=size)
    with pytest.raises(ValueError, match="page_size"):
        SqliteSessionBackend(tmp_path / "s.db", page_size=size)
    assert not (tmp_path / "s.db").exists()


def test_an_operation_failing_after_it_wrote_leaves_no_trace_and_its_batch_commits(
    tmp_path: Path,
) -> None:
    backend = SqliteSessionBackend(tmp_path / "s.db")
    statements: list[str] = []
    try:

        def begin(session: str) -> object:
            msg = sm.BeginTurn(session=session, turn="t", expected_version=0, messages=[user()])
            return ops.begin(backend, msg, 1.0)

        def begin_then_fail() -> object:
            begin("broken")  # a write, then an error that is not the asker's
            raise RuntimeError("after writing")

        batch: list[Callable[[], object]] = [partial(begin, "a"), begin_then_fail]
        batch.append(partial(begin, "b"))
        backend.connection.set_trace_callback(statements.append)
        outcomes = backend.run_batch(batch, True)
        backend.connection.set_trace_callback(None)
        assert outcomes[0].unwrap().version == outcomes[2].unwrap().version == 1
        with pytest.raises(RuntimeError, match="after writing"):
            outcomes[1].unwrap()
        assert backend.record("broken") is None
        assert backend.messages("broken", 0, 10) == []
        # The others are applied exactly once, though the batch ran twice.
        assert [len(backend.messages(s, 0, 10)) for s in ("a", "b")] == [1, 1]
        assert statements.count("COMMIT") == 1  # still one transaction for the batch
        # A batch in which nothing fails needs no savepoints.
        statements.clear()
        backend.connection.set_trace_callback(statements.append)
        backend.run_batch([partial(begin, "c"), partial(begin, "d")], True)
        assert not [s for s in statements if s.startswith("SAVEPOINT")]
    finally:
        backend.connection.set_trace_callback(None)
        backend.close()


def _run(
    backend: SqliteSessionBackend, op: Callable[..., sm.SessionRecord], msg: object
) -> sm.SessionRecord:
    (done,) = backend.run_batch([partial(op, backend, msg, 1.0)], True)
    record: sm.SessionRecord = done.unwrap()
    return record


def _begin(session: str, version: int, turn: str = "t") -> sm.BeginTurn:
    return sm.BeginTurn(session=session, turn=turn, expected_version=version, messages=[user()])


def _commit(session: str, version: int) -> sm.CommitTurn:
    return sm.CommitTurn(session=session, turn="t", expected_version=version, messages=[])


def test_a_record_cached_by_one_connection_is_not_used_after_another_wrote_it(
    tmp_path: Path,
) -> None:
    first = SqliteSessionBackend(tmp_path / "s.db")
    second = SqliteSessionBackend(tmp_path / "s.db")  # another process, e.g. the CLI
    try:
        _run(first, ops.begin, _begin("s", 0))  # cached by ``first`` at version 1
        _run(second, ops.commit, _commit("s", 1))  # version 2, behind ``first``'s back
        # A stale record would accept this and overwrite version 2 (a lost update).
        with pytest.raises(Conflict):
            _run(first, ops.commit, _commit("s", 1))
        assert _run(first, ops.begin, _begin("s", 2, turn="t2")).version == 3
    finally:
        first.close()
        second.close()


def test_a_record_written_by_a_rolled_back_batch_is_not_cached(tmp_path: Path) -> None:
    backend = SqliteSessionBackend(tmp_path / "s.db")
    try:

        def begin_then_fail() -> object:
            ops.begin(backend, _begin("s", 0), 1.0)
            raise RuntimeError("after writing")

        (failed,) = backend.run_batch([begin_then_fail], True)
        with pytest.raises(RuntimeError):
            failed.unwrap()
        # A cached record of the undone write would accept this commit.
        with pytest.raises(SessionNotFound):
            _run(backend, ops.commit, _commit("s", 1))
        assert backend.record("s") is None
    finally:
        backend.close()


def test_writes_buffered_in_a_batch_are_seen_by_later_reads_of_the_same_batch(
    tmp_path: Path,
) -> None:
    backend = SqliteSessionBackend(tmp_path / "s.db")
    try:
        batch: list[Callable[[], object]] = [
            partial(ops.begin, backend, _begin("s", 0), 1.0),
            lambda: backend.messages("s", 0, 10),
            lambda: backend.facts("s"),
            partial(
                ops.update,
                backend,
                sm.UpdateSession(session="s", expected_version=1, facts_set={"k": "v"}),
                1.0,
            ),
            lambda: backend.facts("s"),
            partial(
                ops.update,
                backend,
                sm.UpdateSession(session="s", expected_version=2, facts_removed=["k"]),
                1.0,
            ),
            lambda: backend.facts("s"),
        ]
        got = [o.unwrap() for o in backend.run_batch(batch, True)]
        assert got[1] == [user()] and got[2] == {} and got[4] == {"k": "v"} and got[6] == {}
        assert backend.facts("s") == {}
    finally:
        backend.close()


def test_the_wal_stays_within_checkpoint_pages_and_one_transaction_under_continuous_writes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    backend = SqliteSessionBackend(path, checkpoint_pages=64)
    wal = Path(f"{path}-wal")
    frame = 2048 + 24
    largest = 0
    try:
        for n in range(300):  # each a transaction of a few pages: ~1,000 frames in all
            _run(backend, ops.begin, _begin(f"s{n}", 0))
            _run(backend, ops.commit, _commit(f"s{n}", 1))
            largest = max(largest, wal.stat().st_size // frame)
    finally:
        backend.close()
    assert 32 <= largest <= 64 + 16


async def test_a_missing_parent_directory_fails_both_stores_with_their_storage_unavailable(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "no-such-dir" / "shared.db"
    async with ActorSystem(strict=True) as system:
        with pytest.raises(StoreUnavailable):
            await system.root.start_child(
                session_store_spec("sessions", backend=SqliteSessions(str(missing)))
            )
        with pytest.raises(StorageUnavailable, match="no-such-dir"):
            await system.root.start_child(
                memory_store_spec("memory", config=MemoryStoreConfig(path=str(missing)))
            )
        assert system.root.children() == []
    assert not missing.parent.exists()
