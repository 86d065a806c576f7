"""The MemoryStore actor: its protocol in strict mode, persistence across a
restart of the actor, scheduled sweeps on virtual time, typed errors that do
not crash it, and the retrieve tool."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.memory import (
    RETRIEVE_TOOL,
    EvictionConfig,
    InvalidInput,
    KnowledgePage,
    MemoryFilter,
    MemoryStoreConfig,
    NotFound,
    RetrievalMode,
    Ttl,
    memory_store_spec,
    run_retrieve_tool,
)
from agcore_actors.memory.messages import (
    Count,
    Delete,
    Evict,
    Get,
    GetPage,
    List,
    PageIndex,
    Pin,
    Put,
    PutPage,
    Retrieve,
    SearchPages,
    UpdatePage,
)
from tests.postgres_fixture import fresh_url

WALL_START = 1_717_000_000.0


def trio_wall_clock() -> float:
    """Wall time that follows trio's (virtual) clock."""
    return WALL_START + trio.current_time()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryStoreConfig:
    if request.param == "postgres":
        return MemoryStoreConfig(url=fresh_url())
    path = None if request.param == "memory" else str(tmp_path / "memory.db")
    return MemoryStoreConfig(path=path)


async def test_items_protocol(system: ActorSystem, config: MemoryStoreConfig) -> None:
    mem = await system.root.start_child(memory_store_spec("memory", config=config))
    item = await mem.ask(Put(id="a", content="x", metadata={"k": [1, 2]}))
    assert item.id == "a" and item.metadata == {"k": [1, 2]}
    got = await mem.ask(Get("a"))
    assert got is not None and got.access_count == 1
    assert [i.id for i in (await mem.ask(List(MemoryFilter(prefix="a")))).items] == ["a"]
    assert await mem.ask(Count()) == 1
    assert (await mem.ask(Pin("a"))).pinned
    assert await mem.ask(Delete("a")) is True
    assert await mem.ask(Get("a")) is None
    assert await mem.ask(Evict()) == []


async def test_errors_are_the_askers_and_the_actor_carries_on(
    system: ActorSystem, config: MemoryStoreConfig
) -> None:
    mem = await system.root.start_child(memory_store_spec("memory", config=config))
    await mem.ask(Put(id="a", content="x"))
    with pytest.raises(InvalidInput):
        await mem.ask(Put(id="", content="x"))
    with pytest.raises(NotFound):
        await mem.ask(Pin("missing"))
    with pytest.raises(NotFound):
        await mem.ask(UpdatePage(KnowledgePage(id="missing", title="t")))
    with pytest.raises(InvalidInput):
        await mem.ask(Retrieve(query="x", max_results=-1))
    assert await mem.ask(Count()) == 1
    info = next(i for i in system.snapshot() if i.name == "memory")
    assert info.restarts == 0


async def test_knowledge_and_retrieval_protocol(
    system: ActorSystem, config: MemoryStoreConfig
) -> None:
    mem = await system.root.start_child(memory_store_spec("memory", config=config))
    page = KnowledgePage(
        id="p1",
        title="LangGraph StateGraph",
        summary="state management",
        content="LangGraph uses StateGraph for state machines",
    )
    stored = await mem.ask(PutPage(page))
    assert stored.created_at is not None
    assert await mem.ask(GetPage("p1")) == stored
    assert [p.id for p in (await mem.ask(SearchPages("machines"))).pages] == ["p1"]
    assert [e.id for e in (await mem.ask(PageIndex())).entries] == ["p1"]
    result = await mem.ask(Retrieve(query="LangGraph state", mode=RetrievalMode.DICE))
    assert round(result.items[0].score, 4) == 0.6339


async def test_sqlite_data_survives_restarting_the_actor(tmp_path: Path) -> None:
    config = MemoryStoreConfig(path=str(tmp_path / "memory.db"))
    page = KnowledgePage(id="knowledge_p1", title="remember me", content="the borrow checker")
    async with ActorSystem(strict=True) as system:
        mem = await system.root.start_child(memory_store_spec("memory", config=config))
        stored = await mem.ask(PutPage(page))
        await mem.ask(Put(id="note:ana:tea", content="green tea", pinned=True))
    async with ActorSystem(strict=True) as system:
        mem = await system.root.start_child(memory_store_spec("memory", config=config))
        assert await mem.ask(GetPage("knowledge_p1")) == stored
        note = await mem.ask(Get("note:ana:tea"))
        assert note is not None and note.content == "green tea" and note.pinned


async def test_scheduled_sweep_removes_expired_rows_on_virtual_time(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # The SQLite store works in worker threads, and a clock that jumps while
    # every task is blocked would jump while the actor waits for its thread:
    # time moves here only when the test moves it.
    clock = autojump_clock
    clock.autojump_threshold = math.inf

    async def advance(seconds: float) -> None:
        clock.jump(seconds)
        await trio.testing.wait_all_tasks_blocked()  # a sweep now due holds the write lane
        # A task waiting on its thread counts as blocked, so a sweep may still
        # be on disk: a write queued behind it returns only once it is done.
        await mem.ask(Pin("keep"))

    eviction = EvictionConfig(policy=Ttl(ttl=60.0), check_interval=1000, sweep_interval=30.0)
    config = MemoryStoreConfig(path=str(tmp_path / "memory.db"), eviction=eviction)
    async with ActorSystem(strict=True) as system:
        spec = memory_store_spec("memory", config=config, clock=trio_wall_clock)
        mem = await system.root.start_child(spec)
        await mem.ask(Put(id="old", content="x"))
        await mem.ask(Put(id="keep", content="x", pinned=True))
        await advance(59)
        assert await mem.ask(Get("old")) is not None
        await advance(2)
        assert await mem.ask(Get("old")) is None  # invisible at once
        await advance(30)  # the next scheduled sweep is due: it holds the write lane
        assert await mem.ask(Evict()) == []  # nothing left to sweep
        assert await mem.ask(Count()) == 1


async def test_the_retrieve_tool(system: ActorSystem, config: MemoryStoreConfig) -> None:
    mem = await system.root.start_child(memory_store_spec("memory", config=config))
    await mem.ask(
        PutPage(KnowledgePage(id="p1", title="Rust ownership", content="the borrow checker"))
    )
    assert RETRIEVE_TOOL["name"] == "retrieve"
    assert RETRIEVE_TOOL["parameters"]["required"] == ["query"]
    text = await run_retrieve_tool(mem, {"query": "borrow checker", "max_results": 3})
    result = json.loads(text)
    assert result["query"] == "borrow checker"
    assert [r["id"] for r in result["results"]] == ["p1"]
    assert 0.0 < result["results"][0]["score"] <= 1.0
    for bad in ({}, {"query": ""}, {"query": "x", "max_results": 0}, {"query": "x", "y": 1}):
        with pytest.raises(InvalidInput):
            await run_retrieve_tool(mem, bad)
