"""The runtime the ``run`` and ``chat`` commands talk to, built from one typed struct.

:class:`RuntimeOptions` says which model and which store; :func:`open_runtime` starts,
under one :class:`~agcore_actors.ActorSystem`:

- the model: a configured provider when there is one — the flags, else
  ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` / ``OPENAI_MODEL``, else ``ANTHROPIC_API_KEY``
  (as ``agcore-actors llm`` reads them) — and otherwise the embedded local model: a
  :class:`~agcore_actors.local.LocalModelServer` under a supervisor of its own (restart
  with backoff), with an OpenAI-compatible provider pointed at it through
  :class:`~agcore_actors.cli._recover.ToolCallRecovery`. ``small`` picks the 0.5B,
  ``gguf`` a file of your own; either one forces the local model;
- the session store: SQLite at ``store`` (default :func:`default_store_path`);
- the tools: :func:`~agcore_actors.tools.builtin.builtin_tools` under the working
  directory, gated by :data:`~agcore_actors.tools.builtin.CLI_PERMISSIONS` and by the
  session's approval prompts;
- a :class:`~agcore_actors.agent.SessionHost` over one agent, ``assistant``.

Leaving the context drains the host and stops every actor; the local model server's
whole process group is stopped and reaped (its actor's ``on_stop``), also on Ctrl-C.
The options are plain data so that a configuration file can fill them in later.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs

from ..actor import ActorRef, ActorSystem, Backoff, Intensity, SupervisorSpec
from ..agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    SessionHost,
    StoreTurns,
    session_approver,
)
from ..config import load_settings
from ..llm import (
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    ProviderConfig,
    ProviderRegistry,
    RetryConfig,
    Timeouts,
    provider_spec,
)
from ..local import (
    GetEndpoint,
    LocalModelConfig,
    Progress,
    local_model_spec,
    prepare_model,
    qwen_tool_template,
)
from ..store import SqliteSessions, session_store_spec
from ..tools import PermissionChecker, ToolRegistry, tool_executor_spec
from ..tools.builtin import CLI_PERMISSIONS, builtin_tools
from ._errors import UsageError
from ._llm_config import build_provider, needs_model, served_model
from ._recover import ToolCallRecovery
from ._settings import agents_from, cli_host_config, file_provider, local_from

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "Runtime",
    "RuntimeOptions",
    "add_runtime_flags",
    "default_agents",
    "default_store_path",
    "open_runtime",
    "open_store",
]


DEFAULT_INSTRUCTIONS = (
    "You are a helpful assistant in a terminal. When a tool can answer exactly (the time, "
    "arithmetic, the files of the working directory), call it; then answer briefly in "
    "plain text using its result."
)


def default_agents() -> tuple[Agent, ...]:
    """``assistant`` (every built-in tool) and ``plain`` (no tools: answers from the
    model alone)."""
    return (
        Agent(name="assistant", instructions=DEFAULT_INSTRUCTIONS),
        Agent(
            name="plain",
            description="Answers from the model alone, without tools.",
            instructions="You are a helpful assistant. Answer briefly in plain text.",
            tools=(),
        ),
    )


def default_store_path(env: Mapping[str, str] | None = None) -> Path:
    """``$AGCORE_ACTORS_DATA/sessions.db``, else ``$XDG_DATA_HOME/agcore-actors/...``,
    else ``~/.local/share/agcore-actors/sessions.db``."""
    env = os.environ if env is None else env
    if env.get("AGCORE_ACTORS_DATA"):
        return Path(env["AGCORE_ACTORS_DATA"]) / "sessions.db"
    base = Path(env.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "agcore-actors" / "sessions.db"


@attrs.frozen(kw_only=True)
class RuntimeOptions:
    """Which model, which store, which agent: everything :func:`open_runtime` needs."""

    #: ``openai``, ``deepseek``, ``qwen`` or ``anthropic``; None: from the environment.
    provider: str | None = None
    #: The provider's API root; None: from the environment.
    base_url: str | None = None
    #: The provider's key; None: from the environment.
    api_key: str | None = None
    #: The provider's model name; None: from the environment or the server.
    model_name: str | None = None
    #: Use the embedded model's small catalog model (Qwen2.5-Coder-0.5B).
    small: bool = False
    #: Serve this GGUF file with the embedded runtime.
    gguf: Path | None = None
    #: Where the local model's joined files live; None: the per-user cache.
    model_cache: Path | None = None
    #: The Python that runs the local model server; None: this one.
    local_python: str | None = None
    #: The local model's context window, in tokens; None: the file's (default 8192).
    local_ctx: int | None = None
    #: The configuration file; None: ``./agcore.toml``, else the user's, else none.
    config: Path | None = None
    #: The agent new sessions start with; None: the file's ``default_agent``.
    agent: str | None = None
    #: The SQLite file of the sessions; None: :func:`default_store_path`.
    store: Path | None = None
    #: The directory the file tools may read (None: the working directory).
    tools_root: Path | None = None
    #: The agents a session may run as; the first is the default.
    agents: tuple[Agent, ...] = attrs.field(factory=lambda: default_agents())
    #: Limits of each turn.
    agent_config: AgentConfig = attrs.field(
        factory=lambda: AgentConfig(max_tool_turns=6, max_repeated_calls=2)
    )

    @property
    def forces_local(self) -> bool:
        return self.small or self.gguf is not None

    @classmethod
    def from_args(
        cls, args: argparse.Namespace, env: Mapping[str, str] | None = None
    ) -> RuntimeOptions:
        """From the flags :func:`add_runtime_flags` adds, and ``AGCORE_ACTORS_LOCAL_PYTHON``
        (a Python that has xllamacpp, when this one has not)."""
        env = os.environ if env is None else env
        return cls(
            local_python=env.get("AGCORE_ACTORS_LOCAL_PYTHON") or None,
            provider=args.provider,
            base_url=args.base_url,
            api_key=args.api_key,
            model_name=args.model_name,
            small=args.small,
            gguf=args.model,
            store=args.store,
            config=args.config,
            agent=args.agent,
        )


def add_runtime_flags(parser: argparse.ArgumentParser) -> None:
    """The model and store flags shared by ``run`` and ``chat``."""
    from ._convert import http_url
    from ._llm_config import KINDS

    model = parser.add_argument_group("model (default: the embedded local model)")
    model.add_argument("--provider", choices=KINDS, help="a hosted provider (else from env)")
    model.add_argument("--base-url", type=http_url, help="an OpenAI-compatible API root")
    model.add_argument("--api-key", help="the provider's key (else from env)")
    model.add_argument("--model-name", metavar="NAME", help="the provider's model name")
    local = model.add_mutually_exclusive_group()
    local.add_argument(
        "--small", action="store_true", help="embedded: Qwen2.5-Coder-0.5B instead of the 1.5B"
    )
    local.add_argument("--model", type=Path, metavar="PATH", help="embedded: serve a GGUF file")
    parser.add_argument(
        "--store", type=Path, metavar="PATH", help="SQLite file of the sessions (default: per user)"
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="configuration file (default: ./agcore.toml, else the user's; flags win over it)",
    )
    parser.add_argument("--agent", metavar="NAME", help="the agent to start with (see /agent)")


@attrs.frozen(kw_only=True)
class Runtime:
    """A running runtime (see the module doc)."""

    system: ActorSystem
    host: SessionHost
    store: ActorRef[Any]
    #: What answers, for people: ``local qwen2.5-coder-1.5b`` or ``openai gpt-4o-mini``.
    model: str
    #: The agents by name, in the configuration's order.
    agents: tuple[str, ...]
    store_path: Path
    #: The agent of ``host``: new sessions start as it, under its limits.
    agent: str = ""
    #: One host per agent, each with that agent's limits (``host`` is ``hosts[agent]``).
    hosts: Mapping[str, SessionHost] = attrs.field(factory=dict)

    def switch(self, agent: str) -> Runtime:
        """The same runtime, ``agent``'s host current (see ``chat``'s ``/agent``)."""
        return attrs.evolve(self, agent=agent, host=self.hosts[agent])


def _configured(options: RuntimeOptions, env: Mapping[str, str]) -> Provider | None:
    """The configured provider, or None when nothing is configured."""
    flags = argparse.Namespace(
        provider=options.provider,
        base_url=options.base_url,
        api_key=options.api_key,
        model=options.model_name,
    )
    anything = (
        options.provider
        or options.base_url
        or env.get("OPENAI_BASE_URL")
        or env.get("OPENAI_API_KEY")
        or env.get("ANTHROPIC_API_KEY")
    )
    if options.forces_local:
        if options.provider or options.base_url:
            raise UsageError(
                "--small/--model (the embedded model) and a provider exclude each other"
            )
        return None
    if not anything:
        return None
    return build_provider(flags, env)


def _template_for(path: Path) -> str | None:
    """Our tool template for a Qwen2.5 file; the file's own template otherwise."""
    return qwen_tool_template("json_block") if "qwen2.5" in path.name.lower() else None


#: The local server restarts quickly after a crash; a model that keeps dying gives up.
_LOCAL_SUPERVISOR = "local"
_LOCAL_INTENSITY = Intensity(max_restarts=5, period=60.0)
_LOCAL_BACKOFF = Backoff(initial=0.5, cap=10.0)
#: A 1-thread CPU model reads a long prompt slowly: minutes, not seconds, to a first token.
_LOCAL_TIMEOUTS = Timeouts(attempt=300.0, idle=120.0, call=900.0)
_LOCAL_MAX_TOKENS = 1024
_LOCAL_RETRY = RetryConfig(max_retries=3, base_delay=1.0, max_delay=8.0)


async def _local_provider(
    system: ActorSystem, config: LocalModelConfig
) -> tuple[Provider, str, ProviderConfig]:
    # The model file is made (downloaded, joined, verified: minutes, the first time) before
    # the actor starts, so the actor's start is only the server's (see start_bound).
    config = await prepare_model(config)
    spec = local_model_spec("local-model", config=config)
    supervisor = await system.start_supervisor(
        SupervisorSpec(_LOCAL_SUPERVISOR, intensity=_LOCAL_INTENSITY, backoff=_LOCAL_BACKOFF)
    )
    server = await supervisor.start_child(spec)
    endpoint = await server.ask(GetEndpoint())
    provider = OpenAICompatibleProvider(
        OpenAIConfig(
            name="local",
            base_url=endpoint.base_url,
            api_key=endpoint.api_key,
            model=endpoint.model,
            headers=endpoint.headers,
        )
    )
    settings = ProviderConfig(retry=_LOCAL_RETRY, timeouts=_LOCAL_TIMEOUTS)
    return ToolCallRecovery(provider), f"local {endpoint.model}", settings


async def _remote_provider(provider: Provider) -> tuple[Provider, str, ProviderConfig]:
    if needs_model(provider) and isinstance(provider, OpenAICompatibleProvider):
        model = await served_model(provider, 10.0)
        if model:
            provider = OpenAICompatibleProvider(attrs.evolve(provider.config, model=model))
    config = getattr(provider, "config", None)
    model = getattr(config, "model", "") or "(server default)"
    if isinstance(provider, OpenAICompatibleProvider):
        # A llama.cpp server behind OPENAI_BASE_URL fails the same way as ours.
        return ToolCallRecovery(provider), f"{provider.name} {model}", ProviderConfig()
    return provider, f"{provider.name} {model}", ProviderConfig()


def _for_local_model(agent: Agent) -> Agent:
    """Temperature 0 (the small models' tool calls were measured, and repeat, at 0) and a
    bound on the answer's length, unless the agent sets its own."""
    settings = agent.model
    settings = attrs.evolve(
        settings,
        temperature=0.0 if settings.temperature is None else settings.temperature,
        max_tokens=settings.max_tokens or _LOCAL_MAX_TOKENS,
    )
    return attrs.evolve(agent, model=settings)


def open_store(system: ActorSystem, path: Path) -> Any:
    """Start the session store actor over the SQLite file ``path`` (its directory made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return system.root.start_child(session_store_spec("store", backend=SqliteSessions(str(path))))


@asynccontextmanager
async def open_runtime(
    options: RuntimeOptions,
    env: Mapping[str, str] | None = None,
    *,
    progress: Progress | None = None,
    drain_timeout: float | None = 5.0,
) -> AsyncIterator[Runtime]:
    """Start the runtime :class:`RuntimeOptions` and the configuration file describe (see
    the module doc and :mod:`._settings` for what wins over what).

    Raises :class:`UsageError` for options that cannot work and
    :class:`~agcore_actors.config.ConfigError` for a bad file, before anything starts; a
    local model that cannot start raises its :class:`~agcore_actors.local.LocalModelError`.
    """
    env = os.environ if env is None else env
    settings = load_settings(options.config, env=env)
    choice = agents_from(
        settings, options.agent, defaults=options.agents, default_limits=options.agent_config
    )
    configured = _configured(options, env)
    if configured is None and not options.forces_local:
        configured = file_provider(settings)
    # Checked before anything starts: a missing --model file is a usage error.
    local = None
    if configured is None:
        template = None if options.gguf is None else _template_for(options.gguf)
        local = local_from(
            settings,
            small=options.small,
            gguf=options.gguf,
            python=options.local_python,
            cache=options.model_cache,
            n_ctx=options.local_ctx,
            template=template,
            progress=progress,
        )
    store_path = options.store or (
        Path(settings.store.path) if settings.store.path else default_store_path(env)
    )
    async with ActorSystem() as system, AsyncExitStack() as stack:
        root = system.root
        if local is not None:
            provider, label, settings_ = await _local_provider(system, local)
        else:
            assert configured is not None
            provider, label, settings_ = await _remote_provider(configured)
        llm = await root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(provider), config=settings_)
        )
        store = await open_store(system, store_path)
        registry = ToolRegistry(builtin_tools(options.tools_root))
        tools = await root.start_child(
            tool_executor_spec(
                "tools",
                registry=registry,
                checker=PermissionChecker(CLI_PERMISSIONS),
                approver=session_approver(system),
            )
        )
        agents = choice.agents
        if local is not None:
            agents = tuple(_for_local_model(agent) for agent in agents)
        host_settings = cli_host_config(settings, drain_timeout)
        hosts: dict[str, SessionHost] = {}
        for agent in agents:
            # Each agent's host: its limits, and it first (the agent new sessions start as).
            bundle = (
                AgentBuilder()
                .provider(llm)
                .tools(tools, registry)
                .store(StoreTurns(store))
                .agents([agent, *(a for a in agents if a is not agent)])
                .config(choice.limits[agent.name])
                .build()
            )
            name = "sessions" if agent.name == choice.first else f"sessions:{agent.name}"
            hosts[agent.name] = await stack.enter_async_context(
                SessionHost(system, bundle, host_settings, name=name)
            )
        yield Runtime(
            system=system,
            host=hosts[choice.first],
            store=store,
            model=label,
            agents=tuple(a.name for a in agents),
            store_path=store_path,
            agent=choice.first,
            hosts=hosts,
        )
