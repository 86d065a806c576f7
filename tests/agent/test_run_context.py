"""The run context: tools that declare one get the turn's (the application's deps for
the session, the session and turn ids, the turn's cancel scope) through a strict
ActorSystem, where every message is round-tripped through msgspec — so the deps never
travel in a message —, and the model never sees the parameter."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from agcore_actors.agent import Agent, ToolCallInfo, ToolHooks
from agcore_actors.llm import ChatRequest, UserMessage
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import (
    ExecutionFailed,
    RunContext,
    ToolContext,
    function_tool,
)
from tests.agent.capability_rig import Counters, cap_host, events_of, final, make_tools


class Database:
    """Something that cannot be serialised (a handle of the application's)."""

    def __init__(self, user: str) -> None:
        self.user = user
        self.lock = trio.Lock()

    def __getitem__(self, key: str) -> str:
        return self.user


def whoami_then_done() -> ScriptedProvider:
    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        if isinstance(request.messages[-1], UserMessage):
            return ScriptedReply(tool_calls=[ScriptedToolCall("whoami", {}, id="w1")])
        return ScriptedReply(text="done")

    return ScriptedProvider(play)


async def test_a_tool_gets_the_sessions_deps_through_a_strict_system(
    autojump_clock: trio.testing.MockClock,
) -> None:
    made: list[str] = []

    def deps(session: str) -> Database:
        made.append(session)
        return Database(f"user-of-{session}")

    provider = whoami_then_done()
    async with cap_host([provider], deps=deps, strict=True) as cap:
        events = await events_of(cap.host, "alice", "who am I?")
        assert final(events).status == "completed"
        await cap.host.run("bob", "who am I?")
    assert made == ["alice", "bob"]
    seen = cap.counters.deps_seen
    assert [d.user for d in seen] == ["user-of-alice", "user-of-bob"]
    # The model saw the tool without the parameter, and the answer with the user.
    offered = provider.requests[0].tools or []
    whoami = next(t for t in offered if t.function.name == "whoami")
    assert "run" not in str(whoami.function.parameters)
    assert "user user-of-alice in alice/" in str(provider.requests[1].messages[-1])


async def test_guardrails_and_hooks_see_the_same_context(
    autojump_clock: trio.testing.MockClock,
) -> None:
    contexts: list[RunContext[Any]] = []

    async def before(call: ToolCallInfo) -> None:
        contexts.append(call.context)
        return None

    async def guard(context: RunContext[Any], text: str) -> str | None:
        contexts.append(context)
        assert context.cancel_scope is not None
        return None

    agent = Agent(name="a", input_guardrails=[guard], tool_hooks=ToolHooks(before=before))
    async with cap_host([whoami_then_done()], agents=[agent], deps=Database) as cap:
        await cap.host.run("s", "go")
    assert len(contexts) == 2 and contexts[0] is contexts[1]
    assert contexts[0].deps.user == "s" and contexts[0].session == "s"


def test_the_run_context_parameter_is_not_in_the_schema() -> None:
    @function_tool
    async def tool(n: int, run: RunContext[Database], ctx: ToolContext) -> int:
        """A tool with both contexts."""
        return n

    assert set(tool.parameters["properties"]) == {"n"}
    assert tool.run_context_param == "run" and tool.context_param == "ctx"


async def test_a_tool_that_needs_a_run_context_outside_a_turn_fails_clearly() -> None:
    registry = make_tools(Counters())
    whoami = registry.get("whoami")
    assert whoami is not None
    try:
        await whoami.call({}, ToolContext(session_id="nobody", trace_id="t"))
    except ExecutionFailed as exc:
        assert "run context" in str(exc)
    else:
        raise AssertionError("a tool without its run context ran")


async def test_an_agent_called_as_a_tool_has_the_parents_deps_and_its_cost_counts(
    autojump_clock: trio.testing.MockClock,
) -> None:
    from agcore_actors.agent import AgentConfig, Budget, ModelSettings
    from agcore_actors.llm import Pricing, ToolMessage, Usage

    unit = Usage(input_tokens=1, output_tokens=1)

    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        system = str(request.messages[0].content) if request.messages else ""
        last = request.messages[-1]
        if "I am the helper" in system:
            if isinstance(last, ToolMessage):
                return ScriptedReply(text=f"helper found: {last.content}", usage=unit)
            return ScriptedReply(tool_calls=[ScriptedToolCall("whoami", {}, id="w")], usage=unit)
        if isinstance(last, ToolMessage):
            return ScriptedReply(text=f"parent: {last.content}", usage=unit)
        return ScriptedReply(
            tool_calls=[ScriptedToolCall("helper", {"task": "who?"}, id="h")], usage=unit
        )

    priced = ModelSettings(model="m")
    agents = [
        Agent(name="a", subagents={"helper"}, model=priced),
        Agent(name="helper", instructions="I am the helper", model=priced),
    ]
    config = AgentConfig(budget=Budget(prices={"m": Pricing(input=1e6, output=1e6)}))
    async with cap_host(
        [ScriptedProvider(play, model="m")], agents=agents, config=config, deps=Database
    ) as cap:
        result = await cap.host.run("s", "go")
    assert result.status == "completed"
    assert result.text == "parent: helper found: user s in s/h/" + result.text.split("s/h/")[1]
    assert [d.user for d in cap.counters.deps_seen] == ["s"]
    # Two calls of the parent and two of the helper, two tokens each.
    assert result.cost == 8.0 and result.usage.total_tokens == 8
