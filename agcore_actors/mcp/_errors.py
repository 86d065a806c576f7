"""The MCP package's leaves of the error tree.

:class:`McpError` is a :class:`~agcore_actors.tools.ToolError`, so a tool call that fails
on the MCP side becomes a tool message like any other failure. MCP errors are not
recoverable (the turn ends) except :class:`McpUnavailable`: the model can do without one
server's tools. A bad ``mcpServers`` entry is :class:`McpConfigError`, outside the tool
errors: it is the configuration's fault, not a call's.

Messages never carry configured header or environment values (see
:func:`agcore_actors.mcp.policy.redact`) nor a server's stderr.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._errors import AgcoreError
from ..tools import ToolError


class McpConfigError(AgcoreError, ValueError):
    """A bad ``mcpServers`` configuration: the message names the server and the field."""

    kind: ClassVar[str] = "mcp_config"


class McpError(ToolError):
    """An MCP protocol or transport failure."""

    kind: ClassVar[str] = "mcp"


class McpNotInitialized(McpError):
    """A request was made before ``initialize`` completed."""

    kind: ClassVar[str] = "mcp_not_initialized"

    def __init__(self, server: str) -> None:
        super().__init__(f"MCP not initialized: {server}")
        self.server = server


class McpTimeout(McpError, TimeoutError):
    """``what`` (a method, or a stage of connecting) got no answer within ``seconds``."""

    kind: ClassVar[str] = "mcp_timeout"

    def __init__(self, what: str, seconds: float) -> None:
        super().__init__(f"MCP timeout: {what} got no answer within {seconds:g} s")
        self.what = what
        self.seconds = seconds

    def is_retryable(self) -> bool:
        return True


class McpConnectionClosed(McpError):
    """The server went away (process exit, EOF, HTTP session gone), or could not be reached."""

    kind: ClassVar[str] = "mcp_connection_closed"

    def __init__(self, server: str, detail: str = "connection closed") -> None:
        super().__init__(f"MCP server '{server}': {detail}")
        self.server = server
        self.detail = detail

    def is_retryable(self) -> bool:
        return True


class McpServerError(McpError):
    """The server answered a request with a JSON-RPC error."""

    kind: ClassVar[str] = "mcp_server_error"

    def __init__(self, method: str, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"MCP error [{code}] on {method}: {message}")
        self.method = method
        self.code = code
        self.data = data


class McpMethodNotFound(McpServerError, LookupError):
    """The server does not know the method: -32601, or the -32602 "Invalid
    request parameters" that mcp 1.x servers send for an unknown method."""

    kind: ClassVar[str] = "mcp_method_not_found"


class McpHttpError(McpError):
    """The server answered a streamable HTTP request with an error status.

    ``body`` is the start of the answer with configured header values redacted.
    """

    kind: ClassVar[str] = "mcp_http_error"

    def __init__(self, server: str, status: int, body: str) -> None:
        super().__init__(f"MCP server '{server}': HTTP {status}: {body}")
        self.server = server
        self.status = status
        self.body = body

    def is_retryable(self) -> bool:
        return self.status in (408, 429) or self.status >= 500


class McpProtocolError(McpError):
    """The peer broke the protocol (bad JSON, unsupported version, bad shape)."""

    kind: ClassVar[str] = "mcp_protocol_error"


class McpMessageTooLarge(McpProtocolError):
    """A message from the server was over ``limit`` bytes; only the request it answered fails."""

    kind: ClassVar[str] = "mcp_message_too_large"

    def __init__(self, server: str, limit: int) -> None:
        super().__init__(f"MCP server '{server}': a message was over {limit} bytes")
        self.server = server
        self.limit = limit


class McpOutputInvalid(McpProtocolError):
    """A tool's ``structuredContent`` does not match its ``outputSchema`` (or is missing).

    Recoverable: the model is told (``detail`` says where the value breaks the schema) and
    can call again or do without; the value itself is not passed on.
    """

    kind: ClassVar[str] = "mcp_output_invalid"

    def __init__(self, server: str, tool: str, detail: str) -> None:
        super().__init__(
            f"MCP server '{server}': tool '{tool}' returned output that does not match "
            f"its outputSchema: {detail}"
        )
        self.server = server
        self.tool = tool
        self.detail = detail

    def is_recoverable(self) -> bool:
        return True


class McpUnavailable(McpError):
    """The server is parked by its circuit breaker (``retry_in``: seconds to the next probe).

    Recoverable: the model can do without one server's tools, and a turn should not end
    because one server is down.
    """

    kind: ClassVar[str] = "mcp_unavailable"

    def __init__(self, server: str, retry_in: float | None = None) -> None:
        when = f"; next probe in {retry_in:.1f} s" if retry_in is not None else ""
        super().__init__(f"MCP server '{server}' is unavailable{when}")
        self.server = server
        self.retry_in = retry_in

    def is_recoverable(self) -> bool:
        return True

    def is_retryable(self) -> bool:
        return True


class McpAuthError(McpError):
    """OAuth with an HTTP server failed (discovery, registration, token exchange); the
    message has configured secrets redacted and never holds a token."""

    kind: ClassVar[str] = "mcp_auth_error"

    def __init__(self, server: str, reason: str) -> None:
        super().__init__(f"MCP server '{server}': authorization failed: {reason}")
        self.server = server


class McpAuthRequired(McpAuthError):
    """An OAuth server needs a person to authorize this client: run ``agcore-actors mcp
    login SERVER`` (the tokens it stores are then used and refreshed)."""

    kind: ClassVar[str] = "mcp_auth_required"

    def __init__(self, server: str) -> None:
        McpError.__init__(
            self,
            f"MCP server '{server}' needs authorization: run `agcore-actors mcp login {server}`",
        )
        self.server = server
