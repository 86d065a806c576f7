"""The code of docs/tools.md, run by tests/docs/test_snippets.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated

import msgspec
import trio

from agcore_actors.agent import SessionHost
from agcore_actors.agent import messages as am
from agcore_actors.tools import WRITE, ExecutionFailed, ToolContext, function_tool

SENT: list[str] = []


# --8<-- [start:define]
@function_tool
async def get_weather(
    city: Annotated[str, msgspec.Meta(description="A city name such as Paris")],
) -> dict[str, object]:
    """Get the current weather of a city."""
    if city.lower() != "paris":
        raise ExecutionFailed("get_weather", f"no data for {city!r}")  # the model sees this
    return {"city": city, "temperature": 22, "condition": "sunny"}


@function_tool(requires_approval=True, permissions=(WRITE,), timeout=10.0)
async def send_email(to: str, subject: str, body: str) -> str:
    """Send an email (a human approves each one)."""
    SENT.append(to)
    return f"sent to {to}"


@function_tool(timeout=5.0)
def count_lines(path: str, ctx: ToolContext) -> int:
    """Count the lines of a text file."""
    lines = 0
    with open(path, encoding="utf-8") as file:
        for _ in file:
            if ctx.cancelled:  # a sync tool cannot be interrupted: it looks
                break
            lines += 1
    return lines


# --8<-- [end:define]


# --8<-- [start:approve]
async def run_with_approvals(
    host: SessionHost, session: str, text: str, decide: Callable[[str, str], Awaitable[bool]]
) -> am.TurnResult:
    """Run a turn; every tool call that asks is decided by ``decide(name, arguments)``."""
    async with host.submit(session, text) as events:
        async for event in events:
            match event:
                case am.ApprovalRequested(call_id=call_id, name=name, arguments=arguments):
                    await host.approve(session, call_id, await decide(name, arguments))
                case (
                    am.TurnCompleted(result=r)
                    | am.TurnCancelled(result=r)
                    | am.TurnFailed(result=r)
                ):
                    return r
    raise AssertionError("every turn ends with a result event")


# --8<-- [end:approve]


async def always_no(name: str, arguments: str) -> bool:
    await trio.lowlevel.checkpoint()
    return False
