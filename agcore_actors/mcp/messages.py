"""The McpConnection actor's protocol, and the MCP data it hands out.

- ``CallTool(name, arguments)`` -> :class:`McpToolResult` (``is_error`` set
  when the tool reported a failure; protocol failures raise
  :class:`~agcore_actors.mcp.McpError` subclasses);
- ``ListTools(refresh)`` -> :class:`McpToolList` (cached; ``refresh`` asks
  the server again);
- ``PingServer()`` -> :class:`McpStatus` after a round trip;
- ``GetStatus()`` -> :class:`McpStatus` without talking to the server.

While the circuit breaker parks a server, ``CallTool``/``ListTools``/
``PingServer`` raise :class:`~agcore_actors.mcp.McpUnavailable`.
Server notifications are told to the connection's event sink as
:class:`McpEvent`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ..actor import Request


class McpToolInfo(msgspec.Struct, frozen=True):
    name: str
    description: str = ""
    input_schema: dict[str, Any] = msgspec.field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class McpToolList(msgspec.Struct, frozen=True):
    server: str
    tools: list[McpToolInfo]


class McpToolResult(msgspec.Struct, frozen=True):
    """A ``tools/call`` answer: ``text`` joins the text parts of ``content``."""

    text: str
    content: list[dict[str, Any]] = msgspec.field(default_factory=list)
    structured: Any = None
    is_error: bool = False


class McpStatus(msgspec.Struct, frozen=True):
    server: str
    state: str  # "connected" or "parked"
    protocol_version: str | None = None
    server_name: str | None = None
    tools: int = 0
    failures: int = 0
    retry_in: float | None = None


class McpEvent(msgspec.Struct, frozen=True, tag=True):
    """A server notification (logging, progress, resources/updated, list changes)."""

    server: str
    method: str
    params: Any = None


class CallTool(Request[McpToolResult], frozen=True, tag=True):
    name: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    timeout: float | None = None


class ListTools(Request[McpToolList], frozen=True, tag=True):
    refresh: bool = False


class PingServer(Request[McpStatus], frozen=True, tag=True):
    pass


class GetStatus(Request[McpStatus], frozen=True, tag=True):
    pass


McpConnectionMsg = CallTool | ListTools | PingServer | GetStatus
