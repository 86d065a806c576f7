"""The lane: the in-memory fast path (a request finding the lane empty runs at once in its
asker's task, keeping the cancellation guarantees of the queue; the queued path is tested
through the actor in test_actor.py), and storage trouble on a real SQLite file (refused
batches, the store degraded in the snapshot until a write succeeds)."""

from __future__ import annotations

import functools
import gc
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import outcome
import pytest
import trio
import trio.testing

from agcore_actors import ActorInfo, ActorSystem, ChildSpec
from agcore_actors.actor.lowlevel import DeferredReply
from agcore_actors.store import (
    SessionNotFound,
    SessionStore,
    SqliteSessions,
    StoreBusy,
    StoreMsg,
    StoreUnavailable,
)
from agcore_actors.store import messages as sm
from agcore_actors.store._lane import Lane, _Request
from agcore_actors.store.lowlevel import Backend, SqliteSessionBackend
from tests.store.helpers import NAME, running_store


class Log:
    """A backend that runs operations inline and records each batch's size."""

    def __init__(self) -> None:
        self.batches: list[int] = []

    def run_batch(
        self, operations: Sequence[Callable[[], Any]], write: bool
    ) -> list[outcome.Outcome[Any]]:
        self.batches.append(len(operations))
        return [outcome.capture(op) for op in operations]


def memory_lane(backend: Log) -> Lane:
    return Lane(backend, threaded=False, max_batch=256)  # type: ignore[arg-type]


async def test_a_request_finding_the_in_memory_lane_empty_runs_without_the_lanes_task() -> None:
    backend = Log()
    lane = memory_lane(backend)  # its serve() task is never started
    with trio.fail_after(1):
        assert await lane.submit(lambda: 7, write=True) == 7
    assert backend.batches == [1]
    assert (lane.batches, lane.answered) == (1, 1)


async def test_an_asker_already_cancelled_withdraws_its_request_from_an_empty_lane() -> None:
    backend = Log()
    lane = memory_lane(backend)
    ran: list[str] = []
    with trio.CancelScope() as scope:
        scope.cancel()
        await lane.submit(lambda: ran.append("x"), write=True)
    assert scope.cancelled_caught
    assert ran == [] and backend.batches == []


async def test_concurrent_askers_of_an_in_memory_lane_each_run_at_once_in_order() -> None:
    backend = Log()
    lane = memory_lane(backend)  # no serve() task: nothing may wait for one
    order: list[int] = []

    async def ask(n: int) -> None:
        await lane.submit(lambda: order.append(n), write=True)

    with trio.fail_after(1):
        async with trio.open_nursery() as nursery:
            for n in range(100):
                nursery.start_soon(ask, n)
    assert sorted(order) == list(range(100))
    assert backend.batches == [1] * 100


async def test_a_cancelled_asker_running_inline_leaves_its_whole_request_applied() -> None:
    backend = Log()
    lane = memory_lane(backend)
    applied: list[int] = []

    def two_writes() -> None:
        applied.append(1)
        scope.cancel()  # the asker is cancelled while its request runs
        applied.append(2)

    with trio.CancelScope() as scope:
        await lane.submit(two_writes, write=True)
        await trio.lowlevel.checkpoint()  # where the cancellation is delivered
    assert scope.cancelled_caught
    assert applied == [1, 2] and backend.batches == [1]


# -- storage trouble through a real SQLite file ----------------------------------------


class Opened:
    """Opens the store's connections on one file and keeps them, so that a test can
    shrink the file's room (``max_page_count``) or make it read-only (``query_only``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.backends: list[SqliteSessionBackend] = []

    def open(self) -> Backend:
        self.backends.append(SqliteSessionBackend(self.path, busy_timeout=0.05))
        return self.backends[-1]

    @property
    def writer(self) -> sqlite3.Connection:
        return self.backends[0].connection

    def spec(self) -> ChildSpec[StoreMsg]:
        factory = functools.partial(SessionStore, self.open, open_reader=self.open, threaded=True)
        return ChildSpec(NAME, factory)


async def test_an_answered_request_is_freed_at_once_not_left_in_a_reference_cycle(
    tmp_path: Path,
) -> None:
    # A queued request and its deferred reply refer to each other (the reply's on_cancel
    # is the request's withdraw); the lane drops that link once it answers, so neither
    # (nor the message and envelope they hold) waits for the garbage collector.
    gc.collect()
    gc.disable()
    try:
        async with running_store(SqliteSessions(str(tmp_path / "s.db"))) as store:
            for n in range(5):
                await store.ask(sm.UpdateSession(session="s", expected_version=n, agent="a"))
            left = [o for o in gc.get_objects() if isinstance(o, (_Request, DeferredReply))]
            assert left == []
    finally:
        gc.enable()


def store_row(system: ActorSystem) -> ActorInfo:
    return next(row for row in system.snapshot() if row.name == NAME)


def big_update(session: str) -> sm.UpdateSession:
    return sm.UpdateSession(session=session, expected_version=0, facts_set={"k": "x" * 3000})


async def test_a_full_file_refuses_the_batch_and_the_store_stays_up_degraded_until_a_write(
    tmp_path: Path,
) -> None:
    opened = Opened(tmp_path / "s.db")
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(opened.spec())
        await store.ask(sm.UpdateSession(session="before", expected_version=0, agent="a"))
        pages = opened.writer.execute("PRAGMA page_count").fetchone()[0]
        opened.writer.execute(f"PRAGMA max_page_count = {pages + 2}")  # the lane is idle
        refused: list[str] = []
        for n in range(20):
            try:
                await store.ask(big_update(f"s{n}"))
            except StoreUnavailable as exc:
                refused.append(f"s{n}")
                assert "SQLITE_FULL" in str(exc) and not exc.is_retryable()
                break
        assert refused, "the file never filled up"
        row = store_row(system)
        assert row.degraded is not None and "SQLITE_FULL" in row.degraded
        assert row.restarts == 0
        # Nothing of the refused request was written; reads still work.
        with pytest.raises(SessionNotFound):
            await store.ask(sm.LoadSession(refused[0]))
        assert (await store.ask(sm.LoadSession("before"))).record.agent == "a"
        # Still full: still refused, still degraded.
        with pytest.raises(StoreUnavailable):
            await store.ask(big_update(refused[0]))
        assert store_row(system).degraded is not None
        opened.writer.execute("PRAGMA max_page_count = 1000000")  # room again
        await store.ask(big_update(refused[0]))
        row = store_row(system)
        assert row.degraded is None and row.restarts == 0
    assert len(opened.backends) == 2  # one writer, one reader: never reopened


async def test_a_read_only_file_refuses_writes_degraded_and_a_write_that_succeeds_clears_it(
    tmp_path: Path,
) -> None:
    opened = Opened(tmp_path / "s.db")
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(opened.spec())
        record = await store.ask(sm.UpdateSession(session="a", expected_version=0))
        opened.writer.execute("PRAGMA query_only = 1")
        with pytest.raises(StoreUnavailable, match="SQLITE_READONLY"):
            await store.ask(sm.UpdateSession(session="a", expected_version=record.version))
        degraded = store_row(system).degraded
        assert degraded is not None and "SQLITE_READONLY" in degraded
        loaded = await store.ask(sm.LoadSession("a"))  # reads go on
        assert loaded.record.version == record.version  # the refused write left nothing
        opened.writer.execute("PRAGMA query_only = 0")
        await store.ask(sm.UpdateSession(session="a", expected_version=record.version))
        assert store_row(system).degraded is None


async def test_a_file_locked_past_the_busy_timeout_refuses_the_batch_retryably_not_degraded(
    tmp_path: Path,
) -> None:
    opened = Opened(tmp_path / "s.db")
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(opened.spec())
        holder = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
            with pytest.raises(StoreBusy) as info:
                await store.ask(sm.UpdateSession(session="a", expected_version=0))
            assert info.value.is_retryable()
            assert store_row(system).degraded is None
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await store.ask(sm.UpdateSession(session="a", expected_version=0))
        assert store_row(system).restarts == 0
