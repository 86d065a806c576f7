"""Calls their tool defers (``CallDeferred``): in a durable turn the call is awaited as
``deferred`` and the turn suspends; an answer with the call's ``result`` — after a host
restart, through ``SessionHost`` or ``serve --http`` — resumes the turn without running
the tool again; a denial becomes the call's result; the same answer again is a
``duplicate``. In a turn that is not durable the model sees the deferral as the call's
error result."""

from __future__ import annotations

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import AgentConfig, transcript_errors
from agcore_actors.llm import ToolMessage
from tests.agent import suspend_rig as rig
from tests.agent.stores import start_store, transcript
from tests.serve.test_http_resume import server

DURABLE = AgentConfig(interrupted="resume", turn_timeout=None)


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    rig.RUNS.clear()
    rig.DEFERRED.clear()


async def test_a_deferred_call_suspends_the_turn_and_its_given_result_resumes_it(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store, _ = await start_store(system)
    r = rig.Rig(system, store, DURABLE, deferring=True)
    async with r.host() as host:
        result = await host.run("s", "t1", turn="t1")
        assert result.status == "suspended"
        (waiting,) = result.awaiting
        assert (waiting.call_id, waiting.kind, waiting.name) == ("t1-g", "deferred", "guarded")
        assert waiting.message == "the result comes later: sent for review"
        assert rig.RUNS == {"t1-f": 1} and rig.DEFERRED == {"t1-g": 1}
    async with r.host() as host:  # a restart: only the store is left
        got = await host.answer("s", "t1", "t1-g", result="reviewed: fine")
        assert got.status == "resumed"
        assert got.result is not None and got.result.text == "done t1"
        again = await host.answer("s", "t1", "t1-g", result="other")
        assert again.status == "duplicate"
        assert (await host.run("s", "t2", turn="t2")).status == "suspended"
        denied = await host.answer("s", "t2", "t2-g", allow=False, reason="not now")
        assert denied.result is not None and denied.result.status == "completed"
    assert rig.DEFERRED == {"t1-g": 1, "t2-g": 1}  # never run again once answered
    log = await transcript(store, "s")
    assert transcript_errors(log) == []
    results = {m.tool_call_id: m.content for m in log if isinstance(m, ToolMessage)}
    assert results["t1-g"] == "reviewed: fine"
    assert results["t2-g"] == "Error: the call was denied: not now"


async def test_a_deferred_call_in_a_turn_that_is_not_durable_is_an_error_result(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store, _ = await start_store(system)
    r = rig.Rig(system, store, AgentConfig(turn_timeout=None), deferring=True)
    async with r.host() as host:
        result = await host.run("s", "t1", turn="t1")
    assert result.status == "completed" and result.text == "done t1"
    log = await transcript(store, "s")
    results = {m.tool_call_id: m.content for m in log if isinstance(m, ToolMessage)}
    assert results["t1-g"] == "Error: the result comes later: sent for review"


async def test_a_deferred_call_is_answered_with_its_result_over_http() -> None:
    from agcore_actors.store import InMemorySessions, session_store_spec

    async with ActorSystem() as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        r = rig.Rig(system, store, DURABLE, deferring=True)
        async with server(r) as client:
            reply = await client.post("/v1/sessions/a/turns", json={"text": "t1", "turn": "t1"})
            body = reply.json()
            assert body["status"] == "suspended", body
            assert body["awaiting"][0]["kind"] == "deferred"
        async with server(r) as client:
            path = "/v1/sessions/a/turns/t1/answers/t1-g"
            reply = await client.post(path, json={"result": "42"})
            assert reply.status_code == 200, reply.text
            assert reply.json()["result"]["text"] == "done t1"
    assert rig.DEFERRED == {"t1-g": 1}
