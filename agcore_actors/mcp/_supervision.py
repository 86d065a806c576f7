"""The supervision tree over McpConnections: a supervisor per server, one over them all.

:func:`server_spec` puts one server's :func:`~._connection.connection_spec` under a
supervisor of its own, so a failing server never restarts another, with an intensity
sized so that the connection's circuit breaker parks the server before the supervisor
could give up; :func:`servers_spec` gathers those of a whole configuration. Specs only:
nothing here runs until a supervisor starts them.
"""

from __future__ import annotations

from ..actor import ActorRef, Intensity, SupervisorSpec
from ..tools import ToolRegistry
from ._config import ServerConfig
from ._connection import connection_spec
from ._connection_config import ConnectionConfig
from .messages import McpEvent

__all__ = ["server_spec", "servers_spec"]


def server_spec(
    name: str,
    *,
    server: ServerConfig,
    registry: ToolRegistry | None = None,
    events: ActorRef[McpEvent] | None = None,
    config: ConnectionConfig | None = None,
) -> SupervisorSpec:
    """A supervisor of its own, ``mcp-supervisor:{name}``, for :func:`connection_spec`.

    It restarts the connection with ``config.backoff``; the breaker parks the server
    before the supervisor's intensity could give up (``threshold + 2`` restarts are
    allowed per shortest breaker period).
    """
    config = config or ConnectionConfig()
    child = connection_spec(name, server=server, registry=registry, events=events, config=config)
    return SupervisorSpec(
        f"mcp-supervisor:{name}",
        children=[child],
        intensity=Intensity(
            max_restarts=config.breaker.threshold + 2,
            period=max(config.breaker.backoff.initial, 1e-3),
        ),
        backoff=config.backoff,
    )


def servers_spec(
    servers: dict[str, ServerConfig],
    *,
    registry: ToolRegistry | None = None,
    events: ActorRef[McpEvent] | None = None,
    config: ConnectionConfig | None = None,
    name: str = "mcp",
) -> SupervisorSpec:
    """One supervisor, ``name``, holding a :func:`server_spec` per configured server."""
    return SupervisorSpec(
        name,
        children=[
            server_spec(n, server=s, registry=registry, events=events, config=config)
            for n, s in servers.items()
        ],
        intensity=Intensity(max_restarts=max(10, 3 * len(servers)), period=60.0),
    )
