"""Tools from typed functions, the per-call context and its cancel token."""

from __future__ import annotations

from typing import Any, get_origin

from agcore_actors.tools import (
    CancelToken,
    FunctionTool,
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


async def test_a_function_tool_called_as_a_function_is_its_function() -> None:
    @function_tool(name="times")
    def mul(a: int, b: int = 2) -> int:
        """Multiply."""
        return a * b

    @function_tool
    async def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert mul(3) == 6 and mul(3, b=5) == 15
    assert await add(1, 2) == 3
    # The tool itself is unchanged: its name, schema and call path.
    assert mul.name == "times" and set(mul.parameters["properties"]) == {"a", "b"}
    assert await add.call({"a": 4, "b": 5}, ToolContext()) == 9
    # Generic over the signature at runtime too (a subscripted alias is allowed).
    assert get_origin(FunctionTool[[int, int], int]) is FunctionTool
