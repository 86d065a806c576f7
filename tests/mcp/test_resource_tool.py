"""A server's resources as a tool (``resources_tool``), against the official SDK's server
over stdio: the model's ``srv-read_resource`` reads a listed resource; an unknown URI is
a recoverable error; without the key no such tool is offered. The connection actor's
``ListResources``/``ReadResource`` answer the same from Python."""

from __future__ import annotations

from typing import Any

import pytest

from agcore_actors.mcp import StdioServer
from agcore_actors.mcp import messages as mm
from agcore_actors.tools import ToolStatus
from tests.mcp.servers import run_tools, running
from tests.peers.mcp import stdio_argv

pytestmark = pytest.mark.slow


def server(**keys: Any) -> StdioServer:
    python, *args = stdio_argv("mcp2")
    return StdioServer(python, list(args), **keys)


async def test_the_resources_tool_reads_a_listed_resource() -> None:
    async with running({"srv": server(resources_tool=True)}) as (system, registry, executor, _):
        tool = registry.get("srv-read_resource")
        assert tool is not None
        uri = tool.parameters["properties"]["uri"]
        assert uri["enum"] == ["note://greeting"]
        assert "note://greeting: greeting (A short note.)" in tool.description
        ok, unknown, bad = await run_tools(
            executor,
            ("srv-read_resource", {"uri": "note://greeting"}),
            ("srv-read_resource", {"uri": "note://nothing"}),
            ("srv-read_resource", {}),
        )
        assert (ok.status, ok.content) == (ToolStatus.OK, "hello from the server")
        assert unknown.status is ToolStatus.ERROR and unknown.recoverable
        assert bad.status is not ToolStatus.OK and bad.recoverable
        connection = system.lookup("mcp:srv")
        listed = await connection.ask(mm.ListResources())
        assert [r.uri for r in listed.resources] == ["note://greeting"]
        read = await connection.ask(mm.ReadResource("note://greeting"))
        assert [part.text for part in read.contents] == ["hello from the server"]


async def test_no_resources_tool_unless_the_entry_asks_for_it() -> None:
    async with running({"srv": server()}) as (_, registry, _, _):
        assert "srv-echo" in registry.names()
        assert "srv-read_resource" not in registry.names()
