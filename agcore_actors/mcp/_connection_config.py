"""What an McpConnection is configured with, and the breaker state its incarnations share.

:class:`ConnectionConfig` (deadlines, tool naming, drain time, breaker, restart backoff,
the handlers of server requests and progress) and :class:`ServerHealth` are plain data:
no trio, no I/O. They live apart from the actor (:mod:`._connection`) so that the specs
(:mod:`._supervision`) and a caller building a configuration need not read the actor to
find them.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from .._validators import non_negative
from ..actor import Backoff
from ..actor.policy import BreakerState, CircuitBreaker
from ._client import ClientOptions
from ._policy import DEFAULT_SEPARATOR
from ._requests import ROOTS, ProgressHandler, ServerRequestHandler, roots_handler

__all__ = ["DEFAULT_MCP_BACKOFF", "DEFAULT_MCP_BREAKER", "ConnectionConfig", "ServerHealth"]

#: An MCP server's breaker: parked after 3 consecutive failures for 5 s, doubling up to
#: 5 min; a connection that stayed up 30 s clears the count.
DEFAULT_MCP_BREAKER = CircuitBreaker(threshold=3, healthy_after=30.0)

#: How a server's supervisor spaces the restarts of its connection.
DEFAULT_MCP_BACKOFF = Backoff(initial=0.2, cap=5.0)


@attrs.frozen
class ConnectionConfig:
    """How a connection talks to its server, names its tools and recovers."""

    #: Deadlines of the protocol client.
    client: ClientOptions = attrs.field(factory=ClientOptions)
    #: What joins the server's name and a tool's name in the registry.
    separator: str = DEFAULT_SEPARATOR
    #: Seconds a dying connection lets waiting calls collect their error.
    drain_timeout: float = attrs.field(default=1.0, validator=non_negative)
    #: When the server is parked instead of reconnected at once.
    breaker: CircuitBreaker = DEFAULT_MCP_BREAKER
    #: How the server's supervisor spaces restarts of the connection.
    backoff: Backoff = DEFAULT_MCP_BACKOFF
    #: Handlers of server requests by method (``elicitation/create``,
    #: ``sampling/createMessage``, ``roots/list``; see ``agcore_actors.mcp._requests``).
    requests: Mapping[str, ServerRequestHandler] = attrs.field(factory=dict)
    #: Directories (or URIs) offered to servers as roots (``roots/list``), unless
    #: ``requests`` has its own handler.
    roots: tuple[str, ...] = ()
    #: Told each progress notification of a call made by a session (None: progress is
    #: not asked for).
    progress: ProgressHandler | None = None

    def server_requests(self) -> dict[str, ServerRequestHandler]:
        handlers = dict(self.requests)
        if self.roots:
            handlers.setdefault(ROOTS, roots_handler(self.roots))
        return handlers


@attrs.define
class ServerHealth:
    """Breaker state shared by the incarnations of one server's connection."""

    config: CircuitBreaker = DEFAULT_MCP_BREAKER
    state: BreakerState = attrs.field(factory=BreakerState)
