"""The product's configuration: one TOML file, structured into frozen attrs classes.

::

    settings = load_settings()            # ./agcore.toml, else the user's, else defaults
    async with open_runtime(settings) as runtime:
        async with SessionHost(runtime.system, runtime.bundle, runtime.host_config) as host:
            result = await host.run("s1", "Hello")

:func:`load_settings` finds the file, applies the environment over it and raises one
:class:`ConfigError` line for anything wrong; :func:`open_runtime` starts what the
settings describe. The keys, their types, defaults and environment variables are listed
in ``docs/configuration.md``; ``agcore-actors config init`` writes a commented starter file.
"""

from .._exports import publish
from ._errors import ConfigError
from ._library import (
    agent_config,
    agents_of,
    host_config,
    local_model_config,
    mcp_servers,
    provider_config,
    remote_provider,
    store_backend,
)
from ._load import LOCAL_NAME, find_config, load_settings, parse_settings
from ._runtime import Runtime, open_runtime
from ._schema import (
    AgentSettings,
    AnthropicProviderSettings,
    ClusterSettings,
    HostSettings,
    HttpServerSettings,
    LocalProviderSettings,
    LoggingSettings,
    McpServerSettings,
    OpenAIProviderSettings,
    PriceSettings,
    ProviderSettings,
    RetrySettings,
    Settings,
    StdioServerSettings,
    StoreSettings,
    TelemetrySettings,
    TimeoutSettings,
)
from ._starter import starter_text

__all__ = [
    "LOCAL_NAME",
    "AgentSettings",
    "AnthropicProviderSettings",
    "ClusterSettings",
    "ConfigError",
    "HostSettings",
    "HttpServerSettings",
    "LocalProviderSettings",
    "LoggingSettings",
    "McpServerSettings",
    "OpenAIProviderSettings",
    "PriceSettings",
    "ProviderSettings",
    "RetrySettings",
    "Runtime",
    "Settings",
    "StdioServerSettings",
    "StoreSettings",
    "TelemetrySettings",
    "TimeoutSettings",
    "agent_config",
    "agents_of",
    "find_config",
    "host_config",
    "load_settings",
    "local_model_config",
    "mcp_servers",
    "open_runtime",
    "parse_settings",
    "provider_config",
    "remote_provider",
    "starter_text",
    "store_backend",
]

publish(__name__, __all__)
