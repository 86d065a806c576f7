"""Property: whatever the model answers, the tools do and the caller does, a committed
transcript is valid, usage adds up, and nothing is left running.

Each example runs a fresh actor system on virtual time: a scripted model (text, tool
calls with good, bad or unknown names and malformed arguments, retryable and fatal
errors), tools that succeed, fail, time out, hang or need approval, and a caller that
cancels at once or after the step, leaves the stream, or leaves approvals unanswered.
Then a second turn must work on the same session.
"""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors import ActorSystem
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
    AuthenticationError,
    FunctionCall,
    ProviderRegistry,
    RateLimitError,
    RetryConfig,
    ToolCall,
    Usage,
    provider_actor,
)
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool
from tests.agent.fakes import scripted
from tests.agent.stores import start_store, stored, transcript


@function_tool
async def ok(x: int) -> int:
    """Echo."""
    return x


@function_tool
async def broken(x: int) -> int:
    """Always fails."""
    raise ValueError("broken tool")


@function_tool(timeout=2.0)
async def slow(x: int) -> int:
    """Takes longer than its timeout."""
    await trio.sleep(10)
    return x


@function_tool(timeout=1000.0)
async def hang(x: int) -> int:
    """Never returns by itself."""
    await trio.sleep_forever()
    return x


@function_tool(requires_approval=True)
async def guarded(x: int) -> int:
    """Needs a human's yes."""
    return x


TOOLS = ["ok", "broken", "slow", "hang", "guarded", "missing"]
UNIT = Usage(input_tokens=10, output_tokens=5)

call_specs = st.tuples(st.sampled_from(TOOLS), st.sampled_from(['{"x": 1}', "{bad json", "{}"]))
replies: st.SearchStrategy[tuple[str, list[tuple[str, str]]]] = st.one_of(
    st.just(("text", [])),
    st.tuples(st.just("calls"), st.lists(call_specs, min_size=1, max_size=3)),
    st.just(("retryable", [])),
    st.just(("fatal", [])),
)
actions = st.sampled_from(
    ["none", "immediate", "after_turn", "leave", "approve", "deny", "silence"]
)


def build_script(spec: list[tuple[str, list[tuple[str, str]]]]) -> list[list[Any]]:
    script: list[list[Any]] = []
    n = 0
    for kind, calls in spec:
        if kind == "text":
            script.append([AssistantMessage("answer")])
        elif kind == "calls":
            tool_calls = []
            for name, arguments in calls:
                n += 1
                tool_calls.append(ToolCall(f"c{n}", FunctionCall(name, arguments)))
            script.append([AssistantMessage(None, tool_calls=tool_calls)])
        elif kind == "retryable":
            script.append([RateLimitError("scripted", 1.0)])
        else:
            script.append([AuthenticationError("scripted", 401, "no")])
    script.append([AssistantMessage("final")])
    return script


async def scenario(spec: list[Any], action: str, at: float) -> None:
    async with ActorSystem(strict=True, seed=0) as system:
        script = build_script(spec)
        provider = scripted(script)
        llm = await system.spawn(
            provider_actor(
                ProviderRegistry().register(provider),
                retry=RetryConfig(max_retries=1, base_delay=0.5, max_delay=1.0),
            ),
            name="llm",
        )
        registry = ToolRegistry([ok, broken, slow, hang, guarded])
        executor = await system.spawn(
            lambda: ToolExecutor(registry, approver=session_approver(system)), name="tools"
        )
        store_ref, store = await start_store(system)
        config = AgentConfig(max_tool_turns=4, approval_timeout=30.0, turn_timeout=500.0)
        bundle = (
            AgentBuilder()
            .provider(llm)
            .store(store)
            .tools(executor, registry)
            .agent(Agent(name="a"))
            .config(config)
            .build()
        )
        session = await system.root.start_child(session_spec("s", bundle))
        reported = Usage()
        events: list[am.TurnEvent] = []

        async def read() -> None:
            nonlocal reported
            async with session.stream(am.SubmitTurn(text="go")) as stream:
                async for event in stream:
                    events.append(event)
                    if isinstance(event, am.UsageReported):
                        reported = reported + event.usage
                    if action == "leave" and len(events) >= int(at):
                        return
                    if isinstance(event, am.ApprovalRequested) and action in ("approve", "deny"):
                        answer = am.Approve(call_id=event.call_id, allow=action == "approve")
                        await session.ask(answer)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            if action in ("immediate", "after_turn"):
                await trio.sleep(at)
                await session.ask(am.CancelTurn(action))  # type: ignore[arg-type]

        saved = await stored(store_ref, "s")
        assert saved is not None and saved.record.open_turn is None, "the turn was not committed"
        assert transcript_errors(await transcript(store_ref, "s")) == []
        if action != "leave":
            final = events[-1]
            assert isinstance(final, am.TurnCompleted | am.TurnCancelled | am.TurnFailed)
            assert saved.record.usage == reported == final.result.usage
        for info in system.snapshot():
            if info.name in ("llm", "tools"):
                assert info.in_flight == 0, f"{info.name} still has work in flight"
        # The session goes on: a second turn completes against the same history.
        script[:] = [[AssistantMessage("again")]]
        again = await session.ask(am.RunTurn(text="and now?"))
        assert again.status == "completed", again
        assert transcript_errors(await transcript(store_ref, "s")) == []


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=st.lists(replies, max_size=5),
    action=actions,
    at=st.floats(min_value=0.0, max_value=12.0),
)
def test_any_turn_commits_a_valid_transcript_and_leaves_nothing_running(
    spec: list[Any], action: str, at: float
) -> None:
    trio.run(scenario, spec, action, at, clock=trio.testing.MockClock(autojump_threshold=0))
