"""A session stays consistent with its store whatever cuts a turn short: a caller
cancelled at any checkpoint (during the begin, the model call, the tools, the commit), a
reader leaving the stream, store writes that fail for a while (before or after being
applied) and then heal. Afterwards the next turn of every session completes, no stored
session keeps an open turn, and every stored transcript is valid; a typed store error
ends a streamed turn as ``TurnFailed`` and the session actor keeps running. Both stores,
many sessions at once."""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.actor import ChildSpec
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    HostConfig,
    SessionHost,
    StoreTurns,
    session_spec,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    AssistantMessage,
    ChatRequest,
    FunctionCall,
    ProviderRegistry,
    RetryConfig,
    ToolCall,
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
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import SqliteSessionBackend
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolExecutor, ToolRegistry, function_tool
from tests.agent.fakes import scripted
from tests.agent.stores import stored
from tests.store.helpers import problems


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    """The store the test runs on: in memory (on virtual time) or a SQLite file."""
    name: str = request.param
    return name


@pytest.fixture
def clock(backend: str) -> trio.testing.MockClock | None:
    """Virtual time over the in-memory store; the SQLite lane's threads need real time."""
    return trio.testing.MockClock(autojump_threshold=0) if backend == "memory" else None


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
            return ScriptedReply(tool_calls=[call], latency=latency)
        return ScriptedReply(text="done", latency=latency)

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


# -- symptom 2: a cancelled begin ------------------------------------------------------------


async def test_a_turn_cancelled_at_any_checkpoint_leaves_every_session_able_to_run(
    backend: str, clock: object, tmp_path: Path
) -> None:
    sessions = [f"s{k}" for k in range(40)]
    async with host_on(backend, tmp_path) as (host, store, system):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")  # live, at version 2
        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                nursery.start_soon(cancelled_after, k, functools.partial(host.run, sid, "x"))
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


async def test_a_reader_leaving_the_stream_at_any_checkpoint_leaves_every_session_able_to_run(
    backend: str, clock: object, tmp_path: Path
) -> None:
    sessions = [f"s{k}" for k in range(40)]

    async def read(sid: str) -> None:
        async with host.submit(sid, "x") as events:
            async for _ in events:
                pass

    async with host_on(backend, tmp_path) as (host, store, system):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")
        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                nursery.start_soon(cancelled_after, k, functools.partial(read, sid))
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


async def test_a_cancelled_first_turn_of_an_idle_session_leaves_it_able_to_run(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # An idle session's turn begins and reloads its tail in one write (begin_and_load).
    sessions = [f"s{k}" for k in range(30)]
    async with host_on("memory", tmp_path) as (host, store, _):
        for sid in sessions:
            await host.run(sid, "warm")
        await trio.sleep(1)  # every session idle: its tail dropped
        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                nursery.start_soon(cancelled_after, k, functools.partial(host.run, sid, "x"))
        await assert_consistent(host, store, sessions)


# -- symptom 6: failed writes that heal ------------------------------------------------------


@pytest.mark.parametrize("applied", [0.0, 0.5])
async def test_after_failing_writes_heal_the_next_turn_of_every_session_completes(
    backend: str, clock: object, applied: float, tmp_path: Path
) -> None:
    sessions = [f"s{k}" for k in range(24)]
    faults = Faults(rate=0.5, applied=applied)
    told: list[str] = []

    async def turns(sid: str) -> None:
        for n in range(4):
            try:
                result = await host.run(sid, f"t{n}")
                told.append(result.status)
            except StoreUnavailable:
                told.append("unavailable")
            if n == 1:
                try:
                    await host.ask(sid, am.SetFacts(set={"k": sid}))
                except StoreUnavailable:
                    told.append("facts unavailable")

    async with host_on(backend, tmp_path, faults=faults) as (host, store, system):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")
        faults.down = True
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(turns, sid)
        faults.down = False
        assert faults.failed > 0 and "unavailable" in told
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


async def test_a_full_sqlite_file_fails_the_commit_and_once_it_has_room_the_session_runs(
    tmp_path: Path,
) -> None:
    sqlite = Sqlite(tmp_path / "s.db")
    async with host_on("sqlite", tmp_path, latency=0.3, sqlite=sqlite) as (host, store, system):
        await host.run("s", "warm")

        async def fill_during_the_model_call() -> None:
            await trio.sleep(0.1)  # the turn has begun; the lane is idle
            sqlite.backends[0].connection.execute("PRAGMA query_only = 1")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fill_during_the_model_call)
            with pytest.raises(StoreUnavailable):
                await host.run("s", "lost")
        sqlite.backends[0].connection.execute("PRAGMA query_only = 0")
        await assert_consistent(host, store, ["s"])
        assert session_rows(system) == {"session:s": 0}


# -- symptom 3 (session side): typed errors end the turn, not the actor -------------------------


async def test_a_failed_commit_ends_a_streamed_turn_as_turn_failed_and_the_actor_runs_on(
    backend: str, clock: object, tmp_path: Path
) -> None:
    faults = Faults(writes=frozenset({"commit"}))
    async with host_on(backend, tmp_path, faults=faults) as (host, store, system):
        await host.run("s", "warm")
        faults.down = True
        async with host.submit("s", "x") as events:
            seen = [event async for event in events]
        faults.down = False
        last = seen[-1]
        assert isinstance(last, am.TurnFailed)
        assert last.result.error_kind == "store_storage_unavailable"
        assert session_rows(system) == {"session:s": 0}
        await assert_consistent(host, store, ["s"])


async def test_a_failed_begin_ends_a_streamed_turn_as_turn_failed_and_the_actor_runs_on(
    backend: str, clock: object, tmp_path: Path
) -> None:
    faults = Faults(writes=frozenset({"begin"}), applied=1.0)
    async with host_on(backend, tmp_path, faults=faults) as (host, store, system):
        await host.run("s", "warm")
        faults.down = True
        async with host.submit("s", "x") as events:
            seen = [event async for event in events]
        faults.down = False
        assert [type(e) for e in seen] == [am.TurnFailed]
        assert isinstance(seen[0], am.TurnFailed)
        assert seen[0].result.error_kind == "store_storage_unavailable"
        assert session_rows(system) == {"session:s": 0}
        await assert_consistent(host, store, ["s"])


async def test_a_failed_commit_is_raised_to_run_turn_and_the_next_turn_completes(
    backend: str, clock: object, tmp_path: Path
) -> None:
    faults = Faults(writes=frozenset({"commit"}))
    async with host_on(backend, tmp_path, faults=faults) as (host, store, system):
        await host.run("s", "warm")
        faults.down = True
        with pytest.raises(StoreUnavailable):
            await host.run("s", "x")
        faults.down = False
        await assert_consistent(host, store, ["s"])
        assert session_rows(system) == {"session:s": 0}


# -- cancellation at random moments, and what is stored right after it --------------------------


@pytest.mark.parametrize("seed", range(3))
async def test_turns_cancelled_at_random_moments_are_closed_before_the_cancellation_completes(
    seed: int, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    sessions = [f"s{k}" for k in range(30)]
    async with host_on("memory", tmp_path) as (host, store, system):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")

        async def cut(sid: str) -> None:
            for n in range(3):
                with trio.move_on_after(rng.uniform(0, 0.05)):
                    if rng.random() < 0.5:
                        await host.run(sid, f"x{n}")
                    else:
                        async with host.submit(sid, f"x{n}") as events:
                            async for _ in events:
                                pass

        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(cut, sid)
        await trio.testing.wait_all_tasks_blocked()
        for sid in sessions:  # closed before the next turn: nothing left to repair
            snapshot = await stored(store, sid)
            assert snapshot is not None and snapshot.record.open_turn is None, sid
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


# -- a commit that outlives commit_timeout ---------------------------------------------------


class SlowCommits(StoreTurns):
    """Commits hang while ``slow`` (the store stopped answering)."""

    slow = False

    async def commit(self, *args: Any, **kwargs: Any) -> int:
        if self.slow:
            await trio.sleep(1000)
        return await super().commit(*args, **kwargs)


async def test_a_commit_past_commit_timeout_fails_typed_and_the_next_turn_completes(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    store_ref = await system.root.start_child(
        session_store_spec("store", backend=InMemorySessions(), clock=trio.current_time)
    )
    turns = SlowCommits(store_ref)
    llm = await system.spawn(
        provider_actor(
            ProviderRegistry().register(tooling_model(0.01)), retry=RetryConfig(max_retries=0)
        ),
        name="llm",
    )
    registry = ToolRegistry([add])
    executor = await system.spawn(lambda: ToolExecutor(registry), name="tools")
    bundle = (
        AgentBuilder()
        .provider(llm)
        .tools(executor, registry)
        .store(turns)
        .agent(Agent(name="a", tools=["add"]))
        .build()
    )
    async with SessionHost(system, bundle, HostConfig()) as host:
        await host.run("s", "warm")
        turns.slow = True
        async with host.submit("s", "x") as events:
            seen = [event async for event in events]
        last = seen[-1]
        assert isinstance(last, am.TurnFailed) and last.result.error_kind == "ask_timeout"
        turns.slow = False
        await assert_consistent(host, store_ref, ["s"])
        assert session_rows(system) == {"session:s": 0}


# -- facts acknowledged during a turn whose commit failed ---------------------------------------


async def test_facts_set_during_a_turn_whose_commit_failed_are_stored_before_the_next_turn(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    faults = Faults(writes=frozenset({"commit"}))
    async with host_on("memory", tmp_path, latency=1.0, faults=faults) as (host, store, _):
        await host.run("s", "warm")
        faults.down = True

        async def set_facts_mid_turn() -> None:
            await trio.sleep(0.5)
            await host.ask("s", am.SetFacts(set={"city": "Oslo"}))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(set_facts_mid_turn)
            with pytest.raises(StoreUnavailable):
                await host.run("s", "x")
        faults.down = False
        await assert_consistent(host, store, ["s"])
        snapshot = await stored(store, "s")
        assert snapshot is not None and snapshot.facts == {"city": "Oslo"}
        info = await host.ask("s", am.GetSessionInfo())
        assert info.facts == {"city": "Oslo"}


async def test_many_sessions_on_a_sqlite_file_that_turns_read_only_for_a_while_all_recover(
    tmp_path: Path,
) -> None:
    # The file refuses every write for a while (read-only, as a full disk does), whatever
    # each session is doing then: its begin, its commit, or the batch both are in.
    sqlite = Sqlite(tmp_path / "s.db")
    sessions = [f"s{k}" for k in range(24)]
    told: list[str] = []

    async def turns(sid: str) -> None:
        for n in range(6):
            try:
                told.append((await host.run(sid, f"t{n}")).status)
            except StoreUnavailable:
                told.append("unavailable")

    async with host_on("sqlite", tmp_path, latency=0.02, sqlite=sqlite) as (host, store, system):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")
        writer = sqlite.backends[0].connection
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(turns, sid)
            await trio.sleep(0.05)
            writer.execute("PRAGMA query_only = 1")
            await trio.sleep(0.15)
            writer.execute("PRAGMA query_only = 0")
        assert "unavailable" in told
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


# -- a child session (an agent called as a tool) whose store fails ------------------------------


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


@pytest.mark.parametrize("what", ["begin", "commit"])
async def test_a_child_sessions_store_error_is_its_tool_calls_error_and_the_parent_completes(
    what: str, system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ask = ToolCall("k1", FunctionCall("researcher", '{"task": "find x"}'))
    script: list[list[Any]] = [
        [AssistantMessage(None, tool_calls=[ask])],
        [AssistantMessage("x is 42")],  # the child's answer (when it runs)
        [AssistantMessage("done")],
    ]
    provider = scripted(script)
    llm = await system.spawn(
        provider_actor(ProviderRegistry().register(provider), retry=RetryConfig(max_retries=0)),
        name="llm",
    )
    store_ref = await system.root.start_child(
        session_store_spec("store", backend=InMemorySessions(), clock=trio.current_time)
    )
    lead = Agent(name="lead", subagents=frozenset({"researcher"}))
    researcher = Agent(name="researcher", description="Finds things.")
    bundle = (
        AgentBuilder()
        .provider(llm)
        .store(ChildFaults(store_ref, what))
        .agents([lead, researcher])
        .build()
    )
    session = await system.root.start_child(session_spec("s1", bundle))
    result = await session.ask(am.RunTurn(text="what is x?"))
    assert result.status == "completed"
    parent = await stored(store_ref, "s1")
    assert parent is not None and parent.record.open_turn is None
    answer = next(e.message for e in parent.entries if isinstance(e.message, ToolMessage))
    assert "store_storage_unavailable" in str(answer.content)
    assert problems([e.message for e in parent.entries]) == []


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


async def test_a_turn_cancelled_while_its_child_session_runs_leaves_no_open_turn_anywhere(
    backend: str, clock: object, tmp_path: Path
) -> None:
    sessions = [f"s{k}" for k in range(100)]
    lead = Agent(name="lead", subagents=frozenset({"researcher"}))
    researcher = Agent(name="researcher", description="Finds things.")
    async with host_on(backend, tmp_path, model=delegating_model(), agents=(lead, researcher)) as (
        host,
        store,
        system,
    ):
        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(host.run, sid, "warm")
        rng = random.Random(0)
        async with trio.open_nursery() as nursery:
            for k, sid in enumerate(sessions):
                run = functools.partial(host.run, sid, "x")
                if backend == "memory":
                    # every phase: the lead's model call ends at 0.01 s, the child's at 0.02 s
                    nursery.start_soon(cancelled_after, k % 10, run, 0.01 * (k // 10))
                else:  # real time: anywhere in the turn (about 40 ms on SQLite)
                    nursery.start_soon(cancelled_after, 0, run, rng.uniform(0, 0.04))
        running: sm.SessionPage = await store.ask(sm.ListSessions(status="running"))
        assert [r.id for r in running.sessions] == []
        await assert_consistent(host, store, sessions)
        assert set(session_rows(system).values()) == {0}


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


@pytest.mark.parametrize("child", [False, True])
async def test_a_turn_cancelled_after_its_begin_was_applied_but_before_the_reply_is_closed(
    child: bool, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    lead = Agent(name="lead", subagents=frozenset({"researcher"}))
    researcher = Agent(name="researcher", description="Finds things.")
    async with host_on(
        "memory",
        tmp_path,
        model=delegating_model(),
        agents=(lead, researcher),
        turns=functools.partial(SlowBeginReplies, child=child),
    ) as (host, store, system):
        await host.run("s", "warm")
        with trio.move_on_after(0.5):
            await host.run("s", "x")
        running: sm.SessionPage = await store.ask(sm.ListSessions(status="running"))
        assert [r.id for r in running.sessions] == []
        await assert_consistent(host, store, ["s"])
        assert session_rows(system) == {"session:s": 0}
