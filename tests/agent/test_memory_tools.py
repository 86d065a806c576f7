"""The ``remember`` and ``recall`` tools through a SessionHost: what a user's session
keeps, that user's later sessions recall, and no other user's do; the memory protocol
itself in a strict system (every request and reply crosses as msgspec)."""

from __future__ import annotations

import json

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, memory_tools
from agcore_actors.llm import (
    ChatRequest,
    ProviderRegistry,
    RetryConfig,
    ToolMessage,
    UserMessage,
    provider_actor,
)
from agcore_actors.memory import memory_store_spec
from agcore_actors.memory import messages as mm
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolContext, ToolExecutor, ToolRegistry
from tests.agent.stores import start_store


def model(request: ChatRequest, attempt: int) -> ScriptedReply:
    """Keeps what follows "remember:", recalls for a question, repeats a tool's result."""
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return ScriptedReply(text=f"tool said: {last.content}")
    assert isinstance(last, UserMessage) and isinstance(last.content, str)
    if last.content.startswith("remember:"):
        fact = last.content.removeprefix("remember:").strip()
        return ScriptedReply(tool_calls=[ScriptedToolCall("remember", {"text": fact})])
    return ScriptedReply(tool_calls=[ScriptedToolCall("recall", {"query": last.content})])


def user_of(ctx: ToolContext) -> str:
    return ctx.session_id.partition("/")[0]


async def test_a_users_memories_reach_only_that_users_later_sessions(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    memory = await system.root.start_child(memory_store_spec("memory"))
    llm = await system.spawn(
        provider_actor(
            ProviderRegistry().register(ScriptedProvider(model)), retry=RetryConfig(max_retries=0)
        ),
        name="llm",
    )
    tools = ToolRegistry()
    executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
    _, store = await start_store(system)
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(store)
        .tools(executor, tools)
        .memories(memory, scope=user_of)
        .agent(Agent(name="a"))
        .build()
    )
    async with SessionHost(system, bundle) as host:
        kept = await host.run("ana/1", "remember: Ana's cat is named Miso")
        assert kept.status == "completed" and '"remembered"' in kept.text, kept
        later = await host.run("ana/2", "what is my cat named")
        other = await host.run("bob/1", "what is my cat named")
    found = json.loads(later.text.removeprefix("tool said: "))
    assert [r["text"] for r in found["results"]] == ["Ana's cat is named Miso"]
    assert json.loads(other.text.removeprefix("tool said: "))["results"] == []
    listed = await memory.ask(mm.ListMemories("ana"))
    assert [i.content for i in listed.items] == ["Ana's cat is named Miso"]


async def test_a_scope_that_fails_is_a_tool_error_and_writes_nothing(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    memory = await system.root.start_child(memory_store_spec("memory"))
    remember, _ = memory_tools(memory, scope=lambda ctx: "")
    with pytest.raises(ValueError, match="memory scope"):
        await remember.call({"text": "x"}, ToolContext(session_id="s"))
    assert await memory.ask(mm.Count()) == 0


async def test_the_memory_protocol_in_a_strict_system(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with ActorSystem(strict=True) as system:
        memory = await system.root.start_child(memory_store_spec("memory"))
        kept = await memory.ask(mm.Remember(scope="u:1", text="likes rye bread", tags=["food"]))
        found = await memory.ask(mm.Recall(scope="u:1", query="bread"))
        assert [(m.id, m.text, m.tags) for m in found.memories] == [
            (kept.id, "likes rye bread", ["food"])
        ]
        assert (await memory.ask(mm.Recall(scope="u", query="bread"))).memories == []
        assert not await memory.ask(mm.Forget("u", kept.id))
        assert await memory.ask(mm.Forget("u:1", kept.id))
        assert (await memory.ask(mm.ListMemories("u:1"))).items == []
