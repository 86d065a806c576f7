"""Server requests through the connection actor, against the official SDK's server over
stdio and streamable HTTP: roots from the configuration, elicitation answered by a
handler (declined when it takes too long); a request knows the session and the tool call
it serves."""

from __future__ import annotations

import contextlib
from typing import Any

import attrs
import pytest
import trio

from agcore_actors.mcp import HttpServer, ServerConfig, StdioServer
from agcore_actors.mcp._requests import requesting_call, requesting_session
from agcore_actors.tools import ExecuteTools, ToolCall
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


OWNERS: list[tuple[str, str]] = []


async def whose(server: str, params: Any) -> Any:
    OWNERS.append((requesting_session(), requesting_call()))
    return {"action": "decline"}


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_server_request_knows_the_session_and_the_call_it_serves(
    transport: str,
) -> None:
    """Over streamable HTTP by the response stream it came on; over stdio because the
    session has that one call in flight."""
    OWNERS.clear()
    config = attrs.evolve(CONFIG, requests={"elicitation/create": whose})
    call = ToolCall(id="k7", name="srv-ask", arguments="{}")
    with contextlib.ExitStack() as stack:
        if transport == "http":
            server: ServerConfig = HttpServer(stack.enter_context(http_server("mcp2")))
        else:
            python, *args = stdio_argv("mcp2")
            server = StdioServer(python, args)
        async with running({"srv": server}, config) as (_, _, executor, _):
            request = ExecuteTools(batch_id="b", calls=[call], session_id="s1")
            (result,) = (await executor.ask(request)).results
    assert result.content == "decline"
    assert OWNERS == [("s1", "k7")]
