"""Bugs, not typed faults, under a host's sessions: a bug ending a streamed turn is told
to its reader and the session restarts from the store; a session store that crashes on
every write, or a provider whose code has a bug, is parked (isolated) with a typed error
to every running turn, the runtime stays up, and sessions run again once it heals.
Typed store faults are test_session_faults.py's."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from agcore_actors import ActorRef, ActorSystem, AgcoreError
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    AssistantMessage,
    ChatRequest,
    ProviderRegistry,
    RetryConfig,
    provider_actor,
    provider_spec,
)
from agcore_actors.store import (
    InMemorySessions,
    SessionStore,
    StoreStorageError,
    session_store_spec,
)
from agcore_actors.store.lowlevel import InMemorySessionBackend
from agcore_actors.testing import ScriptedProvider, ScriptedReply
from tests.agent.fakes import scripted
from tests.agent.races import (
    host_on,
)

# -- a bug escaping a streamed turn: the reader is told, never a silent end -------------------


class BuggyWrites(StoreTurns):
    """A TurnStore whose ``begin`` or ``commit`` raises a bug (no AgcoreError) while armed."""

    def __init__(self, store: ActorRef[Any], write: str) -> None:
        super().__init__(store)
        self.write = write
        self.armed = False

    async def begin_and_load(self, *args: Any, **kwargs: Any) -> Any:
        if self.armed and self.write == "begin":
            raise RuntimeError("bug in the store port (begin)")
        return await super().begin_and_load(*args, **kwargs)

    async def commit(self, *args: Any, **kwargs: Any) -> int:
        if self.armed and self.write == "commit":
            raise RuntimeError("bug in the store port (commit)")
        return await super().commit(*args, **kwargs)


@pytest.mark.parametrize("write", ["begin", "commit"])
async def test_a_bug_ending_a_streamed_turn_is_told_to_its_reader_and_the_session_restarts(
    backend: str, clock: object, tmp_path: Path, write: str
) -> None:
    ports: list[BuggyWrites] = []

    def turns(store: ActorRef[Any]) -> StoreTurns:
        ports.append(BuggyWrites(store, write))
        return ports[-1]

    async with host_on(backend, tmp_path, turns=turns) as (host, _store, _system):
        sessions = [f"s{i}" for i in range(6)]
        for sid in sessions:
            await host.run(sid, "warm")
        await trio.sleep(0.2)  # idle: the next begin reloads the tail (begin_and_load)
        ports[0].armed = True
        told: dict[str, object] = {}

        async def read(sid: str) -> None:
            seen: list[am.TurnEvent] = []
            try:
                async with host.submit(sid, "x") as events:
                    async for event in events:
                        seen.append(event)
            except Exception as exc:  # the crash, as the runtime reports it
                told[sid] = exc
            else:
                told[sid] = seen[-1] if seen else None

        async with trio.open_nursery() as nursery:
            for sid in sessions:
                nursery.start_soon(read, sid)
        ports[0].armed = False
        for sid in sessions:
            # A final event or an error: a stream that just stops tells the reader nothing.
            assert isinstance(told[sid], am.TurnFailed | Exception), (sid, told[sid])
        for sid in sessions:
            result = await host.run(sid, "after")
            assert result.status == "completed", (sid, result)
        assert host.snapshot().crashes >= 1


# -- a session store that crashes on every write is parked, not fatal ----------------------------


class IoFailingBackend:
    """The in-memory backend, its writes failing with an untyped storage error (a crash
    of the store actor, not ``StoreUnavailable``) while ``failing``."""

    failing = False

    def __init__(self, inner: InMemorySessionBackend) -> None:
        self._inner = inner

    def run_batch(self, operations: Any, write: bool) -> Any:
        if write and IoFailingBackend.failing:
            raise StoreStorageError("disk I/O error")
        return self._inner.run_batch(operations, write)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


async def test_a_store_that_crashes_on_every_write_fails_turns_typed_and_the_runtime_stays_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    shared = InMemorySessionBackend()
    factory = functools.partial(
        SessionStore,
        functools.partial(IoFailingBackend, shared),
        threaded=False,
        clock=trio.current_time,
    )
    spec = attrs.evolve(session_store_spec("store", backend=InMemorySessions()), factory=factory)
    sessions = [f"s{i}" for i in range(20)]
    async with ActorSystem(strict=True, seed=0) as system:
        store = await system.root.start_child(spec)
        llm = await system.spawn(
            provider_actor(
                ProviderRegistry().register(scripted([[AssistantMessage("ok")]])),
                retry=RetryConfig(),
            ),
            name="llm",
        )
        bundle = (
            AgentBuilder().provider(llm).store(StoreTurns(store)).agent(Agent(name="a")).build()
        )
        async with SessionHost(system, bundle) as host:
            for sid in sessions:
                await host.run(sid, "warm")
            IoFailingBackend.failing = True
            told: dict[str, BaseException] = {}

            async def turn(sid: str) -> None:
                try:
                    await host.run(sid, "x")
                except Exception as exc:
                    told[sid] = exc

            try:
                async with trio.open_nursery() as nursery:
                    for sid in sessions:
                        nursery.start_soon(turn, sid)
            finally:
                IoFailingBackend.failing = False
            assert sorted(told) == sorted(sessions)
            assert all(isinstance(exc, AgcoreError) for exc in told.values()), told
            await trio.sleep(600)  # the park's backoff has run out
            for sid in sessions:
                result = await host.run(sid, "after")
                assert result.status == "completed", result


# -- a provider bug: every running turn fails typed, at once, and the host stays up -------------


class BuggyModel:
    """A provider script whose every call raises a plain RuntimeError while ``broken``,
    but the first, which answers slowly (it is running when the others crash the actor)."""

    broken = True
    calls = 0

    def __call__(self, request: ChatRequest, attempt: int) -> str | ScriptedReply:
        self.calls += 1
        if self.calls == 1:
            return ScriptedReply(text="slow", latency=1.0)
        if self.broken:
            raise RuntimeError("bug in provider code")
        return "fine"


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_provider_bug_fails_every_running_turn_at_once_with_peer_failed_or_parked(
    autojump_clock: trio.testing.MockClock, streamed: bool
) -> None:
    model = BuggyModel()
    registry = ProviderRegistry().register(ScriptedProvider(model))
    sessions = [f"s{i}" for i in range(50)]
    async with ActorSystem(strict=True, seed=0) as system:
        store = await system.root.start_child(
            session_store_spec("store", backend=InMemorySessions(), clock=trio.current_time)
        )
        llm = await system.root.start_child(provider_spec("llm", registry=registry))
        bundle = (
            AgentBuilder().provider(llm).store(StoreTurns(store)).agent(Agent(name="a")).build()
        )
        async with SessionHost(system, bundle) as host:
            told: dict[str, tuple[str, float]] = {}

            async def turn(sid: str) -> None:
                begun = trio.current_time()
                if streamed:
                    async with host.submit(sid, "hi") as events:
                        final = [event async for event in events][-1]
                    assert isinstance(final, am.TurnFailed), final
                    result = final.result
                else:
                    result = await host.run(sid, "hi")
                told[sid] = (result.error_kind, trio.current_time() - begun)

            async with trio.open_nursery() as nursery:
                for sid in sessions:
                    nursery.start_soon(turn, sid)
            assert sorted(told) == sorted(sessions)
            kinds = {kind for kind, _ in told.values()}
            assert kinds <= {"peer_failed", "actor_parked"}, told
            assert max(seconds for _, seconds in told.values()) < 2.0, told
            assert host.snapshot().crashes == 0  # the provider's bug is no session's crash
            model.broken = False
            await trio.sleep(600)  # the park's backoff has run out
            result = await host.run("s0", "again")
            assert (result.status, result.text) == ("completed", "fine")
