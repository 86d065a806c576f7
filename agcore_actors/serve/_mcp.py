"""``serve --mcp``: the host's agents as MCP tools, over stdio or streamable HTTP.

Semantics:
    Each agent is one MCP tool named after it, taking ``text`` (the message) and an
    optional ``session`` (the session to continue; without one a fresh session id is
    made). A call runs one turn of that session on its :class:`SessionHost` and answers
    with the turn's final text as text content and ``{"session", "turn", "status",
    "text"}`` as structured content (so the caller can continue the session). A turn that
    did not complete is a tool error (``isError``) naming its status and error kind; a bad
    argument or unknown tool is a tool error too, and starts nothing. Every call is
    answered. Given the session store, the stored sessions are resources too (and the
    ``session`` prompt gives one's conversation), and a client may set a log level to
    hear of each turn (:mod:`._mcp_more`). The MCP side is
    the official ``mcp`` SDK's server (``mcp-server`` extra), imported only here.

Cancellation:
    A ``notifications/cancelled`` from the client cancels the handler, which cancels the
    turn; the host commits it as cancelled before the cancellation completes. Cancelling
    :func:`serve_mcp_stdio` / :func:`serve_mcp_http` cancels every turn in flight the
    same way.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .._errors import AgcoreError
from .._ids import new_id
from ..actor import ActorRef
from ..agent import SessionHost
from ._auth import check_id
from ._mcp_more import McpMore

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["McpHttpConfig", "mcp_server", "serve_mcp_http", "serve_mcp_stdio"]

_INPUT = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "description": "The message for the agent."},
        "session": {
            "type": "string",
            "description": "The session to continue (omit for a fresh one; the reply names it).",
        },
    },
    "required": ["text"],
    "additionalProperties": False,
}
_OUTPUT = {
    "type": "object",
    "properties": {
        "session": {"type": "string"},
        "turn": {"type": "string"},
        "status": {"type": "string"},
        "text": {"type": "string"},
    },
    "required": ["session", "turn", "status", "text"],
}


def _arguments(arguments: Mapping[str, Any] | None) -> tuple[str, str]:
    """``(text, session)`` of a call, or ValueError naming what is wrong."""
    arguments = arguments or {}
    extra = sorted(set(arguments) - {"text", "session"})
    if extra:
        raise ValueError(f"unknown argument(s): {', '.join(extra)}")
    text = arguments.get("text")
    if not isinstance(text, str):
        raise ValueError("'text' must be a string")
    session = arguments.get("session")
    if session is None:
        return text, new_id()
    if not isinstance(session, str):
        raise ValueError("'session' must be a string")
    check_id("session", session)
    return text, session


def mcp_server(
    agents: Mapping[str, SessionHost],
    *,
    store: ActorRef[Any] | None = None,
    name: str = "agcore-actors",
    version: str = "",
) -> Server[Any]:
    """An MCP server (the SDK's low-level ``Server``) whose tools are ``agents``: tool
    name -> the host that runs that agent's sessions; ``store``: the session store whose
    sessions are its resources (None: no resources). See the module docstring."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    if not agents:
        raise ValueError("mcp_server needs at least one agent")
    more = McpMore(store)

    def error(message: str) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=agent,
                    description=f"Ask the agent {agent!r}; pass 'session' to continue one.",
                    input_schema=_INPUT,
                    output_schema=_OUTPUT,
                )
                for agent in agents
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        host = agents.get(params.name)
        if host is None:
            return error(f"unknown tool {params.name!r}")
        try:
            text, session = _arguments(params.arguments)
        except ValueError as exc:
            return error(str(exc))
        try:
            result = await host.run(session, text)
        except AgcoreError as exc:
            return error(f"turn refused ({exc.kind}): {exc}")
        await more.after_turn(ctx, session, result)
        data = {
            "session": session,
            "turn": result.turn,
            "status": result.status,
            "text": result.text,
        }
        if result.status != "completed":
            why = f"turn {result.status}"
            if result.error_kind:
                why += f" ({result.error_kind}): {result.error}"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=why)],
                structured_content=data,
                is_error=True,
            )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)], structured_content=data
        )

    with warnings.catch_warnings():
        # The SDK warns that logging is deprecated from the 2026-07-28 spec on; clients
        # of the versions served here (up to 2025-11-25) still use it.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28")
        return Server(
            name,
            version=version,
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            **more.handlers(),
        )


async def serve_mcp_stdio(
    agents: Mapping[str, SessionHost], *, store: ActorRef[Any] | None = None
) -> int:
    """Serve ``agents`` as MCP tools (``store``'s sessions as resources) on the process's
    stdin/stdout until end of input; returns 0."""
    from mcp.server.stdio import stdio_server

    server = mcp_server(agents, store=store)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())
    return 0


@attrs.frozen(kw_only=True)
class McpHttpConfig:
    """Where :func:`serve_mcp_http` listens."""

    #: Address to bind.
    host: str = "127.0.0.1"
    #: Port (0: a free one).
    port: int = 0
    #: The endpoint's path.
    path: str = "/mcp"
    #: Host header names accepted besides the loopback ones (DNS-rebinding guard).
    allowed_hosts: tuple[str, ...] = ()


async def serve_mcp_http(
    agents: Mapping[str, SessionHost],
    config: McpHttpConfig,
    *,
    shutdown: Any = None,
    store: ActorRef[Any] | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``agents`` as MCP tools (``store``'s sessions as resources) over streamable
    HTTP (hypercorn's trio worker); reports the endpoint's URL through ``task_status``.
    Returns when ``shutdown`` (an async callable) returns, or runs until cancelled."""
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from mcp.server.transport_security import TransportSecuritySettings

    server = mcp_server(agents, store=store)
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*", *(f"{h}:*" for h in config.allowed_hosts)]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{h}" for h in hosts],
    )
    app = server.streamable_http_app(
        streamable_http_path=config.path, transport_security=security, host=config.host
    )
    hyper = Config()
    bind = f"[{config.host}]" if ":" in config.host else config.host
    hyper.bind = [f"{bind}:{config.port}"]
    hyper.accesslog = None
    hyper.errorlog = None

    async def started(task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED) -> None:
        await serve(app, hyper, shutdown_trigger=shutdown, task_status=task_status)  # type: ignore[arg-type]

    async with trio.open_nursery() as nursery:
        binds: list[str] = await nursery.start(started)
        task_status.started(binds[0].rstrip("/") + config.path)
