"""The JSON-RPC wire and the shapes of MCP answers."""

from __future__ import annotations

import msgspec
import pytest

from agcore_actors.mcp import (
    McpMethodNotFound,
    McpProtocolError,
    McpServerError,
)
from agcore_actors.mcp.wire import (
    JsonRpcError,
    JsonRpcRequest,
    decode,
    encode,
    map_error,
    parse_tools,
    tool_result,
)
from tests.peers.mcp import RAW_SERVER

RAW = str(RAW_SERVER)


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


def test_unknown_method_both_dialects() -> None:
    assert isinstance(map_error("x", JsonRpcError(-32601, "Method not found")), McpMethodNotFound)
    old = map_error("x", JsonRpcError(-32602, "Invalid request parameters"))
    assert isinstance(old, McpMethodNotFound) and old.code == -32602
    real_bad_params = map_error("tools/call", JsonRpcError(-32602, "Invalid request parameters"))
    assert type(real_bad_params) is McpServerError
    assert type(map_error("x", JsonRpcError(0, "Request cancelled"))) is McpServerError


def test_tool_result_and_is_error() -> None:
    r = tool_result({"content": [{"type": "text", "text": "boom"}], "isError": True})
    assert r.is_error and r.text == "boom"  # isError is kept even with text
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


def test_parse_tools_keeps_title_annotations_and_output_schema() -> None:
    raw = {
        "tools": [
            {
                "name": "rm",
                "title": "Remove a file",
                "inputSchema": {"type": "object"},
                "annotations": {"destructiveHint": True},
                "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
            },
            {"name": "odd", "title": 3, "annotations": "yes", "outputSchema": []},
        ]
    }
    (rm, odd), _ = parse_tools(raw)
    assert rm.title == "Remove a file" and rm.annotations == {"destructiveHint": True}
    assert rm.output_schema == {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    assert odd.title is None and odd.annotations is None and odd.output_schema is None


def test_a_destructive_tool_requires_approval_unless_the_server_says_otherwise() -> None:
    from agcore_actors.mcp._adapter import publish_tools
    from agcore_actors.tools import ToolRegistry

    tools, _ = parse_tools(
        {
            "tools": [
                {"name": "rm", "annotations": {"destructiveHint": True}},
                {"name": "ls", "annotations": {"readOnlyHint": True}},
                {"name": "plain"},
            ]
        }
    )
    for override, expected in (
        (None, [True, False, False]),
        (False, [False] * 3),
        (True, [True] * 3),
    ):
        registry = ToolRegistry()
        publish_tools(registry, "fs", tools, None, "-", (), override)  # type: ignore[arg-type]
        approvals = [registry.get(f"fs-{t.name}").requires_approval for t in tools]  # type: ignore[union-attr]
        assert approvals == expected, override
