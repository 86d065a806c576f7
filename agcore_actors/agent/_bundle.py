"""The runtime a session needs, gathered once: :class:`RuntimeBundle`, built by
:class:`AgentBuilder`, and :func:`session_spec` to start a Session under a supervisor."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from ..actor import ActorRef, ActorStopped, ActorSystem, ChildSpec, MailboxFull, Restart
from ..context import messages as cm
from ..llm import messages as lm
from ..tools import ApprovalDecision, ApprovalRequest, ToolRegistry
from ..tools import messages as tm
from . import messages as am
from ._config import Agent, AgentConfig
from ._errors import AgentConfigError
from ._hooks import TurnHooks
from ._memories import MemoryScope, memory_tools
from ._retrieve import retrieve_tool
from ._session import Session
from ._session_control import SessionSettings
from ._store_port import TurnStore
from ._turn import TurnPorts
from ._turn_setup import Deps

__all__ = [
    "AgentBuilder",
    "RuntimeBundle",
    "session_approver",
    "session_elicitor",
    "session_name",
    "session_progress",
    "session_spec",
]


def session_name(session: str) -> str:
    """The actor name of a session (what :func:`session_approver` looks up)."""
    return f"session:{session}"


@attrs.frozen(kw_only=True)
class RuntimeBundle:
    """Refs to the shared actors and the agents a session may run as; shared, read-only."""

    provider: ActorRef[lm.ProviderMsg]
    store: TurnStore
    #: Agents by name, in the order given; the first is the default.
    agents: Mapping[str, Agent]
    tools: ActorRef[tm.ToolExecutorMsg] | None = None
    registry: ToolRegistry | None = None
    compactor: ActorRef[cm.CompactorMsg] | None = None
    hooks: TurnHooks = attrs.field(factory=lambda: TurnHooks())
    config: AgentConfig = attrs.field(factory=AgentConfig)
    #: ``deps(session id)``: what each turn's run context carries as ``deps``.
    deps: Deps | None = None

    # Built once and shared by every session (read-only): a live session holds no copy.
    _agents_view: Mapping[str, Agent] = attrs.field(init=False, eq=False, repr=False)
    _ports: TurnPorts = attrs.field(init=False, eq=False, repr=False)
    # Session settings by (default agent, max_queued, history_tail): one object for all
    # their sessions.
    _settings: dict[tuple[str, int, int | None], SessionSettings] = attrs.field(
        init=False, eq=False, repr=False, factory=dict
    )

    def __attrs_post_init__(self) -> None:
        registry = self.registry
        definitions = registry.definitions if registry is not None else list
        ports = TurnPorts(
            provider=self.provider,
            tools=self.tools,
            definitions=definitions,
            compactor=self.compactor,
        )
        object.__setattr__(self, "_agents_view", MappingProxyType(dict(self.agents)))
        object.__setattr__(self, "_ports", ports)

    @property
    def default_agent(self) -> str:
        return next(iter(self.agents))

    def ports(self) -> TurnPorts:
        """The ports every session of this bundle shares (nothing mutates them)."""
        return self._ports

    def session_settings(
        self, default_agent: str, max_queued: int, history_tail: int | None
    ) -> SessionSettings:
        """The settings shared by this bundle's sessions with these limits."""
        key = (default_agent, max_queued, history_tail)
        found = self._settings.get(key)
        if found is None:
            found = self._settings[key] = SessionSettings(
                agents=self._agents_view,
                default_agent=default_agent,
                ports=self._ports,
                store=self.store,
                config=self.config,
                max_queued=max_queued,
                history_tail=history_tail,
                hooks=self.hooks,
                deps=self.deps,
            )
        return found


class AgentBuilder:
    """Collects a :class:`RuntimeBundle`; :meth:`build` checks, in this order, that a
    provider, a store and at least one agent were given (``AgentConfigError``:
    ``missing provider``, ``missing store``, ``missing agent``)."""

    def __init__(self) -> None:
        self._fields: dict[str, Any] = {}
        self._agents: dict[str, Agent] = {}

    def provider(self, ref: ActorRef[lm.ProviderMsg]) -> AgentBuilder:
        self._fields["provider"] = ref
        return self

    def store(self, store: TurnStore) -> AgentBuilder:
        self._fields["store"] = store
        return self

    def tools(self, executor: ActorRef[tm.ToolExecutorMsg], registry: ToolRegistry) -> AgentBuilder:
        self._fields["tools"] = executor
        self._fields["registry"] = registry
        return self

    def knowledge(self, memory: ActorRef[Any]) -> AgentBuilder:
        """Offer the ``retrieve`` tool over ``memory`` (a MemoryStore's knowledge pages);
        needs :meth:`tools` first (the tool goes into its registry)."""
        registry = self._fields.get("registry")
        if registry is None:
            raise AgentConfigError("knowledge() needs tools() first: missing tool registry")
        registry.register(retrieve_tool(memory))
        return self

    def memories(self, memory: ActorRef[Any], *, scope: MemoryScope) -> AgentBuilder:
        """Offer the ``remember`` and ``recall`` tools over ``memory`` (a MemoryStore's
        long-term memories) for ``scope``: a fixed string, or a function of the call's
        ``ToolContext`` (see :mod:`agcore_actors.agent._memories`); needs :meth:`tools`."""
        registry = self._fields.get("registry")
        if registry is None:
            raise AgentConfigError("memories() needs tools() first: missing tool registry")
        for tool in memory_tools(memory, scope=scope):
            registry.register(tool)
        return self

    def hooks(self, hooks: TurnHooks) -> AgentBuilder:
        self._fields["hooks"] = hooks
        return self

    def compactor(self, ref: ActorRef[cm.CompactorMsg]) -> AgentBuilder:
        self._fields["compactor"] = ref
        return self

    def agent(self, agent: Agent) -> AgentBuilder:
        if agent.name in self._agents:
            raise AgentConfigError(f"agent {agent.name!r} is already registered")
        self._agents[agent.name] = agent
        return self

    def agents(self, agents: Iterable[Agent]) -> AgentBuilder:
        for agent in agents:
            self.agent(agent)
        return self

    def config(self, config: AgentConfig) -> AgentBuilder:
        self._fields["config"] = config
        return self

    def deps(self, deps: Deps) -> AgentBuilder:
        """``deps(session id) -> object``: called once per turn, its value is the
        ``deps`` of the turn's :class:`~agcore_actors.tools.RunContext` (tools that
        declare one, guardrails, tool hooks); never serialised, never shown to a model."""
        self._fields["deps"] = deps
        return self

    def build(self) -> RuntimeBundle:
        for required in ("provider", "store"):
            if required not in self._fields:
                raise AgentConfigError(f"missing {required}")
        if not self._agents:
            raise AgentConfigError("missing agent")
        return RuntimeBundle(agents=dict(self._agents), **self._fields)


def session_spec(
    session: str,
    bundle: RuntimeBundle,
    *,
    agent: str | None = None,
    max_queued: int = 4,
    history_tail: int | None = 200,
    restart: Restart = Restart.TRANSIENT,
    shutdown: float = 30.0,
    store: TurnStore | None = None,
) -> ChildSpec[Any]:
    """A child spec for the Session of ``session``, named :func:`session_name`.

    ``agent`` is the agent a new session starts with (a stored session keeps its own);
    ``restart`` defaults to transient: a crashed session restarts from the store, one
    that stopped normally stays stopped. ``store``, if given, is what the session writes
    through instead of the bundle's (a view of it under a lease, on a clustered host).
    """
    default = agent or bundle.default_agent
    if default not in bundle.agents:
        raise AgentConfigError(f"unknown agent {default!r}")

    settings = bundle.session_settings(default, max_queued, history_tail)
    factory = _SessionFactory(session, settings, store)
    return ChildSpec(
        name=session_name(session), factory=factory, restart=restart, shutdown=shutdown
    )


class _SessionFactory:
    """Makes a session's actor (each restart a fresh one); a few slots, kept as long as
    the session is live, so smaller than a closure."""

    __slots__ = ("session", "settings", "store")

    def __init__(
        self, session: str, settings: SessionSettings, store: TurnStore | None = None
    ) -> None:
        self.session = session
        self.settings = settings
        self.store = store

    def __call__(self) -> Session:
        return Session.sharing(self.session, self.settings, self.store)


def session_elicitor(system: ActorSystem) -> Any:
    """An ``elicitation/create`` handler for MCP connections
    (``ConnectionConfig(requests={"elicitation/create": session_elicitor(system)})``) that
    asks the session whose tool call the server is serving: the session shows it as an
    ``ElicitationRequested`` event and waits for ``AnswerElicitation``. A request no
    single session's call owns, or of a session that is not running, is declined."""

    async def elicit(server: str, params: Any) -> dict[str, object]:
        from ..mcp._requests import requesting_call, requesting_session

        session = requesting_session()
        if not session or not isinstance(params, dict):
            return {"action": "decline"}
        try:
            ref = system.lookup(session_name(session))
        except LookupError:
            return {"action": "decline"}
        schema = params.get("requestedSchema")
        ask = am.Elicit(
            server=server,
            message=str(params.get("message", "")),
            schema=schema if isinstance(schema, dict) else {},
            call_id=requesting_call(),
        )
        answer: am.ElicitationAnswer = await ref.ask(ask)
        if answer.action == "accept":
            return {"action": "accept", "content": answer.content or {}}
        return {"action": answer.action}

    return elicit


def session_progress(system: ActorSystem) -> Any:
    """A progress handler for MCP connections (``ConnectionConfig(progress=...)``): each
    progress notification of a session's tool call becomes a ``ToolCallProgress`` event
    of its running turn. Advisory: dropped when the session is gone or its mailbox full."""

    def report(
        session: str,
        call_id: str,
        server: str,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        try:
            ref = system.lookup(session_name(session))
            ref.tell_nowait(
                am.ReportProgress(
                    call_id=call_id, server=server, progress=progress, total=total, message=message
                )
            )
        except (LookupError, MailboxFull, ActorStopped):
            pass

    return report


def session_approver(system: ActorSystem) -> Any:
    """An approver for the ToolExecutor that asks the session that made the call.

    The session shows the request to its caller as an ``ApprovalRequested`` event and
    waits for an ``Approve`` message; a call from a session that is not running is
    denied.
    """

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        try:
            ref = system.lookup(session_name(request.session_id))
        except LookupError:
            return ApprovalDecision(False, f"session {request.session_id!r} is not running")
        decision: ApprovalDecision = await ref.ask(request)
        return decision

    return approve
