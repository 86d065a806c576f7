"""Tool gates with their defaults: an executor built with nothing but a registry refuses
tools that declare Shell or Delete (the model cannot run them by asking), and an
approval that does not come in time — or fails, or has no approver — is a denial; the
tool body never runs."""

from __future__ import annotations

import functools

import trio
import trio.testing

from agcore_actors import ActorSystem
from agcore_actors.tools import (
    ApprovalDecision,
    ApprovalRequest,
    ExecuteTools,
    ExecutorConfig,
    ToolCall,
    ToolExecutor,
    ToolRegistry,
    ToolStatus,
    function_tool,
    tool_executor_spec,
)
from agcore_actors.tools.policy import DEFAULT_APPROVAL_TIMEOUT

RAN: list[str] = []


@function_tool(permissions=["Shell"])
async def run_shell(command: str) -> str:
    """Runs a shell command."""
    RAN.append("shell")
    return "ran"


@function_tool(permissions=["Delete"])
async def delete_file(path: str) -> str:
    """Deletes a file."""
    RAN.append("delete")
    return "deleted"


@function_tool(permissions=["Read", "Shell"])
async def read_then_shell() -> str:
    """Declares a harmless permission first."""
    RAN.append("read_then_shell")
    return "ran"


@function_tool
async def harmless() -> str:
    """Declares nothing."""
    return "ok"


@function_tool(requires_approval=True)
async def dangerous() -> str:
    """Needs a human's yes."""
    RAN.append("dangerous")
    return "done"


REGISTRY = ToolRegistry([run_shell, delete_file, read_then_shell, harmless, dangerous])
CALLS = [
    ToolCall(id="s", name="run_shell", arguments='{"command": "rm -rf /"}'),
    ToolCall(id="d", name="delete_file", arguments='{"path": "/etc/passwd"}'),
    ToolCall(id="r", name="read_then_shell"),
    ToolCall(id="h", name="harmless"),
]


async def test_default_executor_denies_shell_and_delete_tools() -> None:
    RAN.clear()
    async with ActorSystem(strict=True) as system:
        plain = await system.spawn(lambda: ToolExecutor(REGISTRY), name="plain")
        from_spec = await system.root.start_child(tool_executor_spec("spec", registry=REGISTRY))
        for executor in (plain, from_spec):
            reply = await executor.ask(ExecuteTools(batch_id="b", calls=CALLS))
            statuses = [r.status for r in reply.results]
            assert statuses == [ToolStatus.DENIED] * 3 + [ToolStatus.OK], reply
            assert all(not r.recoverable for r in reply.results[:3])
    assert RAN == []


async def test_an_approval_that_never_comes_is_a_denial(
    autojump_clock: trio.testing.MockClock,
) -> None:
    RAN.clear()
    asked: list[ApprovalRequest] = []

    async def never(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async with ActorSystem(strict=True) as system:
        executor = await system.spawn(lambda: ToolExecutor(REGISTRY, approver=never), name="t")
        start = trio.current_time()
        reply = await executor.ask(
            ExecuteTools(batch_id="b", calls=[ToolCall(id="x", name="dangerous")])
        )
    (result,) = reply.results
    assert result.status == ToolStatus.DENIED and "timed out" in result.content, result
    assert trio.current_time() - start >= DEFAULT_APPROVAL_TIMEOUT
    assert len(asked) == 1 and RAN == []


async def test_a_failing_or_missing_approver_is_a_denial() -> None:
    RAN.clear()

    async def broken(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("approver down")

    async with ActorSystem(strict=True) as system:
        config = ExecutorConfig(approval_timeout=1.0)
        for name, approver in (("broken", broken), ("none", None)):
            executor = await system.spawn(
                functools.partial(ToolExecutor, REGISTRY, approver=approver, config=config),
                name=name,
            )
            reply = await executor.ask(
                ExecuteTools(batch_id="b", calls=[ToolCall(id="x", name="dangerous")])
            )
            assert reply.results[0].status == ToolStatus.DENIED, reply
    assert RAN == []
