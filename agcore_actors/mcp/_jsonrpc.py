"""JSON-RPC 2.0 wire types for MCP on msgspec, and the shapes of MCP answers.

Pure: encoding, decoding and mapping, no I/O.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from ._errors import McpMethodNotFound, McpProtocolError, McpServerError
from .messages import McpToolInfo, McpToolResult

#: Protocol versions this client speaks, newest first.
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[0]

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class JsonRpcRequest(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str
    method: str
    params: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class JsonRpcNotification(msgspec.Struct, kw_only=True):
    """``params`` is omitted when unset."""

    jsonrpc: str = "2.0"
    method: str
    params: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


class JsonRpcError(msgspec.Struct):
    code: int
    message: str
    data: Any = None


class JsonRpcResponse(msgspec.Struct, kw_only=True):
    jsonrpc: str = "2.0"
    id: int | str | None
    result: Any = msgspec.UNSET
    error: JsonRpcError | msgspec.UnsetType = msgspec.UNSET


class Incoming(msgspec.Struct):
    """Any message from the server: a response, a request or a notification."""

    jsonrpc: str = "2.0"
    id: int | str | None = None
    method: str | None = None
    params: Any = None
    result: Any = msgspec.UNSET
    error: JsonRpcError | None = None

    @property
    def is_response(self) -> bool:
        return self.method is None and self.id is not None


_encoder = msgspec.json.Encoder()
_incoming = msgspec.json.Decoder(Incoming | list[Incoming])


def encode(message: JsonRpcRequest | JsonRpcNotification | JsonRpcResponse) -> bytes:
    return _encoder.encode(message)


def decode(data: bytes | str) -> list[Incoming]:
    """One message or a batch; raises ``msgspec.DecodeError`` on bad input."""
    msg = _incoming.decode(data)
    return msg if isinstance(msg, list) else [msg]


def map_error(method: str, error: JsonRpcError) -> McpServerError:
    """A JSON-RPC error as a typed exception (unknown method: both dialects)."""
    unknown = error.code == METHOD_NOT_FOUND or (
        error.code == INVALID_PARAMS
        and error.message == "Invalid request parameters"
        and method != "tools/call"
    )
    kind = McpMethodNotFound if unknown else McpServerError
    return kind(method, error.code, error.message, error.data)


def tool_result(raw: Any) -> McpToolResult:
    """A ``tools/call`` result as :class:`McpToolResult`; raise :class:`McpProtocolError`."""
    if not isinstance(raw, dict):
        raise McpProtocolError(f"tools/call answered {type(raw).__name__}, not an object")
    content = raw.get("content")
    content = [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    text = "\n".join(
        c["text"] for c in content if c.get("type") == "text" and isinstance(c.get("text"), str)
    )
    return McpToolResult(
        text=text,
        content=content,
        structured=raw.get("structuredContent"),
        is_error=raw.get("isError") is True,
    )


def parse_tools(raw: Any) -> tuple[list[McpToolInfo], str | None]:
    """One ``tools/list`` page: its tools and the next cursor (None on the last page)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("tools"), list):
        raise McpProtocolError("tools/list answer has no 'tools' array")
    tools = []
    for item in raw["tools"]:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise McpProtocolError(f"tools/list entry without a name: {item!r}")
        schema = item.get("inputSchema")
        title, hints, output = item.get("title"), item.get("annotations"), item.get("outputSchema")
        tools.append(
            McpToolInfo(
                name=item["name"],
                description=item.get("description") or "",
                input_schema=schema
                if isinstance(schema, dict)
                else {"type": "object", "properties": {}},
                title=title if isinstance(title, str) else None,
                annotations=hints if isinstance(hints, dict) else None,
                output_schema=output if isinstance(output, dict) else None,
            )
        )
    cursor = raw.get("nextCursor")
    return tools, cursor if isinstance(cursor, str) and cursor else None


_ID = rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
_ID_FIRST = re.compile(_ID)
_ID_LAST = re.compile(_ID + rb"\s*}\s*$")
_BODY = re.compile(rb'"(?:result|error|method)"\s*:')


def oversized_answer_id(head: bytes, tail: bytes) -> int | str | None:
    """The id of the response that starts with ``head`` and ends with ``tail``, when
    it can be told without reading the rest: an ``"id"`` before its ``"result"`` or
    ``"error"``, else as the very last member. None for a request or notification
    from the server (a ``"method"`` first) and when no id is found."""
    body = _BODY.search(head)
    if body is not None and body.group(0).startswith(b'"method"'):
        return None
    found = _ID_FIRST.search(head, 0, body.start() if body is not None else len(head))
    if found is None:
        found = _ID_LAST.search(tail)
    if found is None:
        return None
    value = msgspec.json.decode(found.group(1))
    return value if isinstance(value, int | str) else None
