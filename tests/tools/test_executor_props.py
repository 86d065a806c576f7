"""Property: for any mix of fast, slow, failing, exiting, hanging, invalid and cancelled
calls, ToolExecutor answers every call id exactly once, in call order, with
the right status, within the timeout bound, and leaves no task running."""

from __future__ import annotations

import math

import msgspec
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors import ActorSystem
from agcore_actors.tools import (
    SHELL,
    CancelBatch,
    ExecuteTools,
    ExecutionFailed,
    ExecutorConfig,
    FetchResults,
    PermissionChecker,
    ToolCall,
    ToolExecutor,
    ToolRegistry,
    ToolStatus,
    function_tool,
)

TIMEOUT = 10.0

# kind -> (delay, outcome); delay < 0 hangs forever
KINDS = [
    "fast",
    "slow",
    "fail",
    "crash",
    "exit",
    "hang",
    "invalid_json",
    "bad_args",
    "unknown",
    "denied",
]


class Live:
    def __init__(self) -> None:
        self.running = 0


def build_registry(live: Live) -> ToolRegistry:
    @function_tool(timeout=TIMEOUT)
    async def work(delay: float, outcome: str) -> str:
        live.running += 1
        try:
            if delay < 0:
                await trio.sleep_forever()
            await trio.sleep(delay)
            if outcome == "fail":
                raise ExecutionFailed("work", "boom")
            if outcome == "exit":
                raise SystemExit(2)
            if outcome == "crash":
                raise ValueError("crashed")
            return f"done {delay}"
        finally:
            live.running -= 1

    @function_tool(permissions=[SHELL])
    async def shell() -> str:
        return "never"

    return ToolRegistry([work, shell])


call_specs = st.tuples(st.sampled_from(KINDS), st.integers(min_value=0, max_value=25))


def make_call(i: int, kind: str, delay: int) -> ToolCall:
    cid = f"call_{i}"
    if kind == "unknown":
        return ToolCall(id=cid, name="nope", arguments="{}")
    if kind == "denied":
        return ToolCall(id=cid, name="shell", arguments="{}")
    if kind == "invalid_json":
        return ToolCall(id=cid, name="work", arguments="{not json")
    if kind == "bad_args":
        return ToolCall(id=cid, name="work", arguments='{"delay": "x", "outcome": "ok"}')
    d = {"fast": delay % 9 + 1, "slow": TIMEOUT + 1 + delay, "hang": -1}.get(kind, delay % 9 + 1)
    outcome = kind if kind in ("fail", "crash", "exit") else "ok"
    return ToolCall(
        id=cid,
        name="work",
        arguments=msgspec.json.encode({"delay": d, "outcome": outcome}).decode(),
    )


def expected(kind: str, delay: int, cancel_at: float) -> tuple[ToolStatus, float]:
    """The status a call must get, and when it ends on its own."""
    if kind in ("unknown",):
        return ToolStatus.UNKNOWN_TOOL, 0.0
    if kind == "denied":
        return ToolStatus.DENIED, 0.0
    if kind in ("invalid_json", "bad_args"):
        return ToolStatus.INVALID_ARGUMENTS, 0.0
    if kind in ("slow", "hang"):
        ends, status = TIMEOUT, ToolStatus.TIMEOUT
    else:
        ends = float(delay % 9 + 1)
        status = ToolStatus.OK if kind == "fast" else ToolStatus.ERROR
    if ends > cancel_at:
        return ToolStatus.CANCELLED, cancel_at
    return status, ends


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(call_specs, max_size=8),
    cancel=st.one_of(st.none(), st.integers(min_value=0, max_value=12)),
    how=st.sampled_from(["batch", "asker"]),
)
def test_every_call_answered_once_in_order(
    specs: list[tuple[str, int]], cancel: int | None, how: str
) -> None:
    cancel_at = math.inf if cancel is None else cancel + 0.5
    calls = [make_call(i, k, d) for i, (k, d) in enumerate(specs)]

    async def main() -> None:
        live = Live()
        registry = build_registry(live)
        async with ActorSystem(strict=True, seed=0) as system:
            executor = await system.spawn(
                lambda: ToolExecutor(
                    registry,
                    checker=PermissionChecker(),
                    config=ExecutorConfig(default_timeout=TIMEOUT),
                ),
                name="tools",
            )
            start = trio.current_time()
            reply = None
            finished = math.inf

            async def ask() -> None:
                nonlocal reply, finished
                try:
                    reply = await executor.ask(ExecuteTools(batch_id="b1", calls=calls))
                finally:
                    finished = trio.current_time()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask)
                if cancel is not None:
                    await trio.sleep(cancel_at)
                    if how == "batch":
                        await executor.tell(CancelBatch("b1"))
                    elif reply is None:
                        nursery.cancel_scope.cancel()
            elapsed = finished - start
            assert live.running == 0  # no tool task outlives the batch
            recorded = await executor.ask(FetchResults("b1"))
            if reply is None:  # the asker was cancelled: the results were recorded
                assert how == "asker" and cancel is not None
                reply = recorded
            assert recorded == reply
            assert reply is not None
            results = reply.results
            assert [r.call_id for r in results] == [c.id for c in calls]
            ends = []
            for (kind, delay), result in zip(specs, results, strict=True):
                status, end = expected(kind, delay, cancel_at)
                assert result.status is status, (kind, delay, result)
                ends.append(end)
                if status is ToolStatus.OK:
                    assert result.content.startswith("done")
                else:
                    assert result.content.startswith("Error: ")
            assert elapsed <= max([0.0, *ends]) + 1e-6
            assert elapsed <= min(TIMEOUT, cancel_at) + 1e-6
            info = {row.name: row for row in system.snapshot()}
            assert info["tools"].in_flight == 0

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
