"""How the MemoryStore runs its backend: storage failures that do not take it
down (a real full file, a lock held too long), its health in its status, and
its clock."""

from __future__ import annotations

import json
import math
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import trio.testing

from agcore_actors import ActorSystem, AskTimeout
from agcore_actors.memory import (
    KnowledgePage,
    MemoryStoreConfig,
    RetrievalMode,
    StorageBusy,
    memory_store_spec,
)
from agcore_actors.memory.messages import (
    Count,
    Get,
    GetMemoryStatus,
    List,
    Put,
    PutPage,
    Retrieve,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def test_a_full_disk_refuses_writes_and_the_store_stays_up_degraded_in_the_snapshot(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(HERE / "full_disk_writer.py"), str(tmp_path / "m.db"), str(1 << 20)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["written"] > 0  # it wrote until the file could not grow
    assert "FULL" in result["refused"] or "IOERR" in result["refused"], result
    assert result["again"] == "StorageUnavailable"  # a refused write changes nothing
    assert result["degraded"] and result["last_error"]
    assert result["first_readable"] and result["count"] == result["written"]
    assert result["restarts"] == 0
    assert result["snapshot_degraded"] == f"storage unavailable: {result['last_error']}"
    assert result["healed"] and result["snapshot_healed"]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


async def test_a_busy_file_is_the_askers_retryable_error_and_the_store_stays_up(
    tmp_path: Path,
) -> None:
    config = MemoryStoreConfig(path=str(tmp_path / "m.db"), busy_timeout=0.05)
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(memory_store_spec("memory", config=config))
        await memory.ask(Put(id="a", content="x"))
        holder = sqlite3.connect(tmp_path / "m.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StorageBusy) as info:
                await memory.ask(Put(id="b", content="y"))
            assert info.value.is_retryable()
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await memory.ask(Put(id="b", content="y"))
        assert await memory.ask(Get("b")) is not None
        status = await memory.ask(GetMemoryStatus())
        assert status.backend == "sqlite" and not status.degraded
        assert next(i for i in system.snapshot() if i.name == "memory").restarts == 0


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
async def test_timestamps_follow_trios_clock_by_default(
    backend: str, tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    path = None if backend == "memory" else str(tmp_path / "m.db")
    async with ActorSystem(strict=True) as system:
        # The autojump clock jumps while the file opens in a thread: no start timeout.
        spec = memory_store_spec(
            "memory", config=MemoryStoreConfig(path=path), start_timeout=math.inf
        )
        memory = await system.root.start_child(spec)
        first = await memory.ask(Put(id="a", content="x"))
        await trio.sleep(100)  # virtual: no wall time passes
        second = await memory.ask(Put(id="b", content="x"))
        assert second.created_at - first.created_at == pytest.approx(100.0, abs=1e-6)


def huge_page() -> KnowledgePage:
    """A page whose Dice score takes seconds: a slow read, for real."""
    words = ["alpha", "beta", "gamma", "delta", "omega", "sigma"]
    rng = random.Random(1)
    content = " ".join(rng.choice(words) for _ in range(1_500_000))
    return KnowledgePage(id="big", title="Alpha notes", content=content)


async def test_a_timed_out_read_is_abandoned_and_holds_up_no_one(tmp_path: Path) -> None:
    config = MemoryStoreConfig(path=str(tmp_path / "m.db"))
    async with ActorSystem() as system:
        memory = await system.root.start_child(memory_store_spec("memory", config=config))
        await memory.ask(PutPage(huge_page()))
        await memory.ask(Put(id="note", content="v"))
        slow = Retrieve(query="alpha", mode=RetrievalMode.DICE)
        start = trio.current_time()
        with pytest.raises(AskTimeout):
            await memory.ask(slow, timeout=0.2)
        assert trio.current_time() - start < 1.0  # the read takes seconds
        # Another read and a write go through while it still runs.
        start = trio.current_time()
        note = await memory.ask(Get("note"))
        assert note is not None and note.content == "v"
        await memory.ask(Put(id="x", content="y"))
        assert trio.current_time() - start < 1.0


async def test_a_read_does_not_wait_for_a_write_in_progress(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    config = MemoryStoreConfig(path=str(path), busy_timeout=60.0)
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(memory_store_spec("memory", config=config))
        await memory.ask(Put(id="a", content="x"))
        # Another connection holds the write lock: the store's next write runs
        # (in its thread, inside SQLite's busy wait) until the test lets it go.
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        written = trio.Event()

        async def write() -> None:
            await memory.ask(Put(id="b", content="y"))
            written.set()

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(write)
                await trio.testing.wait_all_tasks_blocked()
                row = next(i for i in system.snapshot() if i.name == "memory")
                assert row.in_flight == 1  # the write runs
                with trio.fail_after(30):  # fails fast on a store that queues reads
                    assert await memory.ask(Get("a")) is not None
                    assert await memory.ask(Count()) == 1  # nothing of the write yet
                assert not written.is_set()
                holder.execute("ROLLBACK")
        finally:
            holder.close()
        assert await memory.ask(Count()) == 2


async def test_writes_apply_in_the_order_they_were_sent(tmp_path: Path) -> None:
    config = MemoryStoreConfig(path=str(tmp_path / "m.db"))
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(memory_store_spec("memory", config=config))
        for i in range(40):
            await memory.tell(Put(id=f"w{i:02d}", content=str(i)))
            await memory.tell(Put(id="same", content=str(i)))
        await memory.ask(Put(id="w99", content="last"))
        # The last write was answered, so every write before it is applied, in order:
        # oldest first (ties in write order), and the last value of "same" wins.
        listed = await memory.ask(List())
        ids = [i.id for i in listed.items if i.id != "same"]
        assert ids == [*(f"w{i:02d}" for i in range(40)), "w99"]
        same = await memory.ask(Get("same"))
        assert same is not None and same.content == "39"


async def test_a_write_whose_asker_gives_up_while_it_waits_its_turn_is_never_applied(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    config = MemoryStoreConfig(path=str(path), busy_timeout=60.0)
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(memory_store_spec("memory", config=config))
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # the first write runs until the test lets it go
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(memory.ask, Put(id="first", content="x"))
                await trio.testing.wait_all_tasks_blocked()
                with pytest.raises(AskTimeout):
                    await memory.ask(Put(id="queued", content="y"), timeout=0.2)
                holder.execute("ROLLBACK")
        finally:
            holder.close()
        assert await memory.ask(Get("first")) is not None
        assert await memory.ask(Get("queued")) is None
        assert await memory.ask(Count()) == 1


async def test_statistics_gathered_by_reads_are_written_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agcore_actors.memory._runner.PENDING_LIMIT", 2)
    path = tmp_path / "m.db"
    async with ActorSystem(strict=True) as system:
        spec = memory_store_spec("memory", config=MemoryStoreConfig(path=str(path)))
        memory = await system.root.start_child(spec)
        for id in "abcd":
            await memory.ask(Put(id=id, content="x"))
        # The third read leaves 3 > 2 items pending and starts the flush. (A fourth
        # read could note its access before or after the flush took the pending
        # notes: the test would race the flush's thread.)
        for id in "abc":
            await memory.ask(Get(id))
        conn = sqlite3.connect(path)
        try:
            with trio.fail_after(30):
                while True:  # the flush runs in its thread, on no one's ask
                    counts = conn.execute("SELECT sum(access_count) FROM items").fetchone()
                    if counts == (3,):
                        break
                    await trio.sleep(0.01)
        finally:
            conn.close()
