"""MCP errors. All are :class:`ToolError`\\s, so a tool call that fails on the
MCP side becomes a tool message like any other failure."""

from __future__ import annotations

from typing import Any

from ..tools import ToolError


class McpError(ToolError):
    """An MCP protocol or transport failure (not recoverable, as in the seed)."""


class McpNotInitialized(McpError):
    def __init__(self, server: str) -> None:
        super().__init__(f"MCP not initialized: {server}")
        self.server = server


class McpTimeout(McpError):
    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"MCP timeout: {what} got no answer within {seconds:g} s")
        self.what = what
        self.seconds = seconds


class McpConnectionClosed(McpError):
    """The server went away (process exit, EOF, HTTP session gone) mid-request."""

    def __init__(self, server: str, detail: str = "connection closed") -> None:
        super().__init__(f"MCP server '{server}': {detail}")
        self.server = server
        self.detail = detail


class McpServerError(McpError):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"MCP error [{code}] on {method}: {message}")
        self.method = method
        self.code = code
        self.data = data


class McpMethodNotFound(McpServerError):
    """The server does not know the method: -32601, or the -32602 "Invalid
    request parameters" that mcp 1.x servers send for an unknown method."""


class McpProtocolError(McpError):
    """The peer broke the protocol (bad JSON, unsupported version, bad shape)."""


class McpUnavailable(McpError):
    """The server is parked by its circuit breaker.

    Δ seed: recoverable, unlike other MCP errors: the model can do without one
    server's tools, and the turn should not end because one server is down.
    """

    recoverable = True

    def __init__(self, server: str, retry_in: float | None = None) -> None:
        when = f"; next probe in {retry_in:.1f} s" if retry_in is not None else ""
        super().__init__(f"MCP server '{server}' is unavailable{when}")
        self.server = server
