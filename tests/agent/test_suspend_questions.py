"""One call that needs approval and then asks two questions (``approvals`` and
``elicitations`` both ``"suspend"``): the turn suspends three times — for the approval,
then for each question in order (``<call>.e1``, ``<call>.e2``) — across host restarts;
each resumed run finds the earlier answers, so the call's kept run sees both answers,
and it runs to completion once. The questions reach the session as an MCP server's
elicitation does (see ``suspend_rig``)."""

from __future__ import annotations

import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import AgentConfig, transcript_errors
from agcore_actors.llm import ToolMessage
from tests.agent import suspend_rig as rig
from tests.agent.stores import start_store, transcript

BOTH = AgentConfig(approvals="suspend", elicitations="suspend", turn_timeout=None)


async def test_an_approval_and_two_questions_of_one_call_suspend_it_in_turn(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    rig.RUNS.clear()
    store, _ = await start_store(system)
    r = rig.Rig(system, store, BOTH, tool=rig.approved_asking)
    async with r.host() as host:
        first = await host.run("s", "t1", turn="t1")
        assert [(c.call_id, c.kind) for c in first.awaiting] == [("t1-g", "approval")]
    async with r.host() as host:
        got = await host.answer("s", "t1", "t1-g")
        assert got.result is not None and got.result.status == "suspended"
        (asked,) = got.result.awaiting
        assert (asked.call_id, asked.kind, asked.message) == ("t1-g.e1", "elicitation", "first t1?")
        assert asked.tool_call == "t1-g" and asked.name == "guarded"
    async with r.host() as host:
        got = await host.answer("s", "t1", "t1-g.e1", action="accept", content={"v": "A"})
        assert got.result is not None and got.result.status == "suspended"
        assert [c.call_id for c in got.result.awaiting] == ["t1-g.e2"]
        again = await host.answer("s", "t1", "t1-g", allow=False)
        assert again.status == "duplicate" and again.allow
    async with r.host() as host:
        got = await host.answer("s", "t1", "t1-g.e2", allow=False)  # decline
        assert got.result is not None and got.result.status == "completed"
        assert got.result.text == "done t1"
    assert rig.RUNS == {"t1-f": 1, "t1-g": 1}
    log = await transcript(store, "s")
    assert transcript_errors(log) == []
    results = [(m.tool_call_id, m.content) for m in log if isinstance(m, ToolMessage)]
    assert ("t1-g", "A decline") in results
    assert sum(call == "t1-g" for call, _ in results) == 1
