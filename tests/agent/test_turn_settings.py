"""What an agent's settings promise each turn: the turn and plan-step hook events fire once
each, in order; ``AgentConfig.tool_timeout`` bounds every tool call of a turn.

Every test runs on both stores (the in-memory one on virtual time, SQLite on a file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agcore_actors.agent import AgentConfig, JsonPlanParser, TurnHooks, execute_plan
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    ChatRequest,
    HookContext,
    HookEvent,
    HookExecutor,
    ToolMessage,
    UserMessage,
)
from agcore_actors.testing import ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool
from tests.agent.stores import transcript
from tests.agent.turn_rig import last_user, rig

# -- 12: turn and plan-step hook events ----------------------------------------------------------


async def test_turn_and_plan_step_hook_events_fire_once_each_in_order(
    backend: str, clock: object, tmp_path: Path
) -> None:
    seen: list[tuple[str, int | None, int | None]] = []

    async def note(ctx: HookContext) -> None:
        seen.append((ctx.event.value, ctx.turn_index, ctx.plan_step_index))

    events = HookExecutor()
    for event in (HookEvent.ON_TURN_START, HookEvent.ON_TURN_END, HookEvent.ON_PLAN_STEP_COMPLETE):
        events.register(event, note)

    def play(request: ChatRequest, attempt: int) -> Any:
        return ScriptedReply(text=f"did {last_user(request)}")

    async with rig(backend, tmp_path, play, hooks=TurnHooks(events=events)) as r:
        await r.session.ask(am.RunTurn(text="a"))
        async with r.session.stream(am.SubmitTurn(text="b")) as stream:
            [_ async for _ in stream]
        plan = JsonPlanParser().parse(
            '{"steps": [{"description": "c"}, {"description": "d"}]}', "g"
        )
        done = await execute_plan(r.session, plan, hooks=events)
        assert done.succeeded
    start, end, step = "on_turn_start", "on_turn_end", "on_plan_step_complete"
    assert seen == [
        (start, 0, None),
        (end, 0, None),
        (start, 1, None),
        (end, 1, None),
        (start, 2, None),
        (end, 2, None),
        (step, None, 0),
        (start, 3, None),
        (end, 3, None),
        (step, None, 1),
    ]


# -- AgentConfig.tool_timeout bounds each tool call of a turn -----------------------------------


@function_tool
async def stall() -> str:
    """A tool that takes far longer than any turn should wait."""
    await trio.sleep(3_600)
    return "never"


def calls_stall_once(request: ChatRequest, attempt: int) -> ScriptedReply:
    if isinstance(request.messages[-1], UserMessage):
        return ScriptedReply(tool_calls=[ScriptedToolCall("stall", {}, "c1")])
    return ScriptedReply(text="gave up on it")


@pytest.mark.parametrize("seconds", [2.0, 7.5])
async def test_the_agents_tool_timeout_bounds_each_tool_call(
    backend: str, clock: object, tmp_path: Path, seconds: float
) -> None:
    config = AgentConfig(tool_timeout=seconds, turn_timeout=None)

    def executor(_: ToolRegistry) -> ToolExecutor:
        return ToolExecutor(ToolRegistry([stall]))

    async with rig(backend, tmp_path, calls_stall_once, config=config, executor=executor) as r:
        begun = trio.current_time()
        result = await r.session.ask(am.RunTurn(text="go"))
        assert (result.status, result.text) == ("completed", "gave up on it")
        log = await transcript(r.store, "s1")
        (answer,) = [m for m in log if isinstance(m, ToolMessage)]
        assert f"timed out after {seconds:g} s" in str(answer.content), answer
        if isinstance(clock, trio.testing.MockClock):
            assert trio.current_time() - begun < seconds + 1
