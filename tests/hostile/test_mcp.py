"""Hostile JSON-RPC frames from an MCP server: every request ends in a typed
:class:`McpError` or a clean result — never another exception or a hang — and the
connection still answers a valid request afterwards.

Hypothesis drives :class:`McpClient` over an in-memory transport on trio's virtual
clock; the corpus (``corpus/jsonrpc``, ``{{ID}}`` standing for the request's id) is
served by a real stdio server process, through :func:`open_client` and through the
supervised connection actor and the tool executor.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors.actor import Backoff
from agcore_actors.mcp import (
    ClientOptions,
    ConnectionConfig,
    McpClient,
    McpError,
    McpToolResult,
    ServerConfig,
    StdioServer,
    open_client,
)
from agcore_actors.tools import ToolStatus
from tests.hostile.hostile import CORPUS, corpus, json_values, shaped
from tests.mcp.servers import run_tools, running

SERVER = Path(__file__).resolve().parent / "mcp_server.py"
OPTIONS = ClientOptions(request_timeout=5.0, connect_timeout=10.0, shutdown_grace=1.0)

_keys = st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error", "content"])
_junk = json_values(_keys)
#: Where a frame carries the id of the request it answers.
SAME_ID = "\x00same-id"
_ids = st.sampled_from([SAME_ID, SAME_ID, "other"]) | st.integers() | _junk
_result = shaped(
    {
        "content": [{"type": st.sampled_from(["text", "image"]), "text": st.text(max_size=5)}],
        "structuredContent": _junk,
        "isError": st.booleans(),
        "tools": [{"name": st.text(max_size=5), "inputSchema": _junk}],
        "nextCursor": st.text(max_size=3),
    },
    _junk,
)
_frame = shaped(
    {
        "jsonrpc": st.just("2.0"),
        "id": _ids,
        "method": st.sampled_from(["ping", "notifications/message", "x/y"]),
        "params": _junk,
        "result": _result,
        "error": {"code": st.integers(-33000, 0), "message": st.text(max_size=5), "data": _junk},
    },
    _junk,
)
_line = _frame | st.lists(_frame, max_size=3)


def _render(frame: Any, request_id: int | str) -> bytes:
    text = json.dumps(frame)
    return text.replace(json.dumps(SAME_ID), json.dumps(request_id)).encode()


class ScriptedTransport:
    """Answers ``initialize`` and ``ping``; each other request gets the next scripted
    lines (raw bytes or frames), delivered as the server would."""

    def __init__(self, script: list[bytes | Any]) -> None:
        self.script = script
        self.deliver: Any = None

    async def start(
        self, nursery: trio.Nursery, deliver: Any, fail: Any, closed: Any, waiting: Any
    ) -> None:
        self.deliver = deliver

    async def send(self, data: bytes, request_id: int | str | None) -> None:
        await trio.lowlevel.checkpoint()
        message = json.loads(data)
        method = message.get("method")
        if request_id is None:
            return
        if method == "initialize":
            result = {"protocolVersion": message["params"]["protocolVersion"]}
            self.deliver(_render({"jsonrpc": "2.0", "id": request_id, "result": result}, 0))
        elif method == "ping":
            self.deliver(_render({"jsonrpc": "2.0", "id": request_id, "result": {}}, 0))
        else:
            for line in self.script:
                self.deliver(line if isinstance(line, bytes) else _render(line, request_id))

    def negotiated(self, protocol_version: str) -> None:
        return None

    async def initialized(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


async def _exchange(script: list[bytes | Any], method: str) -> object:
    transport = ScriptedTransport(script)
    client = McpClient("hostile", transport, OPTIONS, on_event=None)
    with trio.fail_after(60):  # virtual time: a hang fails the test
        # What open_client does, with a transport of our own.
        await transport.start(None, client._deliver, client._fail, client._closed, client._waiting)  # type: ignore[arg-type]
        await client.initialize()
        try:
            if method == "tools/call":
                outcome: object = await client.call_tool("t", {})
            else:
                outcome = await client.list_tools()
        except McpError as error:
            outcome = error
        await client.ping()  # the client still works
    return outcome


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    script=st.lists(_line | st.binary(max_size=30), max_size=4),
    method=st.sampled_from(["tools/call", "tools/list"]),
)
def test_any_frames_end_a_request_in_a_result_or_a_typed_error(
    script: list[bytes | Any], method: str
) -> None:
    clock = trio.testing.MockClock(autojump_threshold=0)
    outcome = trio.run(_exchange, script, method, clock=clock)
    assert isinstance(outcome, McpToolResult | list | McpError), outcome


# -- the corpus, from a real stdio server ----------------------------------------------------

CASES = [pytest.param(p.name, id=p.name) for p in corpus("jsonrpc")]
ACTOR_CONFIG = ConnectionConfig(client=OPTIONS, backoff=Backoff(initial=0.05, cap=0.2, jitter=0.0))
CONFIG = StdioServer(command=sys.executable, args=[str(SERVER), str(CORPUS / "jsonrpc")])


@pytest.mark.parametrize("case", CASES)
async def test_corpus_frame_is_a_typed_error_or_a_result_and_the_client_lives_on(
    case: str,
) -> None:
    async with open_client("hostile", CONFIG, options=OPTIONS) as client:
        with trio.fail_after(30):
            try:
                result = await client.call_tool("hostile", {"case": case}, timeout=2.0)
                msgspec.json.encode(result)  # what a tool message is made of
            except McpError:
                pass
            echoed = await client.call_tool("echo", {"after": case})
    assert json.loads(echoed.text) == {"after": case}


@pytest.mark.parametrize("case", CASES)
async def test_corpus_frame_is_one_tool_result_through_the_connection_actor(case: str) -> None:
    servers: dict[str, ServerConfig] = {"hostile": CONFIG}
    async with running(servers, ACTOR_CONFIG) as (_, _, executor, _):
        with trio.fail_after(60):
            (result,) = await run_tools(executor, ("hostile-hostile", {"case": case}))
            assert result.status in (ToolStatus.OK, ToolStatus.ERROR, ToolStatus.TIMEOUT)
            (echoed,) = await run_tools(executor, ("hostile-echo", {"after": case}))
    assert echoed.status == ToolStatus.OK, echoed
