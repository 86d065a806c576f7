"""ToolExecutor behaviour: results per call, approval, sync tools in threads, progress
events, result cap, batch ids."""

from __future__ import annotations

import argparse
import contextvars
import sys
import threading
from typing import Any

import attrs
import pytest
import trio

from agcore_actors import Actor, ActorSystem
from agcore_actors.actor import SupervisorSpec
from agcore_actors.tools import (
    SHELL,
    ApprovalDecision,
    ApprovalRequest,
    BatchInProgress,
    CancelBatch,
    ExecuteTools,
    ExecutionFailed,
    ExecutorConfig,
    FetchResults,
    PermissionChecker,
    ToolCall,
    ToolContext,
    ToolExecutor,
    ToolProgress,
    ToolRegistry,
    ToolStatus,
    function_tool,
    tool_executor_spec,
)


@function_tool(requires_approval=True)
async def deploy(target: str) -> str:
    """Deploy somewhere."""
    return f"deployed {target}"


async def execute(system: ActorSystem, executor_factory: Any, *calls: ToolCall) -> list[Any]:
    ref = await system.spawn(executor_factory, name="tools")
    return list((await ref.ask(ExecuteTools(batch_id="b", calls=list(calls)))).results)


async def test_approval_callback_allows_and_denies(system: ActorSystem) -> None:
    seen: list[ApprovalRequest] = []

    async def approver(req: ApprovalRequest) -> ApprovalDecision:
        seen.append(req)
        allow = req.arguments["target"] == "staging"
        return ApprovalDecision(allow, "" if allow else "production needs a human")

    ok, no = await execute(
        system,
        lambda: ToolExecutor(ToolRegistry([deploy]), approver=approver),
        ToolCall(id="a", name="deploy", arguments='{"target": "staging"}'),
        ToolCall(id="b", name="deploy", arguments='{"target": "prod"}'),
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
        ToolCall(id="a", name="deploy", arguments='{"target": "x"}'),
        ToolCall(id="b", name="deploy", arguments='{"target": "slow"}'),
    )
    assert ok.status is ToolStatus.OK
    assert late.status is ToolStatus.DENIED and "approval timed out" in late.content
    assert trio.current_time() - start == pytest.approx(5)


async def test_no_approver_denies(system: ActorSystem) -> None:
    (r,) = await execute(
        system,
        lambda: ToolExecutor(ToolRegistry([deploy])),
        ToolCall(id="a", name="deploy", arguments='{"target": "x"}'),
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
            ToolCall(id="a", name="blocking"),
            ToolCall(id="b", name="quick", arguments='{"n": 21}'),
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
        system,
        lambda: ToolExecutor(ToolRegistry([work]), events=sink),
        ToolCall(id="c", name="work"),
    )
    await trio.testing.wait_all_tasks_blocked()
    assert seen == [
        ToolProgress(batch_id="b", call_id="c", name="work", progress=1, total=2, message="half")
    ]


async def test_results_over_the_cap_are_cut(system: ActorSystem) -> None:
    @function_tool
    async def big() -> str:
        return "é" * 100

    (r,) = await execute(
        system,
        lambda: ToolExecutor(ToolRegistry([big]), config=ExecutorConfig(max_result_bytes=51)),
        ToolCall(id="c", name="big"),
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
        nursery.start_soon(
            ref.ask, ExecuteTools(batch_id="same", calls=[ToolCall(id="a", name="nap")])
        )
        await trio.sleep(1)
        with pytest.raises(BatchInProgress):
            await ref.ask(ExecuteTools(batch_id="same", calls=[ToolCall(id="b", name="nap")]))
    recorded = await ref.ask(FetchResults("same"))
    assert recorded is not None and recorded.results[0].status is ToolStatus.OK
    assert await ref.ask(FetchResults("unknown")) is None


# -- one result per call, by example -------------------------------------------


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


async def run(reg: ToolRegistry, calls: list[ToolCall], **kw: Any) -> list[Any]:
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: ToolExecutor(reg, **kw), name="tools")
        return (await ref.ask(ExecuteTools(batch_id="b", calls=calls))).results


async def test_invoke_success() -> None:
    (r,) = await run(
        ToolRegistry([add_tool(100)]), [ToolCall(id="c1", name="add", arguments='{"n": 5}')]
    )
    assert r.status is ToolStatus.OK and r.value == {"result": 105}
    assert r.call_id == "c1"  # the call's own id, not the tool name
    assert r.content == '{"result":105}'


async def test_invoke_not_found() -> None:
    (r,) = await run(ToolRegistry(), [ToolCall(id="c1", name="nope")])
    assert r.status is ToolStatus.UNKNOWN_TOOL and not r.recoverable


async def test_invoke_execution_error() -> None:
    (r,) = await run(ToolRegistry([fail]), [ToolCall(id="c1", name="fail")])
    assert r.status is ToolStatus.ERROR and r.recoverable
    assert r.content == "Error: tool 'fail' execution failed: boom"


async def test_invoke_with_permission_denied() -> None:
    (r,) = await run(
        ToolRegistry([shell]), [ToolCall(id="c1", name="shell")], checker=PermissionChecker()
    )
    assert r.status is ToolStatus.DENIED and not r.recoverable


async def test_invoke_all_parallel_in_order() -> None:
    calls = [
        ToolCall(id="a", name="add", arguments='{"n":1}'),
        ToolCall(id="b", name="add", arguments='{"n":2}'),
        ToolCall(id="c", name="fail"),
    ]
    rs = await run(ToolRegistry([add_tool(0), fail]), calls, config=ExecutorConfig(None))
    assert [r.status for r in rs] == [ToolStatus.OK, ToolStatus.OK, ToolStatus.ERROR]
    assert [r.value for r in rs[:2]] == [{"result": 1}, {"result": 2}]


async def test_invoke_all_with_timeout(autojump_clock: trio.abc.Clock) -> None:
    @function_tool
    async def nap(seconds: float) -> str:
        await trio.sleep(seconds)
        return "awake"

    calls = [
        ToolCall(id="a", name="add", arguments='{"n":1}'),
        ToolCall(id="b", name="nap", arguments='{"seconds": 9}'),
    ]
    rs = await run(ToolRegistry([add_tool(0), nap]), calls, config=ExecutorConfig(5))
    assert [r.status for r in rs] == [ToolStatus.OK, ToolStatus.TIMEOUT]
    assert rs[1].content == "Error: tool 'nap' timed out after 5 s"


# -- construction ------------------------------------------------------------------


async def test_tool_executor_spec_builds_a_supervised_executor(system: ActorSystem) -> None:
    spec = tool_executor_spec(
        "tools", registry=ToolRegistry([add_tool(1)]), config=ExecutorConfig(default_timeout=5)
    )
    await system.start_supervisor(SupervisorSpec("sup", children=[spec]))
    reply = await system.lookup("tools").ask(
        ExecuteTools(batch_id="b", calls=[ToolCall(id="c", name="add", arguments='{"n": 2}')])
    )
    assert [r.value for r in reply.results] == [{"result": 3}]


@pytest.mark.parametrize(
    "kwargs",
    [{"default_timeout": -1}, {"max_result_bytes": 0}, {"approval_timeout": -1}],
)
def test_bad_executor_configuration_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ExecutorConfig(**kwargs)


# -- a tool's exception is that call's result -----------------------------------------


@attrs.frozen
class ExitingTool:
    """A hand-written tool (no function_tool wrapper) that exits like a CLI parser."""

    name: str = "exiting"
    description: str = "calls sys.exit"
    parameters: dict[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    required_permissions: tuple[str, ...] = ()
    requires_approval: bool = False
    timeout: float | None = None

    async def call(self, args: Any, ctx: ToolContext) -> Any:
        sys.exit(3)


async def test_a_tool_raising_system_exit_answers_every_call_id_once(system: ActorSystem) -> None:
    @function_tool
    def parse(argv: list[str]) -> str:
        argparse.ArgumentParser(prog="parse").parse_args(argv)  # exits 2 on a bad flag
        return "parsed"

    @function_tool
    async def exits() -> str:
        raise SystemExit("bye")

    registry = ToolRegistry([parse, exits, ExitingTool(), add_tool(0)])
    ref = await system.spawn(lambda: ToolExecutor(registry), name="tools")
    calls = [
        ToolCall(id="a", name="parse", arguments='{"argv": ["--bogus"]}'),
        ToolCall(id="b", name="exits"),
        ToolCall(id="c", name="exiting"),
        ToolCall(id="d", name="add", arguments='{"n": 1}'),
    ]
    reply = await ref.ask(ExecuteTools(batch_id="b1", calls=calls))
    assert [r.call_id for r in reply.results] == ["a", "b", "c", "d"]
    a, b, c, d = reply.results
    assert a.status is ToolStatus.ERROR and "SystemExit: 2" in a.content
    assert b.status is ToolStatus.ERROR and "SystemExit: bye" in b.content
    assert c.status is ToolStatus.ERROR and "SystemExit: 3" in c.content
    assert d.status is ToolStatus.OK
    # the executor survived: the next batch runs
    again = await ref.ask(ExecuteTools(batch_id="b2", calls=calls[3:]))
    assert again.results[0].status is ToolStatus.OK


@attrs.frozen
class OpaqueTool:
    """A hand-written tool that returns something JSON cannot carry."""

    name: str = "opaque"
    description: str = "returns an object"
    parameters: dict[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    required_permissions: tuple[str, ...] = ()
    requires_approval: bool = False
    timeout: float | None = None

    async def call(self, args: Any, ctx: ToolContext) -> Any:
        return {"handle": threading.Lock()}


@pytest.mark.parametrize("strict", [True, False])
async def test_an_unencodable_value_is_that_calls_error(strict: bool) -> None:
    registry = ToolRegistry([OpaqueTool(), add_tool(0)])
    async with ActorSystem(strict=strict, seed=0) as system:
        ref = await system.spawn(lambda: ToolExecutor(registry), name="tools")
        calls = [
            ToolCall(id="a", name="opaque"),
            ToolCall(id="b", name="add", arguments='{"n": 1}'),
        ]
        opaque, ok = (await ref.ask(ExecuteTools(batch_id="b", calls=calls))).results
    assert opaque.status is ToolStatus.ERROR and opaque.recoverable
    assert "not JSON" in opaque.content and opaque.value is None
    assert (ok.status, ok.value) == (ToolStatus.OK, {"result": 1})


_who: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


@function_tool
async def remember(name: str) -> str:
    """Say who was set before, then set a context variable, as logging libraries do."""
    before = _who.get()
    _who.set(name)
    return before


async def test_a_tool_s_context_variables_never_reach_another_call(system: ActorSystem) -> None:
    # A tool's contextvars.set (a request id, a user bound into the logging context) stays
    # in its own call: the next batch, maybe another session's, starts from a clean context.
    ref = await system.spawn(lambda: ToolExecutor(ToolRegistry([remember])), name="tools")
    for i, name in enumerate(["alice", "bob"]):
        call = ToolCall(id=f"c{i}", name="remember", arguments=f'{{"name": "{name}"}}')
        (result,) = (await ref.ask(ExecuteTools(batch_id=f"b{i}", calls=[call]))).results
        assert result.status is ToolStatus.OK
        assert result.content == "nobody"


@pytest.mark.parametrize("calls", [1, 2])
async def test_cancel_batch_cancels_a_batch_of_one_or_more_and_it_still_replies(
    system: ActorSystem, autojump_clock: Any, calls: int
) -> None:
    @function_tool
    async def nap() -> str:
        await trio.sleep(100)
        return "z"

    config = ExecutorConfig(default_timeout=50.0)
    ref = await system.spawn(lambda: ToolExecutor(ToolRegistry([nap]), config=config), name="t")
    batch = ExecuteTools(
        batch_id="b", calls=[ToolCall(id=f"c{i}", name="nap") for i in range(calls)]
    )
    got: list[Any] = []

    async def ask() -> None:
        got.append(await ref.ask(batch))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        await trio.sleep(5)
        await ref.tell(CancelBatch("b"))
    assert trio.current_time() == 5
    assert [r.status for r in got[0].results] == [ToolStatus.CANCELLED] * calls
    # and a batch of one that runs out of time is that call's timeout, not a cancellation
    late = await ref.ask(ExecuteTools(batch_id="c", calls=[ToolCall(id="x", name="nap")]))
    assert late.results[0].status is ToolStatus.TIMEOUT
