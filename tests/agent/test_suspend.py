"""Suspended and resumed turns through SessionHost: a turn waiting for approval is
stored and the session freed; the answer, also after a host restart, resumes it and runs
only the calls that had not completed; answers given twice count once; answers for a
cancelled turn are refused with a typed error; a turn cut off mid-batch resumes without
re-running a completed call."""

from __future__ import annotations

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import (
    SessionSuspended,
    StaleAnswer,
    transcript_errors,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import ToolMessage
from tests.agent import suspend_rig as rig
from tests.agent.stores import start_store, transcript


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    rig.RUNS.clear()
    rig.STALL_ONCE.clear()


async def test_an_approval_suspends_the_turn_and_an_answer_after_a_restart_resumes_it(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store, _ = await start_store(system)
    r = rig.Rig(system, store, rig.SUSPEND)
    async with r.host() as host:
        result = await host.run("s", "t1", turn="t1")
        assert result.status == "suspended"
        assert [c.call_id for c in result.awaiting] == ["t1-g"]
        assert rig.RUNS == {"t1-f": 1}  # the free call ran; the guarded one waits
        info = await host.ask("s", am.GetSessionInfo())
        assert info.suspended_turn == "t1" and [c.call_id for c in info.awaiting] == ["t1-g"]
        with pytest.raises(SessionSuspended):
            await host.run("s", "t2", turn="t2")
    async with r.host() as host:  # a restart: only the store is left
        info = await host.ask("s", am.GetSessionInfo())
        assert info.suspended_turn == "t1"
        answer = await host.ask("s", am.AnswerTurn(turn="t1", call_id="t1-g", allow=True))
        assert answer.status == "resumed"
        assert answer.result is not None and answer.result.status == "completed"
        assert answer.result.text == "done t1"
        again = await host.ask("s", am.AnswerTurn(turn="t1", call_id="t1-g", allow=False))
        assert again.status == "duplicate" and again.allow
        assert rig.RUNS == {"t1-f": 1, "t1-g": 1}
        info = await host.ask("s", am.GetSessionInfo())
        assert info.suspended_turn is None and info.awaiting == []
        assert (await host.run("s", "t2", turn="t2")).status == "suspended"
        assert await host.ask("s", am.CancelTurn())
    log = await transcript(store, "s")
    assert transcript_errors(log) == []
    assert sum(isinstance(m, ToolMessage) and m.tool_call_id == "t1-g" for m in log) == 1


async def test_a_denied_call_does_not_run_and_a_given_result_replaces_it(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store, _ = await start_store(system)
    r = rig.Rig(system, store, rig.SUSPEND)
    async with r.host() as host:
        await host.run("s", "t1", turn="t1")
        denied = await host.ask(
            "s", am.AnswerTurn(turn="t1", call_id="t1-g", allow=False, reason="no")
        )
        assert denied.result is not None and denied.result.status == "completed"
        await host.run("s", "t2", turn="t2")
        given = await host.ask("s", am.AnswerTurn(turn="t2", call_id="t2-g", result="by hand"))
        assert given.result is not None and given.result.status == "completed"
    assert "t1-g" not in rig.RUNS and "t2-g" not in rig.RUNS
    log = await transcript(store, "s")
    results = {m.tool_call_id: m.content for m in log if isinstance(m, ToolMessage)}
    assert "denied" in str(results["t1-g"]) and results["t2-g"] == "by hand"
    assert transcript_errors(log) == []


async def test_an_answer_for_a_cancelled_turn_is_refused_with_a_typed_error(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store, _ = await start_store(system)
    r = rig.Rig(system, store, rig.SUSPEND)
    async with r.host() as host:
        await host.run("s", "t1", turn="t1")
        assert await host.ask("s", am.CancelTurn())
    async with r.host() as host:
        with pytest.raises(StaleAnswer) as caught:
            await host.ask("s", am.AnswerTurn(turn="t1", call_id="t1-g"))
        assert caught.value.why == "cancelled" and caught.value.kind == "stale_answer"
        with pytest.raises(StaleAnswer):
            await host.ask("s", am.AnswerTurn(turn="nope", call_id="x"))
        assert (await host.run("s", "t2", turn="t2")).status == "suspended"  # goes on
        assert await host.ask("s", am.CancelTurn())
    assert "t1-g" not in rig.RUNS
    assert transcript_errors(await transcript(store, "s")) == []


async def test_two_answers_to_one_call_at_once_count_once(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store, _ = await start_store(system)
    r = rig.Rig(system, store, rig.SUSPEND)
    async with r.host() as host:
        await host.run("s", "t1", turn="t1")
        got: list[am.AnswerResult] = []

        async def answer(allow: bool) -> None:
            got.append(await host.answer("s", "t1", "t1-g", allow=allow))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer, True)
            nursery.start_soon(answer, False)
        assert sorted(a.status for a in got) == ["duplicate", "resumed"]
        first = next(a for a in got if a.status == "resumed")
        second = next(a for a in got if a.status == "duplicate")
        assert second.allow == first.allow  # the first answer's, whichever came first
    assert rig.RUNS["t1-g"] == (1 if first.allow else 0)
    log = await transcript(store, "s")
    assert transcript_errors(log) == []
    assert sum(isinstance(m, ToolMessage) and m.tool_call_id == "t1-g" for m in log) == 1
