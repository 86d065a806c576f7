"""The first tests of docs/testing.md: a bot author's own test file, collected by pytest
as it is."""

from __future__ import annotations

from agcore_actors.agent import messages as am
from agcore_actors.llm import RateLimitError
from agcore_actors.testing import (
    ScriptedReply,
    ScriptedToolCall,
    ScriptItem,
    elapsed,
    run_virtual,
    scripted_host,
)
from agcore_actors.tools import function_tool


# --8<-- [start:first]
@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_the_bot_uses_its_tool() -> None:
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 17, "b": 25})]),
        ScriptedReply(text=["17 + 25 ", "= 42."], gap=0.5),  # streamed in two pieces
    ]

    async def scenario() -> am.TurnResult:
        async with scripted_host(script, tools=[add]) as bot:
            return await bot.run("chat-1", "What is 17 + 25?")

    result = run_virtual(scenario)
    assert (result.status, result.text, result.tool_calls) == ("completed", "17 + 25 = 42.", 1)


# --8<-- [end:first]


# --8<-- [start:events]
def test_a_rate_limit_is_retried_after_the_time_the_server_asks() -> None:
    script: list[ScriptItem] = [RateLimitError("scripted", retry_after=20.0), "hello"]

    async def scenario() -> tuple[list[str], float]:
        async with scripted_host(script) as bot, bot.submit("chat-1", "hi") as events:
            with elapsed() as took:
                seen = [type(event).__name__ async for event in events]
        return seen, took.seconds

    seen, seconds = run_virtual(scenario)  # 20 s of virtual time, none of yours
    assert seen[:2] == ["TurnStarted", "RetryingModel"] and seen[-1] == "TurnCompleted"
    assert seconds >= 20.0


# --8<-- [end:events]
