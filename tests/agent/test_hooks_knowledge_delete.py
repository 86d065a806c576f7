"""Turn hooks (a start hook refuses a turn with nothing stored; an end hook sees every
committed turn), the ``retrieve`` tool over a real MemoryStore, and ``SessionHost.delete``."""

from __future__ import annotations

import json
from typing import Any

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    PromptContext,
    SessionHost,
    TurnHooks,
    session_spec,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    ProviderRegistry,
    RetryConfig,
    ToolCall,
    provider_actor,
)
from agcore_actors.memory import KnowledgePage, memory_store_spec
from agcore_actors.memory import messages as mm
from agcore_actors.tools import ToolExecutor, ToolRegistry
from tests.agent.fakes import scripted
from tests.agent.stores import start_store, stored


async def llm_for(system: ActorSystem, script: list[list[Any]]) -> Any:
    registry = ProviderRegistry().register(scripted(script))
    return await system.spawn(
        provider_actor(registry, retry=RetryConfig(max_retries=0)), name="llm"
    )


async def test_a_start_hook_refuses_a_turn_and_an_end_hook_sees_committed_ones(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ended: list[am.TurnResult] = []

    async def start(context: PromptContext, text: str) -> str | None:
        return "no swearing" if "darn" in text else None

    async def end(result: am.TurnResult) -> None:
        ended.append(result)

    llm = await llm_for(system, [[AssistantMessage("hello")]])
    store_ref, store = await start_store(system)
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(store)
        .agent(Agent(name="a"))
        .hooks(TurnHooks(on_turn_start=start, on_turn_end=end))
        .build()
    )
    session = await system.root.start_child(session_spec("s", bundle))
    refused = await session.ask(am.RunTurn(text="darn it"))
    assert refused.status == "failed" and refused.error_kind == "hook_blocked"
    assert await stored(store_ref, "s") is None  # nothing stored, nothing sent
    ok = await session.ask(am.RunTurn(text="hi"))
    assert ok.status == "completed" and [r.turn for r in ended] == [ok.turn]


async def test_the_retrieve_tool_searches_the_knowledge_pages(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    memory = await system.root.start_child(memory_store_spec("memory"))
    page = KnowledgePage(id="p1", title="Trio", content="Trio is a structured concurrency library.")
    await memory.ask(mm.PutPage(page))
    search = ToolCall(
        "r1", FunctionCall("retrieve", json.dumps({"query": "structured concurrency"}))
    )
    llm = await llm_for(
        system, [[AssistantMessage(None, tool_calls=[search])], [AssistantMessage("Trio.")]]
    )
    tools = ToolRegistry()
    executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
    _, store = await start_store(system)
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(store)
        .tools(executor, tools)
        .knowledge(memory)
        .agent(Agent(name="a"))
        .build()
    )
    session = await system.root.start_child(session_spec("s", bundle))
    events: list[am.TurnEvent] = []
    async with session.stream(am.SubmitTurn(text="what is trio?")) as stream:
        async for event in stream:
            events.append(event)
    finished = next(e for e in events if isinstance(e, am.ToolCallFinished))
    assert finished.status == "ok" and '"p1"' in finished.content, finished


async def test_delete_removes_a_live_session_and_its_store_rows(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    llm = await llm_for(system, [[AssistantMessage("hello")]])
    store_ref, store = await start_store(system)
    bundle = AgentBuilder().provider(llm).store(store).agent(Agent(name="a")).build()
    async with SessionHost(system, bundle) as host:
        await host.run("gone", "hi")
        assert host.is_live("gone") and await stored(store_ref, "gone") is not None
        assert await host.delete("gone")
        assert not host.is_live("gone") and await stored(store_ref, "gone") is None
        assert not await host.delete("gone")
