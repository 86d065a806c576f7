"""The turn rig of the agent tests: a session ``s1`` on either real store, a scripted
model, the ``record`` tool (whose calls the test counts) and a real tool executor; and
small readers of the requests the model received."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from agcore_actors import Actor, ActorRef, ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    StoreTurns,
    TurnHooks,
    session_spec,
)
from agcore_actors.llm import (
    ChatRequest,
    Message,
    ProviderRegistry,
    RetryConfig,
    UserMessage,
    provider_actor,
)
from agcore_actors.store import InMemorySessions, SqliteSessions, session_store_spec
from agcore_actors.store.policy import closed, pending_after
from agcore_actors.testing import ScriptedProvider
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool

Play = Callable[[ChatRequest, int], Any]


@attrs.define
class Rig:
    provider: ScriptedProvider
    store: ActorRef[Any]
    session: ActorRef[Any]
    ran: list[int]


@asynccontextmanager
async def rig(
    backend: str,
    tmp_path: Path,
    play: Play,
    *,
    agents: tuple[Agent, ...] = (Agent(name="helper"),),
    config: AgentConfig | None = None,
    hooks: TurnHooks | None = None,
    executor: Callable[[ToolRegistry], Actor[Any]] | None = None,
) -> AsyncIterator[Rig]:
    """A session ``s1`` over a scripted model, the ``record`` tool and a real store."""
    ran: list[int] = []

    @function_tool
    async def record(n: int) -> str:
        """Record n (a side effect the test counts)."""
        ran.append(n)
        return f"recorded {n}"

    async with ActorSystem(strict=True, seed=0) as system:
        provider = ScriptedProvider(play)
        llm = await system.spawn(
            provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
            name="llm",
        )
        sessions = (
            InMemorySessions() if backend == "memory" else SqliteSessions(str(tmp_path / "s.db"))
        )
        store_ref = await system.root.start_child(
            session_store_spec("store", backend=sessions, clock=trio.current_time)
        )
        registry = ToolRegistry([record])
        make = executor or (lambda tools: ToolExecutor(tools))
        tools = await system.spawn(lambda: make(registry), name="tools")
        builder = AgentBuilder().provider(llm).store(StoreTurns(store_ref)).agents(agents)
        builder = builder.tools(tools, registry)
        if config is not None:
            builder = builder.config(config)
        if hooks is not None:
            builder = builder.hooks(hooks)
        session = await system.root.start_child(session_spec("s1", builder.build()))
        yield Rig(provider, store_ref, session, ran)


def store_accepts(messages: list[Message]) -> bool:
    """The store's rule: every write goes through pending_after, a turn ends closed."""
    try:
        closed(pending_after([], messages), "the log")
    except Exception:
        return False
    return True


def last_user(request: ChatRequest) -> str:
    user = next(m for m in reversed(request.messages) if isinstance(m, UserMessage))
    return str(user.content)
