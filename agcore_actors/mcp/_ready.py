"""Waiting until an MCP server's tools are registered.

A connection connects in the background: ``start_supervisor`` returns before the
server is up, and a model that calls one of its tools meanwhile gets ``unknown_tool``.
Start-up code that needs the tools waits with :func:`wait_ready`.
"""

from __future__ import annotations

import trio

from ..actor import ActorError, ActorRef
from ._errors import McpError, McpTimeout, McpUnavailable
from .messages import GetStatus, ListTools, McpConnectionMsg, McpStatus

#: Seconds between two looks while a connection restarts.
_RETRY = 0.05


async def wait_ready(connection: ActorRef[McpConnectionMsg], *, timeout: float) -> McpStatus:
    """Wait until ``connection``'s server is connected and its tools are registered.

    Returns the connection's status once connected. Failed connects and the restarts
    that follow them are waited through.

    Raises:
        McpUnavailable: at once when the circuit breaker parks the server (its tools
            answer so until a probe connects; ``retry_in`` says when).
        McpTimeout: when the server is not connected within ``timeout`` seconds.

    Cancellation: nothing to undo; the connection carries on.
    """
    with trio.move_on_after(timeout):
        while True:
            status = await _status(connection)
            if status is not None and status.state == "connected":
                return status
            if status is not None and status.state == "parked":
                raise McpUnavailable(status.server, status.retry_in)
            try:
                await connection.ask(ListTools())  # waits for the connect (bounded)
            except (McpError, ActorError):  # a failed connect, a restart
                await trio.sleep(_RETRY)
    raise McpTimeout("waiting for the server to be ready", timeout)


async def _status(connection: ActorRef[McpConnectionMsg]) -> McpStatus | None:
    try:
        return await connection.ask(GetStatus())
    except ActorError:  # caught between two incarnations
        await trio.sleep(_RETRY)
        return None
