"""Turns with every capability at once, drawn by hypothesis: a fallback chain whose
models fail with drawn errors, replies with drawn tool calls, tool hooks with drawn
verdicts, budgets with drawn limits, and a cancellation at a drawn time. Whatever happens,
checked against a model that shares no code with the turn: every tool call id is
answered exactly once, the transcript is valid, each recorded call names a model of the
chain, the turn's usage is the sum of its recorded calls, a call never ran after a
``before`` hook denied it, and a limit failure names a limit that its figures exceed."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors.agent import (
    Agent,
    AgentConfig,
    Budget,
    Deny,
    ModelSettings,
    Rewrite,
    ToolCallInfo,
    ToolHooks,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    AuthenticationError,
    ChatRequest,
    LlmError,
    RateLimitError,
    RequestError,
    ToolMessage,
    Usage,
)
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from tests.agent.capability_rig import answered_once, cap_host

CHAIN = ("one", "two", "three")
ERRORS: dict[str, Any] = {
    "429": lambda name: RateLimitError(name, None),
    "503": lambda name: RequestError(name, 503, "down"),
    "401": lambda name: AuthenticationError(name, 401, "bad key"),
}

reply = st.one_of(
    st.just("text"),
    st.lists(st.integers(0, 20), min_size=1, max_size=6).map(tuple),  # tool calls: their n
)
attempt = st.one_of(st.sampled_from(sorted(ERRORS)), reply)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    return {
        # Per model of the chain: its attempts in order (the last repeats).
        "scripts": [draw(st.lists(attempt, min_size=1, max_size=4)) for _ in CHAIN],
        "deny": draw(st.frozensets(st.integers(0, 20), max_size=4)),
        "rewrite": draw(st.frozensets(st.integers(0, 20), max_size=3)),
        "turn_tokens": draw(st.none() | st.integers(5, 80)),
        "tool_calls": draw(st.none() | st.integers(1, 12)),
        "concurrent": draw(st.none() | st.integers(1, 3)),
        "cancel_at": draw(st.none() | st.floats(0.0, 6.0)),
        "streamed": draw(st.booleans()),
    }


TOKENS = Usage(input_tokens=4, output_tokens=3)


def provider(name: str, script: list[Any]) -> ScriptedProvider:
    def play(request: ChatRequest, attempt: int) -> ScriptedReply | LlmError:
        item = script[min(attempt, len(script)) - 1]
        if isinstance(item, str) and item in ERRORS:
            error: LlmError = ERRORS[item](name)
            return error
        if item == "text":
            return ScriptedReply(text=["fine"], usage=TOKENS, gap=0.1)
        calls = [
            ScriptedToolCall("record", {"n": n}, id=f"{name}-{attempt}-{i}")
            for i, n in enumerate(item)
        ]
        return ScriptedReply(tool_calls=calls, usage=TOKENS, latency=0.1)

    return ScriptedProvider(play, name=name, model=f"{name}-m")


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(scenario=scenarios())
def test_any_turn_with_every_capability_keeps_the_invariants(scenario: dict[str, Any]) -> None:
    trio.run(check, scenario, clock=trio.testing.MockClock(autojump_threshold=0))


async def check(scenario: dict[str, Any]) -> None:
    denied_runs: list[int] = []

    async def before(call: ToolCallInfo) -> Deny | Rewrite | None:
        await trio.sleep(0.05)
        n = int(call.arguments.split(":")[1].strip(" }"))
        if n in scenario["deny"]:
            denied_runs.append(n)
            return Deny("no")
        if n in scenario["rewrite"]:
            return Rewrite({"n": n + 100})
        return None

    model = ModelSettings(
        provider=CHAIN[0],
        model="m0",
        fallback=tuple(
            ModelSettings(provider=name, model=f"m{i}") for i, name in enumerate(CHAIN) if i
        ),
        fallback_on={"rate_limit", "server_error"},
    )
    agent = Agent(name="a", model=model, tool_hooks=ToolHooks(before=before))
    budget = Budget(
        turn_tokens=scenario["turn_tokens"],
        tool_calls_per_turn=scenario["tool_calls"],
        concurrent_tool_calls=scenario["concurrent"],
    )
    config = AgentConfig(budget=budget, max_tool_turns=3, max_repeated_calls=50)
    providers = [
        provider(name, list(s)) for name, s in zip(CHAIN, scenario["scripts"], strict=True)
    ]
    events: list[am.TurnEvent] = []
    results: list[am.TurnResult] = []
    async with cap_host(providers, agents=[agent], config=config, work=0.2) as cap:

        async def run() -> None:
            if scenario["streamed"]:
                async with cap.host.submit("s", "go") as stream:
                    async for event in stream:
                        events.append(event)
                last = events[-1]
                assert isinstance(last, am.TurnCompleted | am.TurnFailed | am.TurnCancelled)
                results.append(last.result)
            else:
                results.append(await cap.host.run("s", "go"))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            if scenario["cancel_at"] is not None:
                await trio.sleep(scenario["cancel_at"])
                await cap.host.cancel("s")
        log = await cap.transcript("s")
        assert answered_once(log), log
        assert await cap.valid("s")
        (result,) = results
        # Who answered: models of the chain, each asked at most once per model call.
        assert {c.provider for c in result.calls} <= set(CHAIN)
        total = Usage()
        for call in result.calls:
            total = total + call.usage
        assert total == result.usage
        # A denied call never ran (a rewritten one records n + 100, never a drawn n).
        for n in denied_runs:
            assert n not in cap.counters.ran
        # A limit failure names a limit its own figures exceed.
        if result.error_kind == "limit_exceeded" and "turn_tokens" in result.error:
            assert result.usage.total_tokens > scenario["turn_tokens"]
        if result.error_kind == "limit_exceeded" and "tool_calls_per_turn" in result.error:
            assert scenario["tool_calls"] is not None
        if scenario["concurrent"] is not None:
            assert cap.counters.most <= scenario["concurrent"]
        # Results in the transcript are the tools' own or say why there is none.
        for message in log:
            if isinstance(message, ToolMessage):
                assert str(message.content)
