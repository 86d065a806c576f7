"""Server requests through the connection actor, against the official SDK's server over
stdio and streamable HTTP: roots from the configuration, elicitation answered by a
handler (declined when it takes too long)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
import trio

from agcore_actors.mcp import HttpServer, ServerConfig, StdioServer
from tests.mcp.servers import CONFIG, run_tools, running
from tests.peers.mcp import http_server, stdio_argv

pytestmark = pytest.mark.slow

ASKED: list[Any] = []


async def answer(server: str, params: Any) -> Any:
    ASKED.append((server, params["message"]))
    return {"action": "accept", "content": {"name": "Ada"}}


async def never(server: str, params: Any) -> Any:
    await trio.sleep_forever()


async def check(server: ServerConfig, tmp: str) -> None:
    config = attrs.evolve(
        CONFIG, roots=(tmp, "file:///srv/data"), requests={"elicitation/create": answer}
    )
    ASKED.clear()
    async with running({"srv": server}, config) as (_, _, executor, _):
        roots, asked = await run_tools(executor, ("srv-roots", {}), ("srv-ask", {}))
        assert roots.content.split() == [f"file://{tmp}", "file:///srv/data"]
        assert asked.content == "accept Ada"
        assert ASKED == [("srv", "What is your name?")]
    slow = attrs.evolve(
        CONFIG,
        client=attrs.evolve(CONFIG.client, server_request_timeout=1.0),
        requests={"elicitation/create": never},
    )
    async with running({"srv": server}, slow) as (_, _, executor, _):
        (declined,) = await run_tools(executor, ("srv-ask", {}))
        assert declined.content == "decline"


async def test_server_requests_over_stdio(tmp_path: Any) -> None:
    python, *args = stdio_argv("mcp2")
    await check(StdioServer(python, args), str(tmp_path.resolve()))


async def test_server_requests_over_http(tmp_path: Any) -> None:
    with http_server("mcp2") as url:
        await check(HttpServer(url), str(tmp_path.resolve()))
