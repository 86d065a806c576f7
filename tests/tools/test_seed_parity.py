"""The seed's unit tests for tools (spec §15.1, §15.2, §15.4, §15.5, §15.6.5-7),
ported with its bugs fixed (real call ids, typed timeout, atomic register_all)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.tools import (
    NETWORK,
    READ,
    SHELL,
    UNSPECIFIED,
    WRITE,
    CancelToken,
    DuplicateTool,
    ExecuteTools,
    ExecutionFailed,
    ExecutorConfig,
    InvalidArguments,
    OtherToolError,
    PermissionChecker,
    PermissionConfig,
    PermissionDenied,
    ToolCall,
    ToolContext,
    ToolError,
    ToolExecutor,
    ToolIoError,
    ToolNotFound,
    ToolRegistry,
    ToolStatus,
    ToolTimeout,
    function_tool,
    truncate_tool_result,
)

# -- §15.1 base ---------------------------------------------------------------


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


# -- §15.2 errors ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "recoverable"),
    [
        (ExecutionFailed("t", "x"), True),
        (InvalidArguments("t", "x"), True),
        (ToolNotFound("t"), False),
        (PermissionDenied("foo", "Shell"), False),
        (ToolTimeout("t", 1), False),
        (ToolIoError("disk"), False),
        (OtherToolError("x"), True),
    ],
)
def test_recoverability(error: ToolError, recoverable: bool) -> None:
    assert error.is_recoverable() is recoverable


def test_mcp_errors_are_not_recoverable() -> None:
    from agcore_actors.mcp import McpError, McpNotInitialized, McpTimeout

    assert not McpError("x").is_recoverable()
    assert not McpTimeout("tools/call", 1).is_recoverable()
    assert not McpNotInitialized("srv").is_recoverable()


# -- §15.4 permissions ----------------------------------------------------------


def refused(config: PermissionConfig, perms: list[str]) -> bool:
    try:
        PermissionChecker(config).check("t", perms)
    except PermissionDenied:
        return True
    return False


DEFAULT = PermissionConfig()


@pytest.mark.parametrize(
    ("config", "perms", "denied"),
    [
        (DEFAULT, [READ], False),
        (DEFAULT, [NETWORK], False),
        (DEFAULT, ["Delete"], True),
        (DEFAULT, [SHELL], True),
        (PermissionConfig([READ], [], False), [READ], False),
        (PermissionConfig([READ], [], False), [WRITE], True),
        (PermissionConfig([READ, WRITE], [], False), [WRITE], False),
        (PermissionConfig([SHELL, READ], [SHELL], False), [SHELL], True),
        (PermissionConfig([], [], True), [WRITE], False),
        (PermissionConfig([], [], False), [WRITE], True),
        (PermissionConfig([], [], True), [], False),
        (PermissionConfig([], [], False), [], True),
        (PermissionConfig(["db:read"], ["db:write"], False), ["db:read"], False),
        (PermissionConfig(["db:read"], ["db:write"], False), ["db:write"], True),
        (PermissionConfig([READ, WRITE, NETWORK]), [READ, NETWORK], False),
        (PermissionConfig([READ, NETWORK]), [READ, WRITE], True),
    ],
)
def test_permission_rules(config: PermissionConfig, perms: list[str], denied: bool) -> None:
    assert refused(config, perms) is denied


def test_unspecified_refusal_names_unspecified() -> None:
    with pytest.raises(PermissionDenied) as info:
        PermissionChecker(PermissionConfig([], [], False)).check("t", [])
    assert info.value.permission == UNSPECIFIED


# -- §15.5 registry (invoke / invoke_all through the ToolExecutor) ---------------


def add_tool(base: int) -> Any:
    @function_tool(name="add", description="addition")
    async def add(n: int = 0) -> dict[str, int]:
        return {"result": base + n}

    return add


@function_tool(name="fail", description="always fails")
async def fail() -> None:
    raise ExecutionFailed("fail", "boom")


@function_tool(name="shell", permissions=[SHELL])
async def shell() -> dict[str, Any]:
    return {}


def test_register_and_get() -> None:
    reg = ToolRegistry([add_tool(0)])
    assert reg.get("add") is not None
    assert reg.get("nonexistent") is None


def test_register_duplicate() -> None:
    reg = ToolRegistry([add_tool(0)])
    with pytest.raises(DuplicateTool):
        reg.register(add_tool(1))


def test_register_all_is_atomic() -> None:
    reg = ToolRegistry()
    with pytest.raises(DuplicateTool):
        reg.register_all([add_tool(0), fail, add_tool(1)])
    assert reg.names() == []  # Δ seed: nothing was half-registered


def test_unregister() -> None:
    reg = ToolRegistry([add_tool(0)])
    assert reg.unregister("add") is not None
    assert reg.get("add") is None


def test_list_tools() -> None:
    assert sorted(ToolRegistry([add_tool(0), fail]).names()) == ["add", "fail"]


def test_definitions() -> None:
    (definition,) = ToolRegistry([add_tool(0)]).definitions()
    assert definition["type"] == "function"
    assert definition["function"]["name"] == "add"
    assert definition["function"]["description"] == "addition"
    assert definition["function"]["parameters"]["type"] == "object"


async def run(reg: ToolRegistry, calls: list[ToolCall], **kw: Any) -> list[Any]:
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: ToolExecutor(reg, **kw), name="tools")
        return (await ref.ask(ExecuteTools("b", calls))).results


async def test_invoke_success() -> None:
    (r,) = await run(ToolRegistry([add_tool(100)]), [ToolCall("c1", "add", '{"n": 5}')])
    assert r.status is ToolStatus.OK and r.value == {"result": 105}
    assert r.call_id == "c1"  # Δ seed: the real call id, not the tool name
    assert r.content == '{"result":105}'


async def test_invoke_not_found() -> None:
    (r,) = await run(ToolRegistry(), [ToolCall("c1", "nope")])
    assert r.status is ToolStatus.UNKNOWN_TOOL and not r.recoverable


async def test_invoke_execution_error() -> None:
    (r,) = await run(ToolRegistry([fail]), [ToolCall("c1", "fail")])
    assert r.status is ToolStatus.ERROR and r.recoverable
    assert r.content == "Error: tool 'fail' execution failed: boom"


async def test_invoke_with_permission_denied() -> None:
    (r,) = await run(ToolRegistry([shell]), [ToolCall("c1", "shell")], checker=PermissionChecker())
    assert r.status is ToolStatus.DENIED and not r.recoverable


async def test_invoke_all_parallel_in_order() -> None:
    calls = [
        ToolCall("a", "add", '{"n":1}'),
        ToolCall("b", "add", '{"n":2}'),
        ToolCall("c", "fail"),
    ]
    rs = await run(ToolRegistry([add_tool(0), fail]), calls, config=ExecutorConfig(None))
    assert [r.status for r in rs] == [ToolStatus.OK, ToolStatus.OK, ToolStatus.ERROR]
    assert [r.value for r in rs[:2]] == [{"result": 1}, {"result": 2}]


async def test_invoke_all_with_timeout(autojump_clock: trio.abc.Clock) -> None:
    @function_tool
    async def nap(seconds: float) -> str:
        await trio.sleep(seconds)
        return "awake"

    calls = [ToolCall("a", "add", '{"n":1}'), ToolCall("b", "nap", '{"seconds": 9}')]
    rs = await run(ToolRegistry([add_tool(0), nap]), calls, config=ExecutorConfig(5))
    assert [r.status for r in rs] == [ToolStatus.OK, ToolStatus.TIMEOUT]
    assert rs[1].content == "Error: tool 'nap' timed out after 5 s"


# -- §15.6.5-7 truncation ---------------------------------------------------------


def test_truncate_tool_result_short() -> None:
    assert truncate_tool_result("short text", 100) == "short text"


def test_truncate_tool_result_long() -> None:
    out = truncate_tool_result("a" * 1000, 50)
    assert len(out) < 1000 and "[... truncated, original size: 1000 bytes ...]" in out


def test_truncate_tool_result_chinese_chars() -> None:
    out = truncate_tool_result("中" * 100, 50)
    assert out.startswith("中") and out.split("\n\n")[0] == "中" * 16  # 48 bytes
