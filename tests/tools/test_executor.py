"""ToolExecutor behaviour: approval, sync tools in threads, progress events,
result cap, batch ids."""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from agcore_actors import Actor, ActorSystem
from agcore_actors.tools import (
    ApprovalDecision,
    ApprovalRequest,
    BatchInProgress,
    ExecuteTools,
    ExecutorConfig,
    FetchResults,
    ToolCall,
    ToolContext,
    ToolExecutor,
    ToolProgress,
    ToolRegistry,
    ToolStatus,
    function_tool,
)


@function_tool(requires_approval=True)
async def deploy(target: str) -> str:
    """Deploy somewhere."""
    return f"deployed {target}"


async def execute(system: ActorSystem, executor_factory: Any, *calls: ToolCall) -> list[Any]:
    ref = await system.spawn(executor_factory, name="tools")
    return list((await ref.ask(ExecuteTools("b", list(calls)))).results)


async def test_approval_callback_allows_and_denies(system: ActorSystem) -> None:
    seen: list[ApprovalRequest] = []

    async def approver(req: ApprovalRequest) -> ApprovalDecision:
        seen.append(req)
        allow = req.arguments["target"] == "staging"
        return ApprovalDecision(allow, "" if allow else "production needs a human")

    ok, no = await execute(
        system,
        lambda: ToolExecutor(ToolRegistry([deploy]), approver=approver),
        ToolCall("a", "deploy", '{"target": "staging"}'),
        ToolCall("b", "deploy", '{"target": "prod"}'),
    )
    assert (ok.status, ok.content) == (ToolStatus.OK, "deployed staging")
    assert no.status is ToolStatus.DENIED and "production needs a human" in no.content
    assert {r.call_id for r in seen} == {"a", "b"} and seen[0].description == "Deploy somewhere."


class Approver(Actor[ApprovalRequest]):
    # Concurrent: a serial approver would queue every approval behind a slow one.
    max_concurrency = 8

    async def handle(self, msg: ApprovalRequest) -> ApprovalDecision:
        if msg.arguments["target"] == "slow":
            await trio.sleep(1000)
        return ApprovalDecision(True)


async def test_approval_actor_and_timeout(system: ActorSystem, autojump_clock: Any) -> None:
    approver = await system.spawn(Approver, name="approver")
    config = ExecutorConfig(approval_timeout=5)
    start = trio.current_time()
    ok, late = await execute(
        system,
        lambda: ToolExecutor(ToolRegistry([deploy]), approver=approver, config=config),
        ToolCall("a", "deploy", '{"target": "x"}'),
        ToolCall("b", "deploy", '{"target": "slow"}'),
    )
    assert ok.status is ToolStatus.OK
    assert late.status is ToolStatus.DENIED and "approval timed out" in late.content
    assert trio.current_time() - start == pytest.approx(5)


async def test_no_approver_denies(system: ActorSystem) -> None:
    (r,) = await execute(
        system,
        lambda: ToolExecutor(ToolRegistry([deploy])),
        ToolCall("a", "deploy", '{"target": "x"}'),
    )
    assert r.status is ToolStatus.DENIED and "no approver" in r.content


async def test_sync_tool_runs_in_a_thread_and_is_abandoned_on_timeout(system: ActorSystem) -> None:
    release = threading.Event()
    contexts: list[ToolContext] = []

    @function_tool(timeout=0.2)
    def blocking(ctx: ToolContext) -> str:
        contexts.append(ctx)
        release.wait(10)
        return "finished"

    @function_tool
    def quick(n: int) -> int:
        assert threading.current_thread() is not threading.main_thread()
        return n * 2

    try:
        slow, fast = await execute(
            system,
            lambda: ToolExecutor(ToolRegistry([blocking, quick])),
            ToolCall("a", "blocking"),
            ToolCall("b", "quick", '{"n": 21}'),
        )
    finally:
        release.set()
    assert slow.status is ToolStatus.TIMEOUT
    assert (fast.status, fast.value) == (ToolStatus.OK, 42)
    assert contexts[0].cancelled and contexts[0].call_id == "a"


class Sink(Actor[ToolProgress]):
    def __init__(self, seen: list[ToolProgress]) -> None:
        self.seen = seen

    async def handle(self, msg: ToolProgress) -> None:
        self.seen.append(msg)


async def test_progress_reaches_the_event_sink(system: ActorSystem) -> None:
    seen: list[ToolProgress] = []
    sink = await system.spawn(lambda: Sink(seen), name="sink")

    @function_tool
    async def work(ctx: ToolContext) -> str:
        ctx.report_progress(1, 2, "half")
        return "done"

    await execute(
        system, lambda: ToolExecutor(ToolRegistry([work]), events=sink), ToolCall("c", "work")
    )
    await trio.testing.wait_all_tasks_blocked()
    assert seen == [ToolProgress("b", "c", "work", 1, 2, "half")]


async def test_results_over_the_cap_are_cut(system: ActorSystem) -> None:
    @function_tool
    async def big() -> str:
        return "é" * 100

    (r,) = await execute(
        system,
        lambda: ToolExecutor(ToolRegistry([big]), config=ExecutorConfig(max_result_bytes=51)),
        ToolCall("c", "big"),
    )
    assert r.truncated and r.content.startswith("é" * 25 + "\n\n[... truncated, original size: 200")
    assert r.value is None


async def test_batch_ids(system: ActorSystem, autojump_clock: Any) -> None:
    @function_tool
    async def nap() -> str:
        await trio.sleep(10)
        return "z"

    ref = await system.spawn(lambda: ToolExecutor(ToolRegistry([nap])), name="tools")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.ask, ExecuteTools("same", [ToolCall("a", "nap")]))
        await trio.sleep(1)
        with pytest.raises(BatchInProgress):
            await ref.ask(ExecuteTools("same", [ToolCall("b", "nap")]))
    recorded = await ref.ask(FetchResults("same"))
    assert recorded is not None and recorded.results[0].status is ToolStatus.OK
    assert await ref.ask(FetchResults("unknown")) is None
