"""The protocol client against real processes: the hand-written corner-case server
(tests/peers/mcp_raw_server.py) and the official SDK on both lines."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio

from agcore_actors.mcp import (
    ClientOptions,
    HttpServer,
    McpConnectionClosed,
    McpError,
    McpEvent,
    McpMethodNotFound,
    McpProtocolError,
    StdioServer,
    open_client,
)
from tests.peers.mcp import RAW_SERVER

RAW = str(RAW_SERVER)


def test_client_options() -> None:
    assert ClientOptions().request_timeout == 30.0
    assert ClientOptions(request_timeout=60).request_timeout == 60


async def test_streamable_http_unreachable_is_typed() -> None:
    # An unreachable server is a typed error, not a transport exception.
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(McpConnectionClosed):
        async with open_client("x", HttpServer(f"http://127.0.0.1:{port}/mcp")):
            pass


async def test_pagination_server_requests_and_garbage() -> None:
    events: list[McpEvent] = []
    async with open_client(
        "raw", StdioServer(sys.executable, [RAW, "paged"]), on_event=events.append
    ) as c:
        tools = await c.list_tools()
        assert [t.name for t in tools] == ["t0", "t1", "t2", "t3", "t4"]
        result = await c.call_tool("t0", {})
        assert result.text == "a\nb"  # non-text parts are skipped in the text
        assert [e.method for e in events] == ["notifications/resources/updated"]
        with pytest.raises(McpMethodNotFound):
            await c.request("resources/list")


async def test_unsupported_protocol_version() -> None:
    with pytest.raises(McpProtocolError, match="1999-01-01"):
        async with open_client("raw", StdioServer(sys.executable, [RAW, "old"])):
            pass


async def test_missing_command_is_typed() -> None:
    with pytest.raises(McpError):
        async with open_client("x", StdioServer("/nonexistent/mcp-server")):
            pass


@pytest.mark.slow
async def test_unknown_method_is_typed_on_both_lines(stdio_peer: str, peers: Any) -> None:
    python, *args = peers.stdio_argv(stdio_peer)
    async with open_client("srv", StdioServer(python, args)) as client:
        with pytest.raises(McpMethodNotFound) as info:
            await client.request("no/such/method")
        assert info.value.code == (-32601 if stdio_peer == "mcp2" else -32602)
        await client.ping()
