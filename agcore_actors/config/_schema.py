"""The configuration file's shape: one frozen attrs class per table, validated where built.

Every field is a key of the TOML file under the same name, except
:attr:`Settings.mcp_servers`, whose key is ``mcpServers`` (the MCP clients' own shape).
Optional keys that TOML cannot set to "nothing" are ``None`` when absent. Secrets (API
keys, headers, MCP ``env`` values) are left out of every repr.

The library's own defaults are the file's: each default is read from the class the key
configures (``tests/config/test_schema.py`` checks every field has its key). The tables
are defined by concern: ``[providers]`` in ``_schema_providers``, ``[agents]`` in
``_schema_agent``, the runtime's (``[store]``, ``[host]``, ``[cluster]``, ``[retry]``,
``[timeouts]``, ``[logging]``, ``[telemetry]``) in ``_schema_runtime``, their shared
validators in ``_schema_checks``; the ``mcpServers`` tables and :class:`Settings`, the
whole file, are here, and every table is imported from here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from .._validators import non_empty
from ._schema_agent import AgentSettings, PriceSettings
from ._schema_checks import http_url, sendable_headers
from ._schema_providers import (
    AnthropicProviderSettings,
    LocalProviderSettings,
    OpenAIProviderSettings,
    ProviderSettings,
)
from ._schema_runtime import (
    ClusterSettings,
    HostSettings,
    LoggingSettings,
    RetrySettings,
    StoreSettings,
    TelemetrySettings,
    TimeoutSettings,
)

__all__ = [
    "AgentSettings",
    "AnthropicProviderSettings",
    "ClusterSettings",
    "HostSettings",
    "HttpServerSettings",
    "LocalProviderSettings",
    "LoggingSettings",
    "McpServerSettings",
    "OpenAIProviderSettings",
    "PriceSettings",
    "ProviderSettings",
    "RetrySettings",
    "Settings",
    "StdioServerSettings",
    "StoreSettings",
    "TelemetrySettings",
    "TimeoutSettings",
]


@attrs.frozen(kw_only=True)
class StdioServerSettings:
    """An MCP server run as a child process (``command``)."""

    #: The program to run.
    command: str = attrs.field(validator=non_empty)
    #: Its arguments.
    args: tuple[str, ...] = ()
    #: Variables set in its environment (secret: values are never shown).
    env: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    #: Its working directory (default: ours).
    cwd: str | None = None
    #: More of our variables it inherits, beyond HOME, LOGNAME, PATH, SHELL, TERM, USER.
    inherit_env: tuple[str, ...] = ()
    #: Every tool needs approval (true), none (false); unset: those marked destructive.
    require_approval: bool | None = None
    #: Offer the model a ``{server}-read_resource`` tool over the server's resources.
    resources_tool: bool = False
    #: Let the tool calls of several sessions run at once (default: one session's at a
    #: time while elicitation or sampling is answered; see docs/mcp.md).
    parallel_sessions: bool = False
    #: Skip this server.
    disabled: bool = False
    #: The transport, as other MCP clients write it.
    type: Literal["stdio"] = "stdio"


@attrs.frozen(kw_only=True)
class HttpServerSettings:
    """An MCP server reached over streamable HTTP (``url``)."""

    #: The server's endpoint.
    url: str = attrs.field(validator=http_url)
    #: Headers of every request (secret: values are never shown).
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False, validator=sendable_headers)
    #: OAuth 2.1 (``agcore_actors.mcp.OAuthConfig``'s keys; ``{}`` for dynamic
    #: registration; secret: never shown).
    oauth: Mapping[str, Any] | None = attrs.field(default=None, repr=False)
    #: As for a stdio server.
    require_approval: bool | None = None
    #: As for a stdio server.
    resources_tool: bool = False
    #: Skip this server.
    disabled: bool = False
    #: The transport, as other MCP clients write it (``sse``: the legacy HTTP+SSE
    #: transport, ``url`` being its SSE endpoint).
    type: Literal["http", "streamable-http", "sse"] = "http"


McpServerSettings = StdioServerSettings | HttpServerSettings


# -- the whole file --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Settings:
    """The whole configuration, as loaded (see :func:`~agcore_actors.config.load_settings`).

    Once loaded, ``providers`` and ``agents`` are never empty and ``default_provider`` /
    ``default_agent`` name one of them.
    """

    #: The provider of agents that name none (default: the first).
    default_provider: str = ""
    #: The agent new sessions start with (default: the first).
    default_agent: str = ""
    #: Model providers by name.
    providers: Mapping[str, ProviderSettings] = attrs.field(factory=dict)
    #: Agents by name.
    agents: Mapping[str, AgentSettings] = attrs.field(factory=dict)
    #: MCP servers by name, in the ``mcpServers`` shape.
    mcp_servers: Mapping[str, McpServerSettings] = attrs.field(factory=dict)
    #: Where sessions are kept.
    store: StoreSettings = attrs.field(factory=StoreSettings)
    #: Limits of the session host.
    host: HostSettings = attrs.field(factory=HostSettings)
    #: This host as one of several sharing the store.
    cluster: ClusterSettings = attrs.field(factory=ClusterSettings)
    #: How model calls are retried.
    retry: RetrySettings = attrs.field(factory=RetrySettings)
    #: Time limits of one model call.
    timeouts: TimeoutSettings = attrs.field(factory=TimeoutSettings)
    #: Log records.
    logging: LoggingSettings = attrs.field(factory=LoggingSettings)
    #: Traces of ``serve``.
    telemetry: TelemetrySettings = attrs.field(factory=TelemetrySettings)
    #: The file the settings came from (None: defaults and environment only).
    source: str | None = attrs.field(default=None, eq=False)


def no_limit(seconds: float) -> float | None:
    """``None`` for ``inf`` (no limit), else ``seconds``."""
    return None if math.isinf(seconds) else seconds
