"""The rig of the issue-31 capability tests (fallback, budgets, guardrails and tool hooks,
model settings, run context): a SessionHost over real actors — ProviderActors with
several scripted (or real HTTP) providers registered by name, a real ToolExecutor whose
tools count their own runs and concurrency, and the in-memory SessionStore — plus
readers of a turn's events and of the stored transcript."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    HostConfig,
    SessionHost,
    StoreTurns,
    transcript_errors,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import Message, Provider, ProviderRegistry, RetryConfig, provider_actor
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.tools import RunContext, ToolExecutor, ToolRegistry, function_tool
from tests.agent.stores import transcript


@attrs.define
class Counters:
    """What the rig's tools saw: every run (by argument), the most at once."""

    ran: list[int] = attrs.field(factory=list)
    running: int = 0
    most: int = 0
    deps_seen: list[Any] = attrs.field(factory=list)


def make_tools(counters: Counters, work: float = 0.5) -> ToolRegistry:
    @function_tool
    async def record(n: int) -> str:
        """Record n (a side effect the test counts); takes ``work`` seconds."""
        counters.running += 1
        counters.most = max(counters.most, counters.running)
        try:
            await trio.sleep(work)
        finally:
            counters.running -= 1
        counters.ran.append(n)
        return f"recorded {n}"

    @function_tool
    async def whoami(run: RunContext[dict[str, str]]) -> str:
        """Say who the user of this session is."""
        counters.deps_seen.append(run.deps)
        return f"user {run.deps['user']} in {run.session}/{run.turn}"

    return ToolRegistry([record, whoami])


@attrs.define
class Cap:
    system: ActorSystem
    host: SessionHost
    store: ActorRef[Any]
    counters: Counters
    builder: Callable[[AgentConfig], AgentBuilder]

    async def transcript(self, session: str) -> list[Message]:
        return await transcript(self.store, session)

    async def valid(self, session: str) -> bool:
        log = await self.transcript(session)
        return not transcript_errors(log)


@asynccontextmanager
async def cap_host(
    providers: Sequence[Provider | tuple[str, Provider]],
    *,
    agents: Sequence[Agent] = (Agent(name="a"),),
    config: AgentConfig | None = None,
    host_config: HostConfig | None = None,
    deps: Callable[[str], Any] | None = None,
    work: float = 0.5,
    strict: bool = True,
    sessions: InMemorySessions | None = None,
) -> AsyncIterator[Cap]:
    """A SessionHost whose provider registry has ``providers`` (the first is the default),
    on a strict ActorSystem (every message round-trips through msgspec)."""
    registry = ProviderRegistry()
    for entry in providers:
        if isinstance(entry, tuple):
            registry.register(entry[1], entry[0])
        else:
            registry.register(entry)
    first = providers[0]
    registry.set_default(first[0] if isinstance(first, tuple) else first.name)
    counters = Counters()
    async with ActorSystem(strict=strict, seed=0) as system:
        llm = await system.spawn(
            provider_actor(registry, retry=RetryConfig(max_retries=0)), name="llm"
        )
        backend = sessions if sessions is not None else InMemorySessions()
        store = await system.root.start_child(
            session_store_spec("store", backend=backend, clock=trio.current_time)
        )
        tools_registry = make_tools(counters, work)
        tools = await system.spawn(lambda: ToolExecutor(tools_registry), name="tools")

        def builder(config: AgentConfig | None) -> AgentBuilder:
            built = AgentBuilder().provider(llm).store(StoreTurns(store)).agents(agents)
            built = built.tools(tools, tools_registry)
            if config is not None:
                built = built.config(config)
            if deps is not None:
                built = built.deps(deps)
            return built

        host = SessionHost(system, builder(config).build(), host_config or HostConfig())
        async with host:
            yield Cap(system, host, store, counters, builder)


async def events_of(host: SessionHost, session: str, text: str, **kw: Any) -> list[am.TurnEvent]:
    """Every event of one streamed turn."""
    events: list[am.TurnEvent] = []
    async with host.submit(session, text, **kw) as stream:
        async for event in stream:
            events.append(event)
    return events


def final(events: list[am.TurnEvent]) -> am.TurnResult:
    last = events[-1]
    assert isinstance(last, am.TurnCompleted | am.TurnFailed | am.TurnCancelled), last
    return last.result


def answered_once(log: list[Message]) -> bool:
    """Every tool call of ``log`` has exactly one result (and no result lacks a call)."""
    from agcore_actors.llm import AssistantMessage, ToolMessage

    calls = [c.id for m in log if isinstance(m, AssistantMessage) for c in m.tool_calls or ()]
    results = [m.tool_call_id for m in log if isinstance(m, ToolMessage)]
    return sorted(calls) == sorted(results) and len(set(calls)) == len(calls)
