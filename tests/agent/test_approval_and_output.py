"""Human approval mid-turn (approve, deny, no answer) and typed output (valid, re-asked,
given up), through a real ToolExecutor whose approver asks the session."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    session_approver,
    session_spec,
    transcript_errors,
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
from agcore_actors.testing import ScriptedProvider
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool
from tests.agent.fakes import scripted
from tests.agent.stores import start_store, transcript

DELETED: list[str] = []


@function_tool(requires_approval=True)
async def delete(path: str) -> str:
    """Delete a file."""
    DELETED.append(path)
    return f"deleted {path}"


class Weather(msgspec.Struct):
    city: str
    celsius: float


async def setup(
    system: ActorSystem, script: list[list[Any]], agent: Agent, **config: float
) -> tuple[ActorRef[Any], ScriptedProvider, ActorRef[Any]]:
    provider = scripted(script)
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    registry = ToolRegistry([delete])
    executor = await system.spawn(
        lambda: ToolExecutor(registry, approver=session_approver(system)), name="tools"
    )
    store_ref, store = await start_store(system)
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(store)
        .tools(executor, registry)
        .agent(agent)
        .config(AgentConfig(**config))  # type: ignore[arg-type]
        .build()
    )
    session = await system.root.start_child(session_spec("s1", bundle))
    return store_ref, provider, session


DELETE_CALL = [
    AssistantMessage(None, tool_calls=[ToolCall("d1", FunctionCall("delete", '{"path": "/x"}'))])
]


@pytest.mark.parametrize("answer", ["allow", "deny", "silence"])
async def test_a_tool_needing_approval_waits_for_the_caller(
    system: ActorSystem, autojump_clock: trio.testing.MockClock, answer: str
) -> None:
    DELETED.clear()
    store, _, session = await setup(
        system, [DELETE_CALL, [AssistantMessage("ok")]], Agent(name="a"), approval_timeout=60.0
    )
    events: list[am.TurnEvent] = []
    async with session.stream(am.SubmitTurn(text="delete /x")) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, am.ApprovalRequested) and answer != "silence":
                allow = answer == "allow"
                assert await session.ask(
                    am.Approve(call_id=event.call_id, allow=allow, reason="no")
                )
    finished = next(e for e in events if isinstance(e, am.ToolCallFinished))
    assert isinstance(events[-1], am.TurnCompleted)
    if answer == "allow":
        assert finished.status == "ok" and DELETED == ["/x"]
    else:
        assert finished.status == "denied" and DELETED == []
    assert transcript_errors(await transcript(store, "s1")) == []


async def test_typed_output_is_validated_and_re_asked(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    agent = Agent(name="w", output_type=Weather)
    script = [[AssistantMessage("sunny")], [AssistantMessage('{"city": "Paris", "celsius": 21.5}')]]
    _, provider, session = await setup(system, script, agent)
    result = await session.ask(am.RunTurn(text="weather?"))
    assert result.status == "completed"
    assert result.output == {"city": "Paris", "celsius": 21.5}
    schema = provider.requests[0].response_format
    assert schema is not None and schema.json_schema.name == "Weather"  # type: ignore[union-attr]
    assert "not valid" in str(provider.requests[1].messages[-1].content)


async def test_typed_output_gives_up_with_a_typed_error(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    agent = Agent(name="w", output_type=Weather)
    _, _, session = await setup(system, [[AssistantMessage("no")]], agent, output_retries=1)
    result = await session.ask(am.RunTurn(text="weather?"))
    assert result.status == "failed" and result.error_kind == "output_validation"
