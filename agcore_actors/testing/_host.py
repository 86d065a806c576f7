"""A bot on a scripted model in one call: :func:`scripted_host` and :func:`run_virtual`.

For tests of a bot's own settings — its retry policy (:class:`~agcore_actors.llm.RetryConfig`),
its host limits (:class:`~agcore_actors.agent.HostConfig`: idle TTL, live cap) — where the
runtime must be real and time virtual::

    def test_sessions_survive_eviction() -> None:
        async def scenario() -> None:
            async with scripted_host(["hello"], config=HostConfig(max_sessions=1)) as host:
                await host.run("a", "hi")
                await host.run("b", "hi")      # evicts "a"
                assert host.live_sessions == ["b"]

        run_virtual(scenario)

Everything :func:`scripted_host` starts is the runtime's own: a strict
:class:`~agcore_actors.ActorSystem`, the :class:`~agcore_actors.llm.ProviderActor` (its
retry loop and timeouts) in front of a :class:`ScriptedProvider`, a
:class:`~agcore_actors.tools.ToolExecutor` when tools are given, the session store actor
over an in-memory backend, and the :class:`~agcore_actors.agent.SessionHost`. Leaving the
block drains the host and stops every actor, also when the block raises or is cancelled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import TypeVar

import attrs
import trio

from ..actor import ActorSystem
from ..agent import (
    Agent,
    AgentBuilder,
    HostConfig,
    SessionHost,
    StoreTurns,
    TurnHooks,
    session_approver,
)
from ..llm import ChatRequest, ProviderConfig, ProviderRegistry, UserMessage, provider_spec
from ..store import InMemorySessions, session_store_spec
from ..tools import Tool, ToolRegistry, tool_executor_spec
from ._scripted import Script, ScriptedProvider
from ._time import virtual_clock

__all__ = ["BOT", "Visit", "count_user_turns", "run_virtual", "scripted_host"]

#: The agent :func:`scripted_host` runs when none is given.
BOT = Agent(name="bot", instructions="You are a helpful assistant.")

T = TypeVar("T")


@attrs.frozen
class Visit:
    """One message of a user to a bot, after a pause: wait ``wait`` seconds of trio
    time, then run a turn of ``session``. Drawn by
    :func:`agcore_actors.testing.strategies.visits`."""

    session: str
    wait: float


@asynccontextmanager
async def scripted_host(
    model: ScriptedProvider | Script,
    *,
    config: HostConfig | None = None,
    provider: ProviderConfig | None = None,
    agent: Agent = BOT,
    tools: Iterable[Tool] = (),
    hooks: TurnHooks | None = None,
) -> AsyncIterator[SessionHost]:
    """A running :class:`~agcore_actors.agent.SessionHost` whose model plays ``model``.

    ``model`` is a :class:`ScriptedProvider` (keep it to read its ``requests``) or its
    script (a list of items, the last repeating, or a function ``(request, attempt) ->
    item``). ``config`` is the host's limits (default :class:`HostConfig()`), ``provider``
    how the provider actor calls the model (its ``retry`` and ``timeouts``; default
    :class:`ProviderConfig()`), ``agent`` the one agent sessions run as, ``hooks`` its
    :class:`~agcore_actors.agent.TurnHooks`, ``tools`` what it may call (a tool that
    ``requires_approval`` asks the session: answer the turn's ``ApprovalRequested`` event
    with :meth:`SessionHost.approve`). The system is strict:
    every message is round-tripped through msgpack, as a bug of a message type should
    fail a test.

    In virtual time, give it async tools: a sync tool runs on a worker thread, which
    the autojumping clock does not wait for (every task looks blocked), so the clock
    jumps to the call's timeout and the call ends as ``timeout``.

    Errors: an empty script raises ``ValueError`` here, before anything starts.
    """
    scripted = model if isinstance(model, ScriptedProvider) else ScriptedProvider(model)
    if isinstance(model, list | tuple) and not model:
        raise ValueError("the script is empty")
    registry = ToolRegistry(list(tools))
    async with ActorSystem(strict=True) as system:
        root = system.root
        llm = await root.start_child(
            provider_spec(
                "llm",
                registry=ProviderRegistry().register(scripted),
                config=provider or ProviderConfig(),
            )
        )
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        builder = AgentBuilder().provider(llm).store(StoreTurns(store)).agent(agent)
        if hooks is not None:
            builder.hooks(hooks)
        if len(registry):
            approver = session_approver(system)
            spec = tool_executor_spec("tools", registry=registry, approver=approver)
            builder.tools(await root.start_child(spec), registry)
        async with SessionHost(system, builder.build(), config) as host:
            yield host


def count_user_turns(request: ChatRequest, attempt: int) -> str:
    """A script for :class:`ScriptedProvider` or :func:`scripted_host`: the model answers
    with the number of user messages it was sent (``"3"`` on a session's third turn), so a
    test can tell that no turn of the conversation was lost — across eviction, restarts,
    compaction — by comparing each answer with the turns it ran."""
    return str(sum(isinstance(message, UserMessage) for message in request.messages))


def run_virtual(scenario: Callable[[], Awaitable[T]]) -> T:
    """``trio.run(scenario, clock=virtual_clock())``: run an async test function in
    virtual time (hours of idle TTL or backoff take no wall-clock time) and return what
    it returns. Call it from a plain (synchronous) test, e.g. under hypothesis's
    ``@given``, which pytest-trio's async tests do not combine with."""
    return trio.run(scenario, clock=virtual_clock())
