"""From :class:`Settings` to a running runtime: :func:`open_runtime`, and the pure pieces
it is made of (each maps one part of the settings onto the library's own configuration).

:func:`open_runtime` is the one runtime builder (``serve``, ``run`` and ``chat`` use it).
It starts, under one actor system: the embedded model server of each ``local`` provider
an agent uses, supervised, its file made first (see :mod:`._local`), the ProviderActor
over every used provider (an OpenAI-compatible one wrapped in
:class:`~agcore_actors.local.ToolCallRecovery`) running as many calls at once as the
providers' ``max_concurrency`` allow (default: ``[host] max_turns_in_flight`` each; see
:mod:`._concurrency`), the SessionStore, and — when there are
MCP servers or tools — the MCP connections and a ToolExecutor; it yields a
:class:`Runtime` whose ``bundle`` (or :meth:`Runtime.bundle_for` an agent) and
``host_config`` make a :class:`~agcore_actors.agent.SessionHost`. Agents of a ``local``
provider answer at temperature 0 within 1024 tokens unless they set their own. Leaving
it stops all of them (when it opened the system) — also when cancelled, and when a
start fails half-way.
"""

from __future__ import annotations

import logging
import typing
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ..actor import ActorRef, ActorSystem
from ..agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    HostConfig,
    RuntimeBundle,
    StoreTurns,
    session_approver,
    session_elicitor,
    session_progress,
    session_sampler,
)
from ..cluster import ClusterConfig, LeaseKeeper
from ..llm import (
    AnthropicConfig,
    AnthropicProvider,
    LlmConfigError,
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    ProviderConfig,
    ProviderRegistry,
    RetryConfig,
    Timeouts,
    provider_spec,
)
from ..mcp import (
    ConnectionConfig,
    McpConfigError,
    McpError,
    ServerConfig,
    parse_config,
    servers_spec,
    wait_ready,
)
from ..mcp._requests import ELICIT, SAMPLE
from ..store import (
    InMemorySessions,
    PostgresSessions,
    SessionBackendConfig,
    SqliteSessions,
    session_store_spec,
)
from ..tools import PermissionChecker, Tool, ToolRegistry, tool_executor_spec
from ._agents import budget_of, media_limits_of, model_of
from ._concurrency import concurrency, wrap
from ._errors import ConfigError
from ._local import for_local_model, recovering, start_local
from ._schema import (
    AgentSettings,
    HttpServerSettings,
    LocalProviderSettings,
    OpenAIProviderSettings,
    Settings,
    no_limit,
)

__all__ = [
    "Runtime",
    "agent_config",
    "agents_of",
    "cluster_config",
    "host_config",
    "local_model_config",
    "mcp_servers",
    "open_runtime",
    "provider_config",
    "remote_provider",
    "store_backend",
]

if TYPE_CHECKING:  # the local package is imported only when a local model is used
    from ..local import LocalModelConfig

log = logging.getLogger("agcore_actors.config")
T = TypeVar("T", bound=attrs.AttrsInstance)


@attrs.frozen(kw_only=True)
class Runtime:
    """What :func:`open_runtime` started; valid until it is left."""

    #: The actor system everything runs in.
    system: ActorSystem
    #: Provider, store, tools and agents: what a SessionHost (or a Session) needs.
    bundle: RuntimeBundle
    #: The host's limits (``[host]``).
    host_config: HostConfig
    #: The ProviderActor.
    provider: ActorRef[Any]
    #: The SessionStore actor (for listing, exporting and deleting sessions).
    store: ActorRef[Any]
    #: The settings it was made from.
    settings: Settings
    #: Each local provider's model server: name -> its base URL.
    local_servers: Mapping[str, str] = attrs.field(factory=dict)
    #: Each local provider's :class:`~agcore_actors.local.messages.Endpoint`, by name.
    endpoints: Mapping[str, Any] = attrs.field(factory=dict)
    #: ``[cluster]`` when ``enabled``: this host as one of several sharing the store.
    cluster_config: ClusterConfig | None = None

    def lease_keeper(self) -> LeaseKeeper | None:
        """A fresh lease keeper over :attr:`store` for one SessionHost (``cluster=``), or
        None when ``[cluster]`` is not enabled."""
        if self.cluster_config is None:
            return None
        return LeaseKeeper(self.store, self.cluster_config)

    def bundle_for(self, agent: str) -> RuntimeBundle:
        """``bundle`` with ``agent`` first (the agent new sessions start as) and its own
        limits (``[agents.NAME]``'s); a host per agent gives each agent its limits."""
        agents = self.bundle.agents
        if agent not in agents:
            raise ConfigError(
                "open_runtime", "agent", f"expected a configured agent, got {agent!r}"
            )
        order = {agent: agents[agent], **{n: a for n, a in agents.items() if n != agent}}
        return attrs.evolve(
            self.bundle, agents=order, config=agent_config(self.settings.agents[agent])
        )


# -- pure mappings ------------------------------------------------------------------------------


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


def _used_providers(settings: Settings) -> list[str]:
    used = {a.provider or settings.default_provider for a in settings.agents.values()}
    return [n for n in settings.providers if n in used or n == settings.default_provider]


# -- the running runtime ----------------------------------------------------------------------


@asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    system: ActorSystem | None = None,
    agent: str | None = None,
    tools: Iterable[Tool] = (),
    mcp_ready_timeout: float = 30.0,
    local_ready_timeout: float | None = None,
    local: Mapping[str, Any] | None = None,
    checker: PermissionChecker | None = None,
    provider_settings: ProviderConfig | None = None,
    providers: Mapping[str, Provider] | None = None,
) -> AsyncIterator[Runtime]:
    """Start what ``settings`` describe; yield the :class:`Runtime`.

    ``system``: run under it (its root supervises everything started; they stop with it)
    instead of a system of our own. ``agent``: the agent new sessions start with, whose
    limits apply to the sessions (default: ``default_agent``). ``tools``: function tools
    offered besides the MCP servers' tools. A server not connected within
    ``mcp_ready_timeout`` seconds is logged and its tools are left out of the allow-lists.
    ``local``: a :class:`~agcore_actors.local.LocalModelConfig` by provider name, used
    instead of what the file says of that ``local`` provider (a command's flags and its
    progress display). ``checker``: the ToolExecutor's permission checker.
    ``provider_settings``: the ProviderActor's retries and timeouts instead of
    ``[retry]`` and ``[timeouts]``. ``providers``: ready providers by name, used instead
    of the file's table of that name (which must exist: it says what kind it is).
    Raises :class:`ConfigError` for values the library refuses, and the local model's
    errors (:class:`~agcore_actors.local.LocalModelError`) when its server cannot start.
    """
    first = agent or settings.default_agent
    if first not in settings.agents:
        choices = ", ".join(settings.agents)
        raise ConfigError(
            "open_runtime", "agent", f"expected a configured agent ({choices}), got {first!r}"
        )
    async with AsyncExitStack() as stack:
        if system is None:
            system = await stack.enter_async_context(ActorSystem())
        root = system.root
        registry = ProviderRegistry()
        local_servers: dict[str, str] = {}
        endpoints: dict[str, Any] = {}
        used = _used_providers(settings)
        limits, total = concurrency(settings, used)
        for name in used:
            p = settings.providers[name]
            if isinstance(p, LocalProviderSettings):
                config = (local or {}).get(name) or local_model_config(p)
                endpoint, provider = await start_local(
                    system, name, config, timeout=local_ready_timeout
                )
                local_servers[name], endpoints[name] = endpoint.base_url, endpoint
            else:
                ready = (providers or {}).get(name) or remote_provider(settings, name)
                provider = recovering(ready)
            registry.register(wrap(provider, limits[name], total), name)
        registry.set_default(settings.default_provider)
        llm = await root.start_child(
            provider_spec(
                "llm",
                registry=registry,
                config=provider_settings or provider_config(settings),
                max_concurrency=total,
            )
        )
        store = await root.start_child(session_store_spec("store", backend=store_backend(settings)))
        builder = AgentBuilder().provider(llm).store(StoreTurns(store))
        builder.config(agent_config(settings.agents[first]))
        tool_registry = ToolRegistry()
        tool_registry.register_all(tools)
        servers = mcp_servers(settings)
        server_tools: dict[str, list[str]] = {}
        if servers or tool_registry.names():
            executor = await root.start_child(
                tool_executor_spec(
                    "tools",
                    registry=tool_registry,
                    checker=checker,
                    approver=session_approver(system),
                )
            )
            builder.tools(executor, tool_registry)
        if servers:
            # An MCP server's elicitation and sampling go to the session whose tool call
            # they serve (sampling: asked as an approval, answered by this provider).
            requests = {ELICIT: session_elicitor(system), SAMPLE: session_sampler(system, llm)}
            connection = ConnectionConfig(requests=requests, progress=session_progress(system))
            await system.start_supervisor(
                servers_spec(servers, registry=tool_registry, config=connection)
            )
            for name in servers:
                try:
                    await wait_ready(system.lookup(f"mcp:{name}"), timeout=mcp_ready_timeout)
                except McpError as exc:
                    log.warning("MCP server %s is not ready: %s", name, exc)
            for tool_name in tool_registry.names():
                server = getattr(tool_registry.get(tool_name), "server", None)
                if isinstance(server, str):
                    server_tools.setdefault(server, []).append(tool_name)
        agents = agents_of(settings, first=first, server_tools=server_tools)
        builder.agents([_for_model(agent, settings) for agent in agents])
        yield Runtime(
            system=system,
            bundle=builder.build(),
            host_config=host_config(settings),
            provider=llm,
            store=store,
            settings=settings,
            local_servers=local_servers,
            endpoints=endpoints,
            cluster_config=cluster_config(settings),
        )


def _for_model(agent: Agent, settings: Settings) -> Agent:
    provider = settings.providers[agent.model.provider or settings.default_provider]
    return for_local_model(agent) if isinstance(provider, LocalProviderSettings) else agent
