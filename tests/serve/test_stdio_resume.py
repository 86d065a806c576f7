"""Suspended turns through ``serve --stdio``: a turn that waits for approval ends with
``turn_suspended``; after the server and its host are restarted on the same store, an
``answer`` line resumes it (its line carries the resumed turn's result); the same answer
again is a ``duplicate``; an answer no turn waits for, a ``resume`` of a turn that still
waits and a malformed line each get one ``error`` line and change nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.serve import StdioConfig, serve_stdio
from agcore_actors.serve._errors import BadCommand
from agcore_actors.serve._resume import AnswerCommand, ResumeCommand, parse_stdio
from agcore_actors.store import InMemorySessions, session_store_spec
from tests.agent import suspend_rig as rig


async def _session(r: rig.Rig, *commands: dict[str, Any]) -> list[dict[str, Any]]:
    """Serve ``commands`` over stdio on a new host of ``r`` (a restart, each time) until
    end of input; the lines written."""
    to_serve, source = trio.testing.memory_stream_one_way_pair()
    sink, from_serve = trio.testing.memory_stream_one_way_pair()
    out = bytearray()

    async def read() -> None:
        while chunk := await from_serve.receive_some():
            out.extend(chunk)

    async with r.host() as host, trio.open_nursery() as nursery:
        nursery.start_soon(read)
        served = trio.Event()

        async def serve() -> None:
            await serve_stdio(host, source, sink, StdioConfig(signals=False))
            await sink.aclose()
            served.set()

        nursery.start_soon(serve)
        for command in commands:
            await to_serve.send_all(json.dumps(command).encode() + b"\n")
        await to_serve.aclose()
        await served.wait()
    return [json.loads(line) for line in bytes(out).splitlines()]


async def test_a_suspended_turn_is_answered_over_stdio_after_a_restart() -> None:
    rig.RUNS.clear()
    async with ActorSystem() as system:
        store: ActorRef[Any] = await system.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        r = rig.Rig(system, store, rig.SUSPEND)
        first = await _session(r, {"session": "a", "text": "t1", "turn": "t1"})
        final = first[-1]
        assert final["event"] == "turn_suspended" and final["status"] == "suspended"
        assert [c["call_id"] for c in final["result"]["awaiting"]] == ["t1-g"]
        early = await _session(r, {"session": "a", "resume": True})
        assert [(x["event"], x["error_kind"]) for x in early] == [("error", "session_suspended")]
        second = await _session(
            r,
            {"session": "a", "answer": "t1-g", "turn": "t1", "allow": True},
        )
        assert len(second) == 1
        (resumed,) = second
        assert resumed["event"] == "answer" and resumed["status"] == "resumed"
        assert resumed["result"]["status"] == "completed"
        assert resumed["result"]["text"] == "done t1" and resumed["result"]["session"] == "a"
        third = await _session(
            r,
            {"session": "a", "answer": "t1-g", "turn": "t1", "allow": False},
            {"session": "a", "answer": "t9-g", "turn": "t9"},
            {"session": "a", "answer": "t1-g", "turn": "t1", "allow": "yes"},
            {"session": "a", "resume": True},
        )
        by_kind = sorted((x["event"], x.get("status") or x.get("error_kind")) for x in third)
        assert by_kind == [
            ("answer", "duplicate"),
            ("error", "bad_command"),
            ("error", "stale_answer"),
            ("error", "stale_answer"),  # nothing is open to resume
        ]
        duplicate = next(x for x in third if x["event"] == "answer")
        assert duplicate["allow"] is True  # the first answer's
    assert rig.RUNS == {"t1-f": 1, "t1-g": 1}


@pytest.mark.parametrize(
    "line",
    [
        {"session": "a", "answer": "c", "turn": "t", "extra": 1},
        {"session": "a", "answer": "c"},
        {"session": "a", "answer": "c", "turn": "t", "result": 3},
        {"session": "a", "resume": False},
        {"session": "a", "resume": True, "turn": "t"},
        {"session": "../a", "resume": True},
    ],
)
def test_a_malformed_answer_or_resume_line_is_a_bad_command(line: dict[str, Any]) -> None:
    with pytest.raises(BadCommand):
        parse_stdio(line)


def test_an_answer_line_carries_the_http_fields() -> None:
    line = {"session": "a", "answer": "c", "turn": "t", "reason": "no", "allow": False}
    assert parse_stdio(line) == AnswerCommand(
        "a", "t", "c", {"allow": False, "reason": "no", "result": None, "resume": True}
    )
    assert parse_stdio({"session": "a", "resume": True}) == ResumeCommand("a")
