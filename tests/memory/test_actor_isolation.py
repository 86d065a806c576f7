"""A storage error that repeats on every write never takes the system down: the
MemoryStore is isolated (parked) with a typed error to its askers, then tried again."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorParked
from agcore_actors.memory import MemoryStoreConfig, StorageError, memory_store_spec
from agcore_actors.memory.messages import Get, Put


def _break_writes(path: Path, broken: bool) -> None:
    """Make every insert into the items table fail inside SQLite (an error the store
    classifies as neither busy, full nor read-only), or stop doing so."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        if broken:
            conn.execute(
                "CREATE TRIGGER boom BEFORE INSERT ON items BEGIN SELECT RAISE(ABORT, 'boom'); END"
            )
        else:
            conn.execute("DROP TRIGGER boom")
    finally:
        conn.close()


async def test_a_write_error_on_every_write_parks_the_store_and_never_ends_the_system(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # No deadline of the test's own: with autojump, virtual time jumps to the next
    # deadline whenever the store's worker thread works.
    path = tmp_path / "m.db"
    told: list[BaseException] = []
    async with ActorSystem(strict=True, seed=0) as system:
        config = MemoryStoreConfig(path=str(path))
        spec = memory_store_spec("memory", config=config, start_timeout=math.inf)
        memory = await system.root.start_child(spec)
        await memory.ask(Put(id="before", content="kept"))
        _break_writes(path, True)
        for i in range(12):
            try:
                await memory.ask(Put(id=f"x{i}", content="lost"))
            except (StorageError, ActorParked) as exc:
                told.append(exc)
        # Every write was told a typed error; the store was parked, not given up on.
        assert len(told) == 12
        assert any(isinstance(e, StorageError) for e in told)
        parked = [e for e in told if isinstance(e, ActorParked)]
        assert parked and all(e.retry_in is not None and e.retry_in > 0 for e in parked)
        assert "memory" in system.root.children()
        # Once the fault is gone, the store is tried again and serves.
        _break_writes(path, False)
        for _ in range(10):
            try:
                await memory.ask(Put(id="after", content="stored"))
                break
            except ActorParked as exc:
                await trio.sleep(exc.retry_in)
        assert await memory.ask(Get(id="after")) is not None
        item = await memory.ask(Get(id="before"))
        assert item is not None and item.content == "kept"
