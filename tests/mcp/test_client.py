"""MCP client units (spec §15.3 ported) and protocol corner cases against a
hand-written stdio server (tests/peers/mcp_raw_server.py), run as a real process."""

from __future__ import annotations

import os
import sys

import msgspec
import pytest
import trio

from agcore_actors.mcp import (
    ClientOptions,
    HttpServer,
    McpConfigError,
    McpConnectionClosed,
    McpError,
    McpEvent,
    McpMethodNotFound,
    McpProtocolError,
    McpServerError,
    StdioServer,
    child_environment,
    map_error,
    open_client,
    parse_config,
)
from agcore_actors.mcp._client import parse_tools, tool_result
from agcore_actors.mcp._jsonrpc import JsonRpcError, JsonRpcRequest, decode, encode
from tests.peers.mcp import RAW_SERVER

RAW = str(RAW_SERVER)

# -- §15.3 ----------------------------------------------------------------------


def test_transport_debug() -> None:
    assert "echo" in repr(StdioServer("echo", ["hello"]))


def test_client_options() -> None:
    assert ClientOptions().request_timeout == 30.0  # the seed's default
    assert ClientOptions(request_timeout=60).request_timeout == 60


def test_jsonrpc_request_serialize() -> None:
    data = msgspec.json.decode(encode(JsonRpcRequest(id=42, method="test", params={"a": 1})))
    assert data == {"jsonrpc": "2.0", "id": 42, "method": "test", "params": {"a": 1}}
    assert b"params" not in encode(JsonRpcRequest(id=1, method="ping"))


def test_jsonrpc_response_parse_ok() -> None:
    (msg,) = decode(b'{"jsonrpc":"2.0","id":1,"result":{"foo":"bar"}}')
    assert msg.is_response and msg.id == 1 and msg.result == {"foo": "bar"} and msg.error is None


def test_jsonrpc_response_parse_error() -> None:
    raw = b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'
    (msg,) = decode(raw)
    assert msg.result is msgspec.UNSET and msg.error is not None and msg.error.code == -32601


async def test_streamable_http_unreachable_is_typed() -> None:
    # Δ seed: streamable HTTP is implemented; an unreachable server is a typed error.
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(McpConnectionClosed):
        async with open_client("x", HttpServer(f"http://127.0.0.1:{port}/mcp")):
            pass


# -- error mapping and result shapes ------------------------------------------


def test_unknown_method_both_dialects() -> None:
    assert isinstance(map_error("x", JsonRpcError(-32601, "Method not found")), McpMethodNotFound)
    old = map_error("x", JsonRpcError(-32602, "Invalid request parameters"))
    assert isinstance(old, McpMethodNotFound) and old.code == -32602
    real_bad_params = map_error("tools/call", JsonRpcError(-32602, "Invalid request parameters"))
    assert type(real_bad_params) is McpServerError
    assert type(map_error("x", JsonRpcError(0, "Request cancelled"))) is McpServerError


def test_tool_result_and_is_error() -> None:
    r = tool_result({"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert r.is_error and r.text == "boom"  # Δ seed: isError is kept with text
    s = tool_result({"content": [], "structuredContent": {"x": 1}})
    assert s.structured == {"x": 1} and not s.is_error
    with pytest.raises(McpProtocolError):
        tool_result([1])


def test_parse_tools_shapes() -> None:
    tools, cursor = parse_tools({"tools": [{"name": "a"}], "nextCursor": "2"})
    assert tools[0].input_schema == {"type": "object", "properties": {}} and cursor == "2"
    for bad in ({}, {"tools": 3}, {"tools": [{"description": "no name"}]}):
        with pytest.raises(McpProtocolError):
            parse_tools(bad)


# -- configuration --------------------------------------------------------------


def test_mcp_servers_config() -> None:
    servers = parse_config(
        {
            "mcpServers": {
                "fs": {"command": "npx", "args": ["-y", "x"], "env": {"A": "1"}},
                "web": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer t"}},
                "off": {"command": "x", "disabled": True},
            }
        }
    )
    assert servers == {
        "fs": StdioServer("npx", ["-y", "x"], {"A": "1"}),
        "web": HttpServer("http://h/mcp", {"Authorization": "Bearer t"}),
    }


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {"mcpServers": {"a": {}}},
        {"mcpServers": {"a": {"command": "x", "url": "y"}}},
        {"mcpServers": {"a": {"command": 3}}},
        {"mcpServers": {"a": "x"}},
    ],
)
def test_bad_config_is_refused(bad: object) -> None:
    with pytest.raises(McpConfigError):
        parse_config(bad)


def test_child_environment_allow_list() -> None:
    parent = {"PATH": "/bin", "HOME": "/h", "OPENAI_API_KEY": "sk-x", "EXTRA": "e", "SHELL": "()"}
    env = child_environment(StdioServer("x", env={"MINE": "1"}, inherit_env=["EXTRA"]), parent)
    assert env == {"PATH": "/bin", "HOME": "/h", "EXTRA": "e", "MINE": "1"}


# -- a real process with corner cases ---------------------------------------------


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


async def test_stubborn_server_is_killed_and_reaped() -> None:
    options = ClientOptions(shutdown_grace=0.3)
    async with open_client(
        "raw", StdioServer(sys.executable, [RAW, "stubborn"]), options=options
    ) as c:
        process = c.transport.process  # type: ignore[attr-defined]
        start = trio.current_time()
    assert process.returncode is not None and process.returncode < 0  # killed by a signal
    assert trio.current_time() - start < 5
    with pytest.raises(ProcessLookupError):
        os.kill(process.pid, 0)  # reaped: not even a zombie


async def test_missing_command_is_typed() -> None:
    with pytest.raises(McpError):
        async with open_client("x", StdioServer("/nonexistent/mcp-server")):
            pass
