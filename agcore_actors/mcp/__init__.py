"""MCP: supervised McpConnection actors for MCP servers (stdio and streamable HTTP),
their tools in a ToolRegistry, the ``mcpServers`` configuration format, and a protocol
client for direct use.

- the actor: :class:`McpConnection`, built by :func:`server_spec` (one supervisor per
  server) or :func:`servers_spec` (all of a configuration) with a
  :class:`ConnectionConfig`; its protocol is :mod:`agcore_actors.mcp.messages` (import
  it qualified, ``from agcore_actors.mcp import messages as mm``; its main types are
  also here);
- readiness: a connection connects in the background, so ``start_supervisor`` returns
  before a server's tools are registered (a call meanwhile gets ``unknown_tool``);
  ``await wait_ready(system.lookup(f"mcp:{name}"), timeout=30)`` waits until they are;
- configuration: :class:`StdioServer`, :class:`HttpServer` (with :class:`OAuthConfig`),
  :func:`load_config`;
- direct use without actors: :func:`open_client`; its client also lists and reads
  resources and lists and renders prompts (:class:`McpResource`, :class:`McpPrompt`;
  ``requests=`` answers server requests:
  ``elicitation/create``, ``sampling/createMessage``, ``roots/list``, each offered as a
  capability only when given a handler);
- streamable HTTP keeps a listening GET stream open (``tools/list_changed`` and server
  requests outside any call arrive), and resumes a response stream the server closes
  mid-call (``Last-Event-ID`` after the server's ``retry`` hint);
- OAuth 2.1 for an HTTP server whose entry has ``"oauth": {...}`` (:class:`OAuthConfig`;
  the ``mcp-oauth`` extra: the official SDK's auth providers, imported only then):
  discovery, dynamic registration or a client-id metadata document or a pre-registered
  client, PKCE, client credentials (secret or private-key JWT), scopes and step-up,
  refresh. Tokens are kept per user, one 0600 file per server under
  ``$XDG_STATE_HOME/agcore-actors/mcp-oauth``, and never logged. A person authorizes
  once with ``agcore-actors mcp login NAME``; an actor then uses and refreshes the
  stored tokens, and answers :class:`McpAuthRequired` (naming that command) when the
  server wants a new authorization;
- configuration strings may hold ``${VAR}``/``${env:VAR}`` (an unset one is
  :class:`McpConfigError`); ``type: "sse"`` is the legacy HTTP+SSE transport
  (``HttpServer(url, sse=True)``); VS Code's ``{"servers": {...}}`` shape is read too;
- the wire format: :mod:`agcore_actors.mcp.wire`; pure policy:
  :mod:`agcore_actors.mcp.policy`.
"""

from .._exports import publish
from ._adapter import McpToolAdapter
from ._client import ClientOptions, McpClient, open_client
from ._config import (
    HttpServer,
    OAuthConfig,
    ServerConfig,
    StdioServer,
    load_config,
    parse_config,
)
from ._connection import McpConnection, connection_spec
from ._connection_config import (
    DEFAULT_MCP_BACKOFF,
    DEFAULT_MCP_BREAKER,
    ConnectionConfig,
    ServerHealth,
)
from ._errors import (
    McpAuthError,
    McpAuthRequired,
    McpConfigError,
    McpConnectionClosed,
    McpError,
    McpHttpError,
    McpMessageTooLarge,
    McpMethodNotFound,
    McpNotInitialized,
    McpOutputInvalid,
    McpProtocolError,
    McpServerError,
    McpTimeout,
    McpUnavailable,
)
from ._ready import wait_ready
from ._resources import (
    McpPrompt,
    McpPromptArgument,
    McpPromptMessage,
    McpResource,
    McpResourceContent,
)
from ._supervision import server_spec, servers_spec
from .messages import (
    CallTool,
    ConnectionState,
    GetStatus,
    ListTools,
    McpConnectionMsg,
    McpEvent,
    McpStatus,
    McpToolInfo,
    McpToolList,
    McpToolResult,
    PingServer,
)

__all__ = [
    "DEFAULT_MCP_BACKOFF",
    "DEFAULT_MCP_BREAKER",
    "CallTool",
    "ClientOptions",
    "ConnectionConfig",
    "ConnectionState",
    "GetStatus",
    "HttpServer",
    "ListTools",
    "McpAuthError",
    "McpAuthRequired",
    "McpClient",
    "McpConfigError",
    "McpConnection",
    "McpConnectionClosed",
    "McpConnectionMsg",
    "McpError",
    "McpEvent",
    "McpHttpError",
    "McpMessageTooLarge",
    "McpMethodNotFound",
    "McpNotInitialized",
    "McpOutputInvalid",
    "McpPrompt",
    "McpPromptArgument",
    "McpPromptMessage",
    "McpProtocolError",
    "McpResource",
    "McpResourceContent",
    "McpServerError",
    "McpStatus",
    "McpTimeout",
    "McpToolAdapter",
    "McpToolInfo",
    "McpToolList",
    "McpToolResult",
    "McpUnavailable",
    "OAuthConfig",
    "PingServer",
    "ServerConfig",
    "ServerHealth",
    "StdioServer",
    "connection_spec",
    "load_config",
    "open_client",
    "parse_config",
    "server_spec",
    "servers_spec",
    "wait_ready",
]

publish(__name__, __all__)
