"""Helpers of the session race tests: a host over either real store with a scripted
model and real tools, store adapters that fail or answer late as a test says, a
cancellation after a delay and a number of checkpoints, and the check that every
session is back in step with its store."""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio
import trio.testing

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.actor import ChildSpec
from agcore_actors.agent import Agent, AgentBuilder, HostConfig, SessionHost, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    ChatRequest,
    ProviderRegistry,
    RetryConfig,
    ToolMessage,
    UserMessage,
    provider_actor,
)
from agcore_actors.store import (
    InMemorySessions,
    SessionStore,
    StoreUnavailable,
    session_store_spec,
)
from agcore_actors.store.lowlevel import SqliteSessionBackend
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool
from tests.agent.fakes import UNIT
from tests.agent.stores import stored
from tests.store.helpers import problems


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    await trio.sleep(0.01)
    return a + b


def tooling_model(latency: float) -> ScriptedProvider:
    """A model that calls ``add`` once per turn (fresh call ids), then answers."""
    ids = iter(range(1_000_000))

    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        if isinstance(request.messages[-1], UserMessage):
            call = ScriptedToolCall("add", '{"a": 1, "b": 2}', f"call-{next(ids)}")
            return ScriptedReply(tool_calls=[call], latency=latency, usage=UNIT)
        return ScriptedReply(text="done", latency=latency, usage=UNIT)

    return ScriptedProvider(play)


@attrs.define
class Faults:
    """Which writes of a :class:`FlakyTurns` fail, and how."""

    #: Fail begin/commit/facts writes with StoreUnavailable (the disk is full).
    down: bool = False
    #: Chance that a write fails while ``down``.
    rate: float = 1.0
    #: Chance that a failing write was applied first (its reply lost: an unknown outcome).
    applied: float = 0.0
    #: Which writes may fail.
    writes: frozenset[str] = frozenset({"begin", "commit", "set_facts"})
    rng: random.Random = attrs.field(factory=lambda: random.Random(0))
    failed: int = 0

    async def write(self, name: str, work: Callable[[], Awaitable[Any]]) -> Any:
        if not (self.down and name in self.writes and self.rng.random() < self.rate):
            return await work()
        self.failed += 1
        if self.rng.random() < self.applied:
            await work()
        raise StoreUnavailable(f"test: {name} failed (SQLITE_FULL)")


class FlakyTurns(StoreTurns):
    """A TurnStore over the real store whose writes fail as ``faults`` says."""

    def __init__(self, store: ActorRef[Any], faults: Faults) -> None:
        super().__init__(store)
        self.faults = faults

    async def begin(self, *args: Any, **kwargs: Any) -> int:
        work = functools.partial(super().begin, *args, **kwargs)
        result: int = await self.faults.write("begin", work)
        return result

    async def begin_and_load(self, *args: Any, **kwargs: Any) -> Any:
        return await self.faults.write(
            "begin", functools.partial(super().begin_and_load, *args, **kwargs)
        )

    async def commit(self, *args: Any, **kwargs: Any) -> int:
        result: int = await self.faults.write(
            "commit", functools.partial(super().commit, *args, **kwargs)
        )
        return result

    async def set_facts(self, *args: Any, **kwargs: Any) -> int:
        result: int = await self.faults.write(
            "set_facts", functools.partial(super().set_facts, *args, **kwargs)
        )
        return result


class Sqlite:
    """The SessionStore on one SQLite file, keeping its writer connection (to make the
    file read-only for a while, as a full disk would)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.backends: list[SqliteSessionBackend] = []

    def open(self) -> SqliteSessionBackend:
        self.backends.append(SqliteSessionBackend(self.path, busy_timeout=0.05))
        return self.backends[-1]

    def spec(self) -> ChildSpec[Any]:
        factory = functools.partial(SessionStore, self.open, open_reader=self.open, threaded=True)
        return ChildSpec("store", factory)


@asynccontextmanager
async def host_on(
    backend: str,
    tmp_path: Path,
    *,
    latency: float = 0.01,
    faults: Faults | None = None,
    sqlite: Sqlite | None = None,
    model: ScriptedProvider | None = None,
    agents: tuple[Agent, ...] = (Agent(name="a", tools=["add"]),),
    turns: Callable[[ActorRef[Any]], StoreTurns] | None = None,
) -> AsyncIterator[tuple[SessionHost, ActorRef[Any], ActorSystem]]:
    """A host over the real store (``memory`` or ``sqlite`` on a tmp file), a real
    provider actor playing ``model`` (:func:`tooling_model` by default) and a real tool
    executor."""
    async with ActorSystem(strict=True, seed=0) as system:
        if backend == "memory":
            spec = session_store_spec("store", backend=InMemorySessions(), clock=trio.current_time)
        else:
            spec = (sqlite or Sqlite(tmp_path / "s.db")).spec()
        store_ref = await system.root.start_child(spec)
        store = turns(store_ref) if turns else FlakyTurns(store_ref, faults or Faults())
        llm = await system.spawn(
            provider_actor(
                ProviderRegistry().register(model or tooling_model(latency)),
                retry=RetryConfig(max_retries=0),
            ),
            name="llm",
        )
        registry = ToolRegistry([add])
        executor = await system.spawn(lambda: ToolExecutor(registry), name="tools")
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(executor, registry)
            .store(store)
            .agents(agents)
            .build()
        )
        async with SessionHost(system, bundle, HostConfig()) as host:
            yield host, store_ref, system


async def cancelled_after(
    checkpoints: int, work: Callable[[], Awaitable[object]], delay: float = 0.0
) -> None:
    """Run ``work``, cancelling it after ``delay`` seconds and then ``checkpoints``
    checkpoints of another task."""
    with trio.CancelScope() as scope:

        async def cancel() -> None:
            if delay:
                await trio.sleep(delay)
            for _ in range(checkpoints):
                await trio.lowlevel.checkpoint()
            scope.cancel()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel)
            await work()


async def assert_consistent(host: SessionHost, store: ActorRef[Any], sessions: list[str]) -> None:
    """The next turn of every session completes; then none has an open turn and every
    stored transcript is valid."""
    results: dict[str, am.TurnResult] = {}

    async def next_turn(sid: str) -> None:
        results[sid] = await host.run(sid, "after")

    async with trio.open_nursery() as nursery:
        for sid in sessions:
            nursery.start_soon(next_turn, sid)
    assert {sid: r.status for sid, r in results.items()} == dict.fromkeys(sessions, "completed")
    for sid in sessions:
        snapshot = await stored(store, sid)
        assert snapshot is not None
        assert snapshot.record.open_turn is None, sid
        assert problems([e.message for e in snapshot.entries]) == [], sid


def session_rows(system: ActorSystem) -> dict[str, int]:
    """Restarts of every session actor, by name."""
    return {row.name: row.restarts for row in system.snapshot() if row.name.startswith("session:")}


def delegating_model() -> ScriptedProvider:
    """A lead that asks the ``researcher`` agent (a child session) once per turn."""
    ids = iter(range(1_000_000))

    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        last = request.messages[-1]
        if isinstance(last, ToolMessage):
            return ScriptedReply(text="done", latency=0.01)
        if isinstance(last, UserMessage) and last.content == "find":
            return ScriptedReply(text="found", latency=0.01)
        call = ScriptedToolCall("researcher", '{"task": "find"}', f"k{next(ids)}")
        return ScriptedReply(tool_calls=[call], latency=0.01)

    return ScriptedProvider(play)


class SlowCommits(StoreTurns):
    """Commits hang while ``slow`` (the store stopped answering)."""

    slow = False

    async def commit(self, *args: Any, **kwargs: Any) -> int:
        if self.slow:
            await trio.sleep(1000)
        return await super().commit(*args, **kwargs)


class ChildFaults(StoreTurns):
    """Fails the ``what`` write of every child session (``<parent>/<call id>``)."""

    def __init__(self, store: ActorRef[Any], what: str) -> None:
        super().__init__(store)
        self.what = what

    async def begin(self, session: str, *args: Any, **kwargs: Any) -> int:
        if "/" in session and self.what == "begin":
            raise StoreUnavailable("test: child begin failed")
        return await super().begin(session, *args, **kwargs)

    async def commit(self, session: str, *args: Any, **kwargs: Any) -> int:
        if "/" in session and self.what == "commit":
            raise StoreUnavailable("test: child commit failed")
        return await super().commit(session, *args, **kwargs)


class SlowBeginReplies(StoreTurns):
    """The store applies a begin at once but its reply takes a second, for child
    sessions (``<parent>/<call id>``) or for the others: a caller cancelled meanwhile
    gets no reply for a begin that was applied."""

    def __init__(self, store: ActorRef[Any], *, child: bool) -> None:
        super().__init__(store)
        self.child = child

    async def _late(self, session: str) -> None:
        if ("/" in session) == self.child:
            await trio.sleep(1)

    async def begin(self, session: str, *args: Any, **kwargs: Any) -> int:
        version = await super().begin(session, *args, **kwargs)
        await self._late(session)
        return version

    async def begin_and_load(self, session: str, *args: Any, **kwargs: Any) -> Any:
        state = await super().begin_and_load(session, *args, **kwargs)
        await self._late(session)
        return state
