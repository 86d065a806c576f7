"""The runtime the ``run`` and ``chat`` commands talk to: the configuration's, under flags.

:class:`RuntimeOptions` holds the flags; :func:`open_runtime` reads the configuration
file, puts the flags and the environment over it (:mod:`._settings` says what wins) and
starts the result with :func:`agcore_actors.config.open_runtime`, the one runtime
builder, adding what the commands need:

- the model: a provider the flags or ``OPENAI_*`` / ``ANTHROPIC_*`` name (as
  ``agcore-actors llm`` reads them), else the file's default provider, else the
  embedded local model (supervised, restarted with backoff, its file made first with
  progress on the terminal; ``--small`` picks the 0.5B, ``--model`` a GGUF file of your
  own; either one forces the local model). An OpenAI-compatible server with no model
  configured is asked for its model;
- the session store: SQLite at ``--store``, else the file's ``[store] path``, else
  :func:`default_store_path`;
- the tools: :func:`~agcore_actors.tools.builtin.builtin_tools` under the working
  directory, gated by :data:`~agcore_actors.tools.builtin.CLI_PERMISSIONS` and by the
  session's approval prompts, besides the file's MCP servers;
- one :class:`~agcore_actors.agent.SessionHost` per agent, each with that agent's
  limits: :meth:`Runtime.switch` hands a session to another agent's host.

Leaving the context drains the hosts and stops every actor; the local model server's
whole process group is stopped and reaped (its actor's ``on_stop``), also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import attrs

from ..actor import ActorRef, ActorSystem
from ..agent import SessionHost
from ..config import Settings, load_settings, mcp_servers, provider_config, store_backend
from ..config import open_runtime as open_configured
from ..config._local import local_timeouts
from ..llm import OpenAICompatibleProvider, Provider, ProviderConfig
from ..local import Progress, qwen_tool_template
from ..store import PostgresSessions, SqliteSessions, session_store_spec
from ..store import messages as sm
from ..tools import PermissionChecker
from ..tools.builtin import CLI_PERMISSIONS, builtin_tools
from ._errors import UsageError
from ._llm_config import build_provider, needs_model, served_model
from ._settings import DEFAULT_INSTRUCTIONS, cli_settings, default_store_path

__all__ = [
    "DEFAULT_INSTRUCTIONS",
    "Runtime",
    "RuntimeOptions",
    "add_runtime_flags",
    "default_store_path",
    "is_postgres_url",
    "open_runtime",
    "open_store",
    "require_session",
]


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
    #: The embedded model's server actor (None: a remote provider answers).
    local_model: ActorRef[Any] | None = None
    #: The configured MCP servers (their connections are ``mcp:{name}`` in ``system``).
    mcp_servers: tuple[str, ...] = ()

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
    return qwen_tool_template("json_array") if "qwen2.5" in path.name.lower() else None


def open_store(system: ActorSystem, path: Path | str) -> Any:
    """Start the session store actor over the SQLite file ``path`` (its directory made),
    or the PostgreSQL database of a ``postgresql://`` URL."""
    if isinstance(path, str) and is_postgres_url(path):
        return system.root.start_child(session_store_spec("store", backend=PostgresSessions(path)))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return system.root.start_child(session_store_spec("store", backend=SqliteSessions(str(path))))


def is_postgres_url(value: str) -> bool:
    """Whether a ``--store`` value names a PostgreSQL database rather than a file."""
    return value.startswith(("postgresql://", "postgres://"))


async def require_session(settings: Settings, session: str) -> None:
    """Raise :class:`~agcore_actors.store.SessionNotFound` unless the store of
    ``settings`` holds ``session``; only the store is opened (and closed again)."""
    async with ActorSystem() as probe:
        store = await probe.root.start_child(
            session_store_spec("store", backend=store_backend(settings))
        )
        await store.ask(sm.LoadSession(session, tail=1))


def _for_local(settings: Settings) -> ProviderConfig:
    """``[retry]``, and ``[timeouts]`` no shorter than the embedded model needs (a 1-thread
    CPU model reads a long prompt slowly: minutes to a first token)."""
    config = provider_config(settings)
    return attrs.evolve(config, timeouts=local_timeouts(config.timeouts))


async def _served(provider: Provider) -> Provider:
    """An OpenAI-compatible server with no model configured: the model it lists."""
    if needs_model(provider) and isinstance(provider, OpenAICompatibleProvider):
        model = await served_model(provider, 10.0)
        if model:
            return OpenAICompatibleProvider(attrs.evolve(provider.config, model=model))
    return provider


@asynccontextmanager
async def open_runtime(
    options: RuntimeOptions,
    env: Mapping[str, str] | None = None,
    *,
    progress: Progress | None = None,
    drain_timeout: float | None = 5.0,
    session: str | None = None,
) -> AsyncIterator[Runtime]:
    """Start the runtime :class:`RuntimeOptions` and the configuration file describe (see
    the module doc).

    Raises :class:`UsageError` for options that cannot work and
    :class:`~agcore_actors.config.ConfigError` for a bad file, before anything starts; a
    local model that cannot start raises its :class:`~agcore_actors.local.LocalModelError`.
    ``session``: a session that must be stored (``--session``); if it is not,
    :class:`~agcore_actors.store.SessionNotFound` is raised before any model, server or
    tool starts (the embedded model takes seconds to minutes to start).
    """
    env = os.environ if env is None else env
    configured = _configured(options, env)
    if configured is not None:
        configured = await _served(configured)
    template = None if options.gguf is None else _template_for(options.gguf)
    made = cli_settings(
        load_settings(options.config, env=env),
        options,
        configured,
        template=template,
        progress=progress,
        env=env,
    )
    settings, local = made.settings, made.local
    made.store_path.parent.mkdir(parents=True, exist_ok=True)
    if session is not None:
        await require_session(settings, session)
    async with AsyncExitStack() as stack:
        runtime = await stack.enter_async_context(
            open_configured(
                settings,
                agent=made.first,
                tools=builtin_tools(options.tools_root),
                checker=PermissionChecker(CLI_PERMISSIONS),
                local={} if local is None else {settings.default_provider: local},
                provider_settings=None if local is None else _for_local(settings),
                providers=made.providers,
            )
        )
        host_config = runtime.host_config
        if drain_timeout is not None:
            host_config = attrs.evolve(host_config, drain_timeout=drain_timeout)
        hosts: dict[str, SessionHost] = {}
        for name in runtime.bundle.agents:
            # Each agent's host: its limits, and it first (the agent new sessions start as).
            hosts[name] = await stack.enter_async_context(
                SessionHost(
                    runtime.system,
                    runtime.bundle_for(name),
                    host_config,
                    name="sessions" if name == made.first else f"sessions:{name}",
                )
            )
        endpoint = runtime.endpoints.get(settings.default_provider)
        label = made.label if endpoint is None else f"local {endpoint.model}"
        yield Runtime(
            system=runtime.system,
            host=hosts[made.first],
            store=runtime.store,
            model=label,
            agents=tuple(settings.agents),
            store_path=made.store_path,
            agent=made.first,
            hosts=hosts,
            local_model=None
            if endpoint is None
            else runtime.system.lookup(f"local-model:{settings.default_provider}"),
            mcp_servers=tuple(mcp_servers(settings)),
        )
