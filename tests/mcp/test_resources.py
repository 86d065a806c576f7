"""Resources and prompts through the client, against the official SDK's server (stdio)."""

from __future__ import annotations

import pytest

from agcore_actors.mcp import (
    ClientOptions,
    McpProtocolError,
    McpServerError,
    StdioServer,
    open_client,
)
from agcore_actors.mcp._resources import parse_prompt, parse_resource
from tests.peers.mcp import stdio_argv

OPTIONS = ClientOptions(request_timeout=20, connect_timeout=20)


@pytest.mark.slow
async def test_resources_and_prompts_of_a_real_server() -> None:
    python, *args = stdio_argv("mcp2")
    async with open_client("srv", StdioServer(python, args), options=OPTIONS) as client:
        (resource,) = await client.list_resources()
        assert resource.uri == "note://greeting" and resource.name == "greeting"
        (content,) = await client.read_resource("note://greeting")
        assert content.text == "hello from the server" and content.blob is None
        (prompt,) = await client.list_prompts()
        assert prompt.name == "review" and [a.name for a in prompt.arguments] == ["code"]
        assert prompt.arguments[0].required
        (message,) = await client.get_prompt("review", {"code": "x = 1"})
        assert message.role == "user" and message.content["text"] == "Please review: x = 1"
        with pytest.raises(McpServerError):
            await client.read_resource("note://missing")


def test_bad_shapes_are_protocol_errors() -> None:
    with pytest.raises(McpProtocolError):
        parse_resource({"name": "no uri"})
    with pytest.raises(McpProtocolError):
        parse_prompt(["not", "an", "object"])
    prompt = parse_prompt({"name": "p", "arguments": [{"name": "a"}, 3, {"required": True}]})
    assert [a.name for a in prompt.arguments] == ["a"] and not prompt.arguments[0].required
