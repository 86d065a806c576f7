"""The legacy HTTP+SSE transport (``"type": "sse"``) against the official SDK's server
(2.x and 1.x, a real process): tools listed and called, a tool's error, server requests
(roots, elicitation) answered over the one stream, and concurrent sessions each getting
their own elicitation (the connection runs one session's calls at a time, as over stdio:
nothing on this wire relates a request to a call); a server that is not there fails to
connect."""

from __future__ import annotations

from typing import Any

import pytest

from agcore_actors.mcp import (
    ClientOptions,
    HttpServer,
    McpConnectionClosed,
    open_client,
    parse_config,
)
from tests.mcp.test_elicitation_turns import each_session_answers_its_own
from tests.mcp.test_server_requests import check
from tests.peers import free_port
from tests.peers.mcp import sse_server

pytestmark = pytest.mark.slow

OPTIONS = ClientOptions(request_timeout=20, connect_timeout=20)


@pytest.mark.parametrize("peer", ["mcp2", "mcp1"])
async def test_tools_over_the_legacy_sse_transport(peer: str) -> None:
    with sse_server(peer) as url:
        (server,) = parse_config({"mcpServers": {"old": {"type": "sse", "url": url}}}).values()
        assert server == HttpServer(url, sse=True)
        async with open_client("old", server, options=OPTIONS) as client:
            names = {tool.name for tool in await client.list_tools()}
            assert {"add", "echo", "ask"} <= names
            assert (await client.call_tool("add", {"a": 2, "b": 3})).text == "5"
            failed = await client.call_tool("fail", {"message": "no"})
            assert failed.is_error and "fail" in failed.text
            await client.ping()


async def test_server_requests_over_the_legacy_sse_transport(tmp_path: Any) -> None:
    with sse_server("mcp2") as url:
        await check(HttpServer(url, sse=True), str(tmp_path.resolve()))


async def test_concurrent_sessions_over_sse_each_get_their_own_elicitation() -> None:
    with sse_server("mcp2") as url:
        await each_session_answers_its_own(HttpServer(url, sse=True))


async def test_no_server_is_a_failed_connection() -> None:
    server = HttpServer(f"http://127.0.0.1:{free_port()}/sse", sse=True)
    with pytest.raises(McpConnectionClosed):
        async with open_client("gone", server, options=OPTIONS):
            pass
