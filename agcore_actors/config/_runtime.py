"""From :class:`Settings` to a running runtime: :func:`open_runtime` and its :class:`Runtime`.

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

What each table becomes is decided by the pure functions of :mod:`._library`; this
module only starts actors with their answers.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import attrs

from ..actor import ActorRef, ActorSystem
from ..agent import (
    Agent,
    AgentBuilder,
    HostConfig,
    RuntimeBundle,
    StoreTurns,
    session_approver,
    session_elicitor,
    session_progress,
    session_sampler,
)
from ..cluster import ClusterConfig, LeaseKeeper
from ..llm import Provider, ProviderConfig, ProviderRegistry, provider_spec
from ..mcp import ConnectionConfig, McpError, servers_spec, wait_ready
from ..mcp._requests import ELICIT, SAMPLE
from ..store import session_store_spec
from ..tools import PermissionChecker, Tool, ToolRegistry, tool_executor_spec
from ._concurrency import concurrency, wrap
from ._errors import ConfigError
from ._library import (
    agent_config,
    agents_of,
    cluster_config,
    host_config,
    local_model_config,
    mcp_servers,
    provider_config,
    remote_provider,
    store_backend,
)
from ._local import for_local_model, recovering, start_local
from ._schema import LocalProviderSettings, Settings

# The pure pieces stay importable from here, where callers first found them.
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

log = logging.getLogger("agcore_actors.config")


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


def _used_providers(settings: Settings) -> list[str]:
    used = {a.provider or settings.default_provider for a in settings.agents.values()}
    return [n for n in settings.providers if n in used or n == settings.default_provider]


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
