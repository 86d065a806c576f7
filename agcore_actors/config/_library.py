"""Each part of :class:`Settings` as the library's own configuration, by pure functions.

One function per table: ``[retry]``/``[timeouts]`` (:func:`provider_config`), a remote
provider (:func:`remote_provider`), a ``local`` one's model (:func:`local_model_config`),
an agent's limits and the agents (:func:`agent_config`, :func:`agents_of`), ``[host]``,
``[cluster]``, ``[store]`` and the MCP servers. They start nothing and do no I/O but
reading a local model's chat template file, so they are tested without a runtime;
:func:`~agcore_actors.config.open_runtime` (:mod:`._runtime`) composes them. A value the
library refuses raises :class:`ConfigError` naming its key.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ..agent import Agent, AgentConfig, HostConfig
from ..cluster import ClusterConfig
from ..llm import (
    AnthropicConfig,
    AnthropicProvider,
    LlmConfigError,
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    ProviderConfig,
    RetryConfig,
    Timeouts,
)
from ..mcp import McpConfigError, ServerConfig, parse_config
from ..store import InMemorySessions, PostgresSessions, SessionBackendConfig, SqliteSessions
from ._agents import budget_of, media_limits_of, model_of
from ._errors import ConfigError
from ._schema import (
    AgentSettings,
    HttpServerSettings,
    LocalProviderSettings,
    OpenAIProviderSettings,
    Settings,
    no_limit,
)

__all__ = [
    "agent_config",
    "agents_of",
    "cluster_config",
    "host_config",
    "library_config",
    "local_model_config",
    "mcp_servers",
    "provider_config",
    "remote_provider",
    "store_backend",
]

if TYPE_CHECKING:  # the local package is imported only when a local model is used
    from ..local import LocalModelConfig

T = TypeVar("T", bound=attrs.AttrsInstance)


def library_config(
    cls: type[T],
    table: object,
    renames: Mapping[str, str] | None = None,
    *,
    given: Mapping[str, Any] | None = None,
) -> T:
    """The library class ``cls`` (attrs) from a settings ``table`` with a key for each of
    its fields (named as the field, or as ``renames`` says) but those ``given`` (made by
    the caller from several keys); a field that takes None for "no limit" gets None for
    the file's ``inf``."""
    renames = renames or {}
    hints = typing.get_type_hints(cls)  # the fields' types, resolved (not their text)
    values: dict[str, Any] = dict(given or {})
    for field in attrs.fields(cls):
        if field.name in values:
            continue
        value = getattr(table, renames.get(field.name, field.name))
        optional = type(None) in typing.get_args(hints[field.name])
        values[field.name] = no_limit(value) if optional and isinstance(value, float) else value
    return cls(**values)


def provider_config(settings: Settings) -> ProviderConfig:
    """``[retry]`` and ``[timeouts]`` as the ProviderActor's configuration."""
    return ProviderConfig(
        retry=library_config(RetryConfig, settings.retry),
        timeouts=library_config(Timeouts, settings.timeouts),
    )


def remote_provider(settings: Settings, name: str) -> Provider:
    """The provider ``name`` (kind ``openai`` or ``anthropic``); :class:`ConfigError` if
    the library refuses its values (a header that cannot be sent)."""
    p = settings.providers[name]
    try:
        if isinstance(p, OpenAIProviderSettings):
            return OpenAICompatibleProvider(
                OpenAIConfig(
                    name=name,
                    base_url=p.base_url,
                    api_key=p.api_key,
                    model=p.model,
                    headers=dict(p.headers),
                    extra_body=dict(p.extra_body),
                )
            )
        if isinstance(p, LocalProviderSettings):
            raise ConfigError(settings.source or "<defaults>", f"providers.{name}", "is local")
        return AnthropicProvider(
            AnthropicConfig(
                name=name,
                base_url=p.base_url,
                api_key=p.api_key,
                model=p.model,
                max_tokens=p.max_tokens,
                headers=dict(p.headers),
                extra_body=dict(p.extra_body),
            )
        )
    except LlmConfigError as exc:
        raise ConfigError(
            settings.source or "<defaults>", f"providers.{name}", f"refused: {exc}"
        ) from None


def local_model_config(p: LocalProviderSettings) -> LocalModelConfig:
    """The embedded model's :class:`~agcore_actors.local.LocalModelConfig`."""
    from ..local import CatalogModel, GgufFile, LocalModelConfig

    source: CatalogModel | GgufFile
    if p.gguf is not None:
        template = None if p.chat_template is None else Path(p.chat_template).read_text("utf-8")
        source = GgufFile(path=p.gguf, chat_template=template)
    else:
        source = CatalogModel(name=p.model, cache_dir=p.cache_dir, download=p.download)
    return LocalModelConfig(
        source=source,
        python=p.python,
        n_ctx=p.n_ctx,
        threads=p.threads,
        start_timeout=p.start_timeout,
    )


def agent_config(agent: AgentSettings) -> AgentConfig:
    """An agent's limits as the sessions' :class:`~agcore_actors.agent.AgentConfig`."""
    given = {"budget": budget_of(agent), "media_limits": media_limits_of(agent)}
    return library_config(AgentConfig, agent, given=given)


def agents_of(
    settings: Settings,
    *,
    first: str | None = None,
    server_tools: Mapping[str, Iterable[str]] | None = None,
) -> list[Agent]:
    """The agents, ``first`` (default: ``default_agent``) first.

    An agent's allow-list is its ``tools`` plus the tools of its ``mcp_servers`` (their
    registry names in ``server_tools``); with neither it may call every tool.
    """
    first = first or settings.default_agent
    if first not in settings.agents:
        raise ConfigError(settings.source or "<defaults>", "default_agent", f"no agent {first!r}")
    names = [first, *(n for n in settings.agents if n != first)]
    server_tools = server_tools or {}
    agents = []
    for name in names:
        a = settings.agents[name]
        tools: frozenset[str] | None = None
        if a.tools is not None or a.mcp_servers:
            tools = frozenset(a.tools or ()).union(
                *(server_tools.get(server, ()) for server in a.mcp_servers)
            )
        agents.append(
            Agent(
                name=name,
                description=a.description,
                instructions=a.instructions,
                tools=tools,
                subagents=a.subagents,
                model=model_of(a, settings.default_provider),
            )
        )
    return agents


def host_config(settings: Settings) -> HostConfig:
    """``[host]`` as the SessionHost's :class:`~agcore_actors.agent.HostConfig`."""
    return library_config(HostConfig, settings.host)


def cluster_config(settings: Settings) -> ClusterConfig | None:
    """``[cluster]`` as a :class:`~agcore_actors.cluster.ClusterConfig`, or None when it
    is not enabled (by default it is exactly when the store is PostgreSQL)."""
    enabled = settings.cluster.enabled
    if enabled is None:
        # ``[store] url``, or a ``path`` (``--store``) that is a PostgreSQL URL.
        where = [settings.store.url, settings.store.path]
        enabled = any(isinstance(w, str) and w.startswith(_POSTGRES) for w in where)
    return settings.cluster.config() if enabled else None


_POSTGRES = ("postgresql://", "postgres://")


def store_backend(settings: Settings) -> SessionBackendConfig:
    """``[store]``: a PostgreSQL database (``url``), a SQLite file (``path``), or memory."""
    s = settings.store
    if s.url is not None:
        cluster = cluster_config(settings)
        if cluster is None:
            return PostgresSessions(s.url)
        return PostgresSessions(s.url, stall_timeout=cluster.lease_ttl)
    if s.path is None:
        return InMemorySessions()
    return SqliteSessions(s.path, synchronous=s.synchronous)


def mcp_servers(settings: Settings) -> dict[str, ServerConfig]:
    """The servers that are not ``disabled``, as the MCP package's configuration, with
    ``${VAR}``/``${env:VAR}`` in their strings replaced from the environment
    (:class:`ConfigError` naming an unset variable)."""
    servers: dict[str, ServerConfig] = {}
    for name, s in settings.mcp_servers.items():
        if s.disabled:
            continue
        if isinstance(s, HttpServerSettings):
            raw: dict[str, Any] = {"url": s.url, "headers": dict(s.headers)}
            if s.oauth is not None:
                raw["oauth"] = dict(s.oauth)
            if s.type == "sse":
                raw["type"] = "sse"
        else:
            raw = {
                "command": s.command,
                "args": list(s.args),
                "env": dict(s.env),
                "cwd": s.cwd,
                "inherit_env": list(s.inherit_env),
            }
            if s.parallel_sessions:
                raw["parallel_sessions"] = True
        if s.require_approval is not None:
            raw["require_approval"] = s.require_approval
        if s.resources_tool:
            raw["resources_tool"] = True
        try:
            servers.update(parse_config({"mcpServers": {name: raw}}))
        except McpConfigError as exc:
            source = settings.source or "<defaults>"
            raise ConfigError(source, f"mcpServers.{name}", str(exc)) from None
    return servers
