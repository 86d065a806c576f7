"""Serving agent sessions: ``serve_stdio`` (JSON lines) and ``serve_http`` (an HTTP API).

Both take a running :class:`~agcore_actors.agent.SessionHost`; how the host is built
(configuration, environment) is the caller's business. ``agcore-actors serve`` wires
them to the command line.
"""

from .._exports import publish
from ._auth import Tenant
from ._errors import BadCommand, HttpRefused, ServeError
from ._http import serve_http
from ._http_config import HttpConfig
from ._logging import JsonFormatter, TextFormatter, configure_logging
from ._stdio import StdioConfig, serve_stdio

__all__ = [
    "BadCommand",
    "HttpConfig",
    "HttpRefused",
    "JsonFormatter",
    "ServeError",
    "StdioConfig",
    "Tenant",
    "TextFormatter",
    "configure_logging",
    "serve_http",
    "serve_stdio",
]

publish(__name__, __all__)
