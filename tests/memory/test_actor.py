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
    SerializationError,
    StoredMessage,
    Ttl,
    memory_store_spec,
    run_retrieve_tool,
)
from agcore_actors.memory.messages import (
    Append,
    ClearHistory,
    Count,
    Delete,
    Evict,
    ExportTranscript,
    FactClear,
    FactGet,
    FactRemove,
    FactSet,
    FactSnapshot,
    Get,
    GetPage,
    History,
    ImportTranscript,
    List,
    PageIndex,
    Pin,
    Put,
    PutPage,
    ReplaceHistory,
    Retrieve,
    SearchPages,
    UpdatePage,
)

WALL_START = 1_717_000_000.0


def trio_wall_clock() -> float:
    """Wall time that follows trio's (virtual) clock."""
    return WALL_START + trio.current_time()


@pytest.fixture(params=["memory", "sqlite"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryStoreConfig:
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
    with pytest.raises(SerializationError, match="line 1"):
        await mem.ask(ImportTranscript(session_id="s1", jsonl="{broken"))
    with pytest.raises(InvalidInput):
        await mem.ask(Retrieve(query="x", max_results=-1))
    assert await mem.ask(Count()) == 1
    info = next(i for i in system.snapshot() if i.name == "memory")
    assert info.restarts == 0


async def test_conversation_protocol_and_transcript_jsonl(
    system: ActorSystem, config: MemoryStoreConfig
) -> None:
    mem = await system.root.start_child(memory_store_spec("memory", config=config))
    msgs = [StoredMessage(role="user", content="hi"), StoredMessage(role="assistant", content="yo")]
    assert await mem.ask(Append("s1", msgs)) == [0, 1]
    assert (await mem.ask(History("s1"))).messages == msgs
    jsonl = await mem.ask(ExportTranscript("s1"))
    assert [json.loads(line)["role"] for line in jsonl.splitlines()] == ["user", "assistant"]
    assert await mem.ask(ImportTranscript(session_id="s2", jsonl=jsonl)) == 2
    assert (await mem.ask(History("s2"))).messages == msgs
    await mem.ask(ReplaceHistory("s1", msgs[1:]))
    assert (await mem.ask(History("s1"))).messages == msgs[1:]
    assert await mem.ask(ClearHistory("s1")) == 1
    assert (await mem.ask(History("s1"))).messages == []
    # A bad line imports nothing.
    with pytest.raises(SerializationError):
        await mem.ask(ImportTranscript(session_id="s2", jsonl=jsonl + "{oops\n", replace=True))
    assert (await mem.ask(History("s2"))).messages == msgs


async def test_knowledge_session_and_retrieval_protocol(
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

    await mem.ask(FactSet(session_id="s1", key="design", value="PostgreSQL"))
    assert await mem.ask(FactGet("s1", "design")) == "PostgreSQL"
    snapshot = await mem.ask(FactSnapshot("s1"))
    assert snapshot == "<session-context>\ndesign: PostgreSQL\n</session-context>"
    assert await mem.ask(FactRemove("s1", "design")) is True
    assert await mem.ask(FactClear("s1")) == 0


async def test_sqlite_data_survives_restarting_the_actor(tmp_path: Path) -> None:
    config = MemoryStoreConfig(path=str(tmp_path / "memory.db"))
    msgs = [StoredMessage(role="user", content="remember me")]
    async with ActorSystem(strict=True) as system:
        mem = await system.root.start_child(memory_store_spec("memory", config=config))
        await mem.ask(Append("s1", msgs))
        await mem.ask(FactSet(session_id="s1", key="k", value="v"))
    async with ActorSystem(strict=True) as system:
        mem = await system.root.start_child(memory_store_spec("memory", config=config))
        assert (await mem.ask(History("s1"))).messages == msgs
        assert await mem.ask(FactGet("s1", "k")) == "v"


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


async def test_a_transcript_imported_twice_or_exported_unknown_is_a_clear_error(
    system: ActorSystem, config: MemoryStoreConfig
) -> None:
    mem = await system.root.start_child(memory_store_spec("memory", config=config))
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    msgs = [
        StoredMessage(role="assistant", content="", tool_calls=[call]),
        StoredMessage(role="tool", content="ok", tool_call_id="call_1"),
    ]
    assert await mem.ask(Append("s1", msgs)) == [0, 1]
    jsonl = await mem.ask(ExportTranscript("s1"))
    with pytest.raises(SerializationError, match="call_1"):
        await mem.ask(ImportTranscript(session_id="s1", jsonl=jsonl))
    assert (await mem.ask(History("s1"))).messages == msgs
    with pytest.raises(SerializationError, match="line 1"):
        await mem.ask(ImportTranscript(session_id="s2", jsonl='{"role":"wizard"}'))
    with pytest.raises(NotFound, match="s2"):
        await mem.ask(ExportTranscript("s2"))
