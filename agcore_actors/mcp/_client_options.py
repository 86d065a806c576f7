"""The options of an MCP client and the transport a server's configuration makes.

Nothing here starts anything: :func:`make_transport` only builds a transport (an
HTTP server's OAuth handling too), which :func:`~._client.open_client` starts.
"""

from __future__ import annotations

import attrs
import httpx2

from .._validators import non_negative, positive
from ._config import HttpServer, ServerConfig
from ._http import HttpTransport
from ._sse import SseTransport
from ._stdio import StdioTransport
from ._transport import Transport


@attrs.frozen
class ClientOptions:
    """Deadlines of an :class:`~._client.McpClient`."""

    #: Seconds a request may wait for its answer unless it gives its own timeout.
    request_timeout: float = attrs.field(default=30.0, validator=positive)
    #: Seconds ``initialize`` (and connecting an HTTP server) may take.
    connect_timeout: float = attrs.field(default=30.0, validator=positive)
    #: Seconds each step of shutting a server down may take (stdin EOF, SIGTERM, DELETE).
    shutdown_grace: float = attrs.field(default=2.0, validator=non_negative)
    #: Seconds a handler of a server request (an elicitation a person answers) may take;
    #: an elicitation past it is declined.
    server_request_timeout: float = attrs.field(default=120.0, validator=positive)
    #: The largest message accepted from a server; a larger one fails only the request
    #: it answers.
    max_message_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=attrs.validators.ge(1))


def make_transport(
    name: str, config: ServerConfig, options: ClientOptions, auth: httpx2.Auth | None = None
) -> Transport:
    if isinstance(config, HttpServer):
        if auth is None and config.oauth is not None:
            from ._oauth import oauth_auth  # the SDK only for servers with OAuth

            auth = oauth_auth(name, config)
        kind = SseTransport if config.sse else HttpTransport
        return kind(
            name,
            config,
            connect_timeout=options.connect_timeout,
            grace=options.shutdown_grace,
            max_message_bytes=options.max_message_bytes,
            auth=auth,
        )
    return StdioTransport(
        name, config, grace=options.shutdown_grace, max_message_bytes=options.max_message_bytes
    )
