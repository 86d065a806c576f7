"""scripted_host, count_user_turns, run_virtual and the visits strategy: a bot on a
scripted model in one call, in virtual time."""

from __future__ import annotations

import pytest
import trio
from hypothesis import given, settings

from agcore_actors.agent import HostConfig, HostSnapshot, SessionHost
from agcore_actors.agent import messages as am
from agcore_actors.llm import ProviderConfig, RateLimitError, RetryConfig
from agcore_actors.testing import (
    ScriptedProvider,
    ScriptedReply,
    ScriptedToolCall,
    ScriptItem,
    Visit,
    advance,
    count_user_turns,
    elapsed,
    run_virtual,
    scripted_host,
)
from agcore_actors.testing.strategies import visits
from agcore_actors.tools import function_tool


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@function_tool(requires_approval=True)
async def launch(target: str) -> str:
    """Launch something (asks first)."""
    return f"launched {target}"


def test_run_virtual_returns_the_result_in_virtual_time() -> None:
    async def an_hour() -> float:
        with elapsed() as took:
            await trio.sleep(3600)
        return took.seconds

    assert run_virtual(an_hour) == 3600


def test_a_turn_runs_through_the_real_provider_and_tools() -> None:
    model = ScriptedProvider(
        [ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})]), "five"]
    )

    async def scenario() -> am.TurnResult:
        async with scripted_host(model, tools=[add]) as bot:
            return await bot.run("s1", "2 + 3?")

    result = run_virtual(scenario)
    assert (result.status, result.text, result.tool_calls) == ("completed", "five", 1)
    assert model.attempts == 2
    assert "5" in str(model.requests[1].messages[-1])  # the tool's result went back


def test_the_provider_config_is_the_one_the_retry_loop_uses() -> None:
    no_retry = ProviderConfig(retry=RetryConfig(max_retries=0))

    script: list[ScriptItem] = [RateLimitError("scripted", None), "ok"]

    async def scenario() -> am.TurnResult:
        async with scripted_host(script, provider=no_retry) as bot:
            return await bot.run("s1", "hi")

    result = run_virtual(scenario)
    assert (result.status, result.error_kind) == ("failed", "rate_limit")


def test_a_tool_that_requires_approval_asks_the_session() -> None:
    call = ScriptedToolCall("launch", {"target": "x"})
    script: list[ScriptItem] = [ScriptedReply(tool_calls=[call]), "done"]

    async def scenario() -> list[str]:
        seen: list[str] = []
        async with scripted_host(script, tools=[launch]) as bot, bot.submit("s1", "go") as events:
            async for event in events:
                if isinstance(event, am.ApprovalRequested):
                    await bot.approve("s1", event.call_id, True)
                elif isinstance(event, am.ToolCallFinished):
                    seen.append(f"{event.status}: {event.content}")
        return seen

    assert run_virtual(scenario) == ["ok: launched x"]


def test_the_host_config_is_the_hosts_and_history_survives_eviction() -> None:
    async def scenario() -> list[str]:
        async with scripted_host(count_user_turns, config=HostConfig(max_sessions=1)) as bot:
            answers = [(await bot.run(s, "hi")).text for s in ("a", "b", "a", "a")]
            assert bot.live_sessions == ["a"] and bot.snapshot().evicted_cap == 2
            return answers

    assert run_virtual(scenario) == ["1", "1", "2", "3"]


def test_an_empty_script_is_refused_before_anything_starts() -> None:
    async def scenario() -> None:
        async with scripted_host([]):
            raise AssertionError("started")

    with pytest.raises(ValueError, match="empty"):
        run_virtual(scenario)


def test_an_error_in_the_block_stops_the_bot_and_propagates() -> None:
    async def scenario() -> None:
        async with scripted_host(["ok"], config=HostConfig(idle_ttl=5.0)) as bot:
            await bot.run("s1", "hi")
            await advance(1.0)
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        run_virtual(scenario)


@settings(max_examples=50, deadline=None)
@given(traffic=visits(sessions=3, max_wait=90.0, max_size=8))
def test_visits_name_the_sessions_and_wait_whole_seconds(traffic: list[Visit]) -> None:
    assert 1 <= len(traffic) <= 8
    assert {v.session for v in traffic} <= {"s0", "s1", "s2"}
    assert all(0 <= v.wait <= 90 and v.wait == int(v.wait) for v in traffic)


def test_visits_refuse_no_sessions() -> None:
    with pytest.raises(ValueError, match="sessions"):
        visits(sessions=0)


@pytest.mark.parametrize("cancel_at", [0.001, 0.5, 1.0, 1.5, 2.5])
def test_cancelling_the_block_mid_turns_puts_every_session_away(cancel_at: float) -> None:
    slow = ScriptedReply(text=["a", "b", "c"], latency=1.0, gap=0.5)

    async def scenario() -> HostSnapshot:
        hosts: list[SessionHost] = []
        with trio.move_on_after(cancel_at):
            async with scripted_host([slow]) as bot, trio.open_nursery() as nursery:
                hosts.append(bot)
                for n in range(20):
                    nursery.start_soon(bot.run, f"s{n}", "hi")
                await trio.sleep(10)
        return hosts[0].snapshot()

    # Returning at all means every task scripted_host started has ended.
    after = run_virtual(scenario)
    assert (after.live, after.busy, after.turns_in_flight) == (0, 0, 0)
