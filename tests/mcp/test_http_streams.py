"""The streams of streamable HTTP against the official SDK's server over real HTTP: the
listening GET stream (messages outside any request) and the resumption of a response
stream the server closes mid-call."""

from __future__ import annotations

import pytest
import trio

from agcore_actors.mcp import ClientOptions, HttpServer, ListTools, McpEvent, open_client
from tests.mcp.servers import run_tools, running, wait_for
from tests.peers.mcp import http_server

pytestmark = pytest.mark.slow


async def test_list_changed_over_http_updates_the_registry() -> None:
    # Fails on the client without a listening stream: the SDK sends the notification
    # on the GET stream (it belongs to no request), and it was lost.
    with http_server("mcp2") as url:
        async with running({"srv": HttpServer(url)}) as (system, registry, executor, _):
            assert "srv-fresh" not in registry.names()
            (grown,) = await run_tools(executor, ("srv-grow", {"name": "fresh"}))
            assert grown.content == "added fresh"
            await wait_for(lambda: "srv-fresh" in registry.names())
            listed = await system.lookup("mcp:srv").ask(ListTools())
            assert "fresh" in [t.name for t in listed.tools]
            (fresh,) = await run_tools(executor, ("srv-fresh", {}))
            assert fresh.content == "fresh"


async def test_a_stream_closed_mid_call_resumes() -> None:
    # Fails on the client without resumption: the POST stream ends before the answer.
    events: list[McpEvent] = []
    with http_server("mcp2", "http-resumable") as url:
        options = ClientOptions(request_timeout=20, connect_timeout=20)
        async with open_client(
            "srv", HttpServer(url), options=options, on_event=events.append
        ) as client:
            result = await client.call_tool("interrupted", {"text": "once"})
            assert result.text == "resumed once" and not result.is_error
            # Concurrent calls, each broken and resumed on a stream of its own.
            results: list[str] = []

            async def call(i: int) -> None:
                results.append((await client.call_tool("interrupted", {"text": str(i)})).text)

            async with trio.open_nursery() as nursery:
                for i in range(5):
                    nursery.start_soon(call, i)
            assert sorted(results) == sorted(f"resumed {i}" for i in range(5))
            assert (await client.call_tool("echo", {"text": "still up"})).text == "still up"
    logged = [e.params["data"] for e in events if e.method == "notifications/message"]
    assert logged.count("before the break") == 6 and logged.count("after the break") == 6
