"""An MCP server's elicitation answered through ``serve``: over HTTP the turn's event
stream shows ``elicitation_requested`` and ``POST /v1/sessions/{id}/elicitations/{eid}``
answers it (the tool sees the answer); over stdio an ``elicitation`` line answers it; a
malformed answer is refused and changes nothing."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
import trio

from agcore_actors.mcp import StdioServer
from agcore_actors.serve import HttpConfig, StdioConfig, serve_http, serve_stdio
from agcore_actors.serve._elicit import parse_elicitation
from agcore_actors.serve._errors import BadCommand
from tests.mcp.test_elicitation_turns import hosted
from tests.peers.mcp import http_server, stdio_argv

pytestmark = pytest.mark.slow


async def test_an_elicitation_is_answered_through_serve_http() -> None:
    with http_server("mcp2") as url:
        async with hosted(url) as host, trio.open_nursery() as nursery:
            config = HttpConfig(port=0)
            base = await nursery.start(serve_http, host, config)
            headers = {"authorization": f"Bearer {config.token}"}
            events: list[dict[str, Any]] = []
            async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
                turn = client.stream("POST", "/v1/sessions/s1/turns", json={"text": "ask"})
                async with turn as response:
                    async for line in response.aiter_lines():
                        if not line.startswith("data: "):
                            continue
                        event = json.loads(line[6:])
                        events.append(event)
                        if event["event"] == "elicitation_requested":
                            eid = event["elicitation_id"]
                            path = f"/v1/sessions/s1/elicitations/{eid}"
                            bad = await client.post(path, json={"action": "maybe"})
                            assert bad.status_code == 400, bad.text
                            r = await client.post(
                                path, json={"action": "accept", "content": {"name": "Ada"}}
                            )
                            assert r.json() == {"answered": True}
            nursery.cancel_scope.cancel()
    kinds = [e["event"] for e in events]
    assert "elicitation_requested" in kinds
    assert events[-1]["event"] == "turn_completed"
    assert events[-1]["result"]["text"] == "tool said: accept Ada"


async def test_an_elicitation_is_answered_through_serve_stdio() -> None:
    with http_server("mcp2") as url:
        async with hosted(url) as host:
            to_serve, source = trio.testing.memory_stream_one_way_pair()
            sink, from_serve = trio.testing.memory_stream_one_way_pair()
            lines: list[dict[str, Any]] = []
            async with trio.open_nursery() as nursery:
                nursery.start_soon(serve_stdio, host, source, sink, StdioConfig(signals=False))
                await to_serve.send_all(b'{"session": "s1", "text": "ask"}\n')
                buffer = b""
                with trio.fail_after(60):
                    while not lines or lines[-1].get("event") != "turn_completed":
                        buffer += await from_serve.receive_some()
                        *done, buffer = buffer.split(b"\n")
                        for raw in done:
                            line = json.loads(raw)
                            lines.append(line)
                            if line.get("event") == "elicitation_requested":
                                answer = {
                                    "session": "s1",
                                    "elicitation": line["elicitation_id"],
                                    "action": "accept",
                                    "content": {"name": "Ada"},
                                }
                                await to_serve.send_all(json.dumps(answer).encode() + b"\n")
                await to_serve.aclose()
    answered = [line for line in lines if line.get("event") == "elicitation"]
    assert answered and answered[0]["answered"] is True
    assert lines[-1]["result"]["text"] == "tool said: accept Ada"


async def test_concurrent_elicitations_over_serve_stdio_each_reach_their_session() -> None:
    """Four sessions' turns at once through ``serve --stdio``, their tools on one stdio
    MCP server (where the wire relates no request to a call): each elicitation line names
    its own session, and each tool gets the answer that session gave."""
    python, app, mode = stdio_argv("mcp2")
    sessions = [f"s{i}" for i in range(4)]
    async with hosted(StdioServer(command=python, args=[app, mode])) as host:
        to_serve, source = trio.testing.memory_stream_one_way_pair()
        sink, from_serve = trio.testing.memory_stream_one_way_pair()
        done: dict[str, str] = {}
        asked: list[str] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve_stdio, host, source, sink, StdioConfig(signals=False))
            for session in sessions:
                await to_serve.send_all(json.dumps({"session": session, "text": "ask"}).encode())
                await to_serve.send_all(b"\n")
            buffer = b""
            with trio.fail_after(120):
                while len(done) < len(sessions):
                    buffer += await from_serve.receive_some()
                    *lines, buffer = buffer.split(b"\n")
                    for raw in lines:
                        line = json.loads(raw)
                        session = line.get("session")
                        if line.get("event") == "elicitation_requested":
                            asked.append(session)
                            answer = {
                                "session": session,
                                "elicitation": line["elicitation_id"],
                                "action": "accept",
                                "content": {"name": session},
                            }
                            await to_serve.send_all(json.dumps(answer).encode() + b"\n")
                        elif line.get("event") == "turn_completed":
                            done[session] = line["result"]["text"]
            await to_serve.aclose()
    assert sorted(asked) == sessions
    assert done == {session: f"tool said: accept {session}" for session in sessions}


@pytest.mark.parametrize(
    "body",
    [
        {"action": "accept", "content": "Ada"},
        {"action": "decline", "content": {"name": "Ada"}},
        {"action": "yes"},
        {"action": "accept", "colour": "red"},
        {"session": "s1", "action": "accept"},
    ],
)
def test_a_malformed_answer_is_a_bad_command(body: dict[str, Any]) -> None:
    with pytest.raises(BadCommand):
        parse_elicitation({**body, "elicitation": "e1"}, session="s1")
