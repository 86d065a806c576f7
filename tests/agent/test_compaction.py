"""Compaction inside a turn: over budget before a model call, and once more after the
provider refuses the prompt as too long — through the real Compactor actor."""

from __future__ import annotations

from typing import Any

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, session_spec, transcript_errors
from agcore_actors.agent import messages as am
from agcore_actors.context import CompactConfig, compactor_spec
from agcore_actors.llm import (
    AssistantMessage,
    ContextLengthError,
    FunctionCall,
    ProviderRegistry,
    RetryConfig,
    ToolCall,
    provider_actor,
)
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool
from tests.agent.fakes import scripted
from tests.agent.stores import start_store, transcript

BIG = "x" * 4000


@function_tool
async def fetch() -> str:
    """Fetch a large page."""
    return BIG


async def test_a_refused_prompt_is_compacted_once_and_the_turn_goes_on(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    call = ToolCall("f1", FunctionCall("fetch", "{}"))
    script: list[list[Any]] = [
        [AssistantMessage(None, tool_calls=[call])],
        [ContextLengthError("scripted", actual=9000, limit=2000)],  # the big result is refused
        [AssistantMessage("short answer")],
    ]
    provider = scripted(script)
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    tools = ToolRegistry([fetch])
    executor = await system.spawn(lambda: ToolExecutor(tools), name="tools")
    # A window the conversation fits by the estimate: only the refusal triggers compaction.
    config = CompactConfig(context_window=200_000, keep_recent=0)
    compactor = await system.root.start_child(compactor_spec("compactor", config=config))
    store_ref, store = await start_store(system)
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(store)
        .tools(executor, tools)
        .compactor(compactor)
        .agent(Agent(name="a"))
        .build()
    )
    session = await system.root.start_child(session_spec("s", bundle))
    events: list[am.TurnEvent] = []
    async with session.stream(am.SubmitTurn(text="read it")) as stream:
        async for event in stream:
            events.append(event)
    assert isinstance(events[-1], am.TurnCompleted), events[-1]
    compacted = [e for e in events if isinstance(e, am.Compacted)]
    assert len(compacted) == 1 and compacted[0].reactive
    assert compacted[0].tokens_after < compacted[0].tokens_before
    third = provider.requests[2].messages
    assert all(BIG not in str(getattr(m, "content", "")) for m in third)
    # The stored log keeps the raw tool result; only what was sent was compacted.
    log = await transcript(store_ref, "s")
    assert transcript_errors(log) == [] and log[2].content == BIG


async def test_a_second_refusal_fails_the_turn_with_the_typed_error(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    refusal = [[ContextLengthError("scripted", actual=9000, limit=2000)]]
    llm = await system.spawn(
        provider_actor(
            ProviderRegistry().register(scripted(refusal)), retry=RetryConfig(max_retries=0)
        ),
        name="llm",
    )
    compactor = await system.root.start_child(compactor_spec("compactor"))
    _, store = await start_store(system)
    bundle = AgentBuilder().provider(llm).store(store).compactor(compactor)
    session = await system.root.start_child(
        session_spec("s", bundle.agent(Agent(name="a")).build())
    )
    result = await session.ask(am.RunTurn(text="hi"))
    assert result.status == "failed" and result.error_kind == "context_length"
