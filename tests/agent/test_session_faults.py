"""A session recovers from store faults: writes that fail for a while (refused, or
applied with the reply lost, or past ``commit_timeout``) and then heal, a SQLite file
that turns read-only. Once the store takes writes again the next turn of every session
completes, no stored session keeps an open turn, facts acknowledged with a failed commit
are stored; a typed store error ends a streamed turn as ``TurnFailed`` (raised to a
``RunTurn`` asker) and the session actor keeps running; a child session's store error is
its tool call's error. Both stores, many sessions at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, session_spec
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
    StoreUnavailable,
    session_store_spec,
)
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from tests.agent.fakes import scripted
from tests.agent.races import (
    ChildFaults,
    Faults,
    SlowCommits,
    Sqlite,
    assert_consistent,
    host_on,
    session_rows,
)
from tests.agent.stores import stored
from tests.store.helpers import problems

# -- symptom 6: failed writes that heal ------------------------------------------------------


@pytest.mark.parametrize("applied", [0.0, 0.5])
async def test_after_failing_writes_heal_the_next_turn_of_every_session_completes(
    backend: str, clock: object, applied: float, tmp_path: Path
) -> None:
    sessions = [f"s{k}" for k in range(24)]
    faults = Faults(rate=0.5, applied=applied)
    told: list[str] = []
    completed: dict[str, list[str]] = {sid: [] for sid in sessions}
    facts_acked: list[str] = []

    async def turns(sid: str) -> None:
        for n in range(4):
            try:
                result = await host.run(sid, f"t{n}")
                told.append(result.status)
                if result.status == "completed":
                    completed[sid].append(f"t{n}")
            except StoreUnavailable:
                told.append("unavailable")
            if n == 1:
                try:
                    await host.ask(sid, am.SetFacts(set={"k": sid}))
                    facts_acked.append(sid)
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
        for sid in sessions:  # what the callers were told is what is stored
            snapshot = await stored(store, sid)
            assert snapshot is not None
            asked = [
                e.message.content
                for e in snapshot.entries
                if isinstance(e.message, UserMessage) and e.message.content in completed[sid]
            ]
            assert asked == completed[sid], sid
            if sid in facts_acked:
                assert snapshot.facts == {"k": sid}, sid


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


# -- a commit that outlives commit_timeout ---------------------------------------------------


async def test_a_commit_past_commit_timeout_fails_typed_and_the_next_turn_completes(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    slow: list[SlowCommits] = []

    def turns(store: ActorRef[Any]) -> SlowCommits:
        slow.append(SlowCommits(store))
        return slow[0]

    async with host_on("memory", tmp_path, turns=turns) as (host, store, system):
        await host.run("s", "warm")
        slow[0].slow = True
        async with host.submit("s", "x") as events:
            seen = [event async for event in events]
        last = seen[-1]
        assert isinstance(last, am.TurnFailed) and last.result.error_kind == "ask_timeout"
        slow[0].slow = False
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


# -- a child session (an agent called as a tool) whose store fails ------------------------------


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


# -- a commit the store refuses as invalid ----------------------------------------------------


def duplicate_ids_model() -> ScriptedProvider:
    """A model whose first reply makes two calls with the same id."""

    def play(request: ChatRequest, attempt: int) -> ScriptedReply:
        last = request.messages[-1]
        if isinstance(last, UserMessage) and last.content == "twice":
            same = [ScriptedToolCall("add", '{"a": 1, "b": 2}', "dup")] * 2
            return ScriptedReply(tool_calls=same, latency=0.01)
        return ScriptedReply(text="done", latency=0.01)

    return ScriptedProvider(play)


async def test_a_refused_commit_ends_the_streamed_turn_and_the_next_turn_completes(
    backend: str, clock: object, tmp_path: Path
) -> None:
    # However the turn's calls are stored (refused as InvalidTranscript, or made unique
    # first), the reader gets the turn's end, the actor runs on and the next turn works.
    async with host_on(backend, tmp_path, model=duplicate_ids_model()) as (host, store, system):
        await host.run("s", "warm")
        async with host.submit("s", "twice") as events:
            seen = [event async for event in events]
        assert isinstance(seen[-1], am.TurnCompleted | am.TurnFailed)
        await assert_consistent(host, store, ["s"])
        assert session_rows(system) == {"session:s": 0}
