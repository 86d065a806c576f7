"""Tools from typed functions, the per-call context and its cancel token."""

from __future__ import annotations

from typing import Any

from agcore_actors.tools import (
    CancelToken,
    ToolContext,
    function_tool,
)


@function_tool(name="echo", description="echo input")
async def echo(text: str) -> dict[str, Any]:
    return {"text": text}


async def test_mock_tool_execute() -> None:
    ctx = ToolContext("session-1", "trace-1")
    assert await echo.call({"text": "hello"}, ctx) == {"text": "hello"}
    assert echo.parameters["required"] == ["text"]
    assert echo.parameters["properties"]["text"] == {"type": "string"}


def test_default_permissions_empty() -> None:
    assert echo.required_permissions == ()
    assert echo.requires_approval is False


def test_tool_context_creation() -> None:
    ctx = ToolContext("s1", "t1")
    assert (ctx.session_id, ctx.trace_id) == ("s1", "t1")
    assert not ctx.cancelled


def test_tool_context_cancellation() -> None:
    token = CancelToken()
    token.cancel()
    assert ToolContext("s1", "t1", cancel_token=token).cancelled
