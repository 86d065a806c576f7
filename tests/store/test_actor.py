"""The SessionStore actor: group commit, cancellation, crashes and restarts, the clock."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

import outcome
import pytest
import trio

from agcore_actors import ActorCrashed, ActorRef, ActorSystem, ChildSpec
from agcore_actors.llm import Usage, assistant
from agcore_actors.store import (
    Conflict,
    InMemorySessions,
    SessionBackendConfig,
    SessionNotFound,
    SessionStore,
    SessionStoreConfig,
    SqliteSessions,
    StoreMsg,
    StoreStorageError,
    session_store_spec,
)
from agcore_actors.store import messages as sm
from agcore_actors.store.lowlevel import Backend, SqliteSessionBackend
from tests.store.helpers import NAME, running_store, user


class Recording:
    """A SQLite backend that records its batches and can hold one, or fail one."""

    def __init__(self, path: Path) -> None:
        self.inner = SqliteSessionBackend(path)
        self.sizes: list[int] = []
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        self.fail_next = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run_batch(self, operations: Iterable[Any], write: bool) -> list[outcome.Outcome[Any]]:
        ops = list(operations)
        self.entered.set()
        self.gate.wait(30)
        if self.fail_next:
            self.fail_next = False
            raise StoreStorageError("disk on fire")
        self.sizes.append(len(ops))
        return self.inner.run_batch(ops, write)


def recording_spec(
    backend: Recording, config: SessionStoreConfig | None = None
) -> ChildSpec[StoreMsg]:
    def opener() -> Backend:
        return backend

    factory = functools.partial(SessionStore, opener, threaded=True, config=config)
    return ChildSpec(NAME, factory, mailbox_size=4096)


async def one_turn(store: ActorRef[StoreMsg], session: str) -> sm.SessionRecord:
    rec = await store.ask(
        sm.BeginTurn(session=session, turn="t", expected_version=0, messages=[user()])
    )
    return await store.ask(
        sm.CommitTurn(
            session=session, turn="t", expected_version=rec.version, messages=[assistant("a")]
        )
    )


async def many_turns(store: ActorRef[StoreMsg], n: int) -> None:
    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(one_turn, store, f"s{i}")


async def test_concurrent_commits_share_transactions_and_each_is_durable_on_reply(
    tmp_path: Path,
) -> None:
    backend = Recording(tmp_path / "s.db")
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(recording_spec(backend))
        await many_turns(store, 300)
    assert sum(backend.sizes) == 600
    assert len(backend.sizes) < 100, backend.sizes  # 600 requests, far fewer transactions
    check = SqliteSessionBackend(tmp_path / "s.db")
    try:
        assert len(check.page(None, "idle", None, 1000)) == 300
    finally:
        check.close()


async def test_max_batch_one_writes_one_transaction_per_request(tmp_path: Path) -> None:
    backend = Recording(tmp_path / "s.db")
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(recording_spec(backend, SessionStoreConfig(1)))
        await many_turns(store, 20)
    assert backend.sizes == [1] * 40


async def test_a_conflict_fails_only_its_own_request_in_a_shared_batch(tmp_path: Path) -> None:
    backend = Recording(tmp_path / "s.db")
    results: dict[str, Any] = {}

    async def begin(key: str, session: str) -> None:
        msg = sm.BeginTurn(session=session, turn=key, expected_version=0, messages=[user()])
        try:
            results[key] = await store.ask(msg)
        except Conflict as exc:
            results[key] = exc

    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(recording_spec(backend))
        backend.gate.clear()  # hold the writer so that everything below queues up
        async with trio.open_nursery() as nursery:
            nursery.start_soon(begin, "first", "x")
            await trio.to_thread.run_sync(backend.entered.wait)
            for key, session in [("x1", "shared"), ("x2", "shared"), ("y", "other")]:
                nursery.start_soon(begin, key, session)
            await trio.sleep(0.05)
            backend.gate.set()
    assert backend.sizes == [1, 3]
    won = [k for k in ("x1", "x2") if isinstance(results[k], sm.SessionRecord)]
    lost = [k for k in ("x1", "x2") if isinstance(results[k], Conflict)]
    assert len(won) == 1 and len(lost) == 1
    assert isinstance(results["y"], sm.SessionRecord)
    assert isinstance(results["first"], sm.SessionRecord)


async def test_an_asker_cancelled_before_its_request_is_taken_withdraws_it(
    tmp_path: Path,
) -> None:
    backend = Recording(tmp_path / "s.db")
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(recording_spec(backend))
        backend.gate.clear()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one_turn, store, "held")
            await trio.to_thread.run_sync(backend.entered.wait)
            with trio.move_on_after(0.05) as scope:
                await store.ask(sm.UpdateSession(session="never", expected_version=0, agent="a"))
            assert scope.cancelled_caught
            backend.gate.set()
        with pytest.raises(SessionNotFound):
            await store.ask(sm.LoadSession("never"))


async def test_an_asker_cancelled_after_its_request_is_taken_waits_until_it_is_durable(
    tmp_path: Path,
) -> None:
    backend = Recording(tmp_path / "s.db")
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(recording_spec(backend))
        backend.gate.clear()
        released_at: list[float] = []

        async def release_later() -> None:
            await trio.to_thread.run_sync(backend.entered.wait)
            await trio.sleep(0.1)
            released_at.append(trio.current_time())
            backend.gate.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(release_later)
            with trio.move_on_after(0.02) as scope:
                await store.ask(sm.UpdateSession(session="kept", expected_version=0, agent="a"))
            assert scope.cancelled_caught
            # The cancellation completed only once the write was durable.
            assert released_at and trio.current_time() >= released_at[0]
        loaded = await store.ask(sm.LoadSession("kept"))
        assert loaded.record.agent == "a"


async def test_a_storage_failure_fails_its_batch_and_restarts_the_actor(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    backends: list[Recording] = []

    def opener() -> Backend:
        backends.append(Recording(path))
        backends[-1].fail_next = len(backends) == 1
        return backends[-1]

    factory = functools.partial(SessionStore, opener, threaded=True)
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(ChildSpec(NAME, factory))
        with pytest.raises(StoreStorageError):
            await store.ask(sm.UpdateSession(session="a", expected_version=0))
        for _ in range(100):  # the supervisor restarts it (after its backoff)
            if len(backends) == 2:
                break
            await trio.sleep(0.05)
        record = await store.ask(sm.UpdateSession(session="a", expected_version=0))
        assert record.version == 1
        assert [i.restarts for i in system.snapshot() if i.name == NAME] == [1]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_sessions_survive_a_restart_of_the_actor(tmp_path: Path, kind: str) -> None:
    backend: SessionBackendConfig = (
        InMemorySessions() if kind == "memory" else SqliteSessions(str(tmp_path / "s.db"))
    )
    async with ActorSystem(strict=True) as system:
        spec = session_store_spec(NAME, backend=backend)
        store = await system.root.start_child(spec)
        await one_turn(store, "kept")
        await system.stop(NAME)
        store = await system.root.start_child(spec)
        loaded = await store.ask(sm.LoadSession("kept"))
        assert loaded.record.version == 2 and len(loaded.messages) == 2


async def test_every_time_comes_from_the_callers_clock(autojump_clock: trio.abc.Clock) -> None:
    async with running_store(InMemorySessions()) as store:
        await trio.sleep(1234.5)
        rec = await store.ask(sm.UpdateSession(session="a", expected_version=0))
        assert rec.created_at == rec.updated_at == trio.current_time() == pytest.approx(1234.5)
        await trio.sleep(10)
        rec = await store.ask(
            sm.BeginTurn(session="a", turn="t", expected_version=1, messages=[user()])
        )
        assert rec.created_at == pytest.approx(1234.5)
        assert rec.updated_at == trio.current_time()
        snapshot = await store.ask(sm.ExportSession("a"))
        assert [e.created_at for e in snapshot.entries] == [rec.updated_at]


async def test_usage_adds_up_per_kind_over_checkpoints_and_commits() -> None:
    async with running_store(InMemorySessions()) as store:
        rec = await store.ask(
            sm.BeginTurn(session="a", turn="t", expected_version=0, messages=[user()])
        )
        rec = await store.ask(
            sm.AppendTurn(
                session="a",
                turn="t",
                expected_version=rec.version,
                messages=[],
                usage_delta=Usage(1, 2, 3, 4, 5),
            )
        )
        rec = await store.ask(
            sm.CommitTurn(
                session="a",
                turn="t",
                expected_version=rec.version,
                messages=[assistant("x")],
                usage_delta=Usage(10, 20, 30, 40, 50),
            )
        )
    assert rec.usage == Usage(11, 22, 33, 44, 55)
    assert rec.version == 3 and rec.turns == 1 and rec.status == "idle"


async def test_a_read_never_waits_behind_a_write_in_progress(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    writer = Recording(path)

    def open_writer() -> Backend:
        return writer

    def open_reader() -> Backend:
        return SqliteSessionBackend(path)

    factory = functools.partial(SessionStore, open_writer, open_reader=open_reader, threaded=True)
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(ChildSpec(NAME, factory))
        await store.ask(sm.UpdateSession(session="a", expected_version=0))
        writer.entered.clear()
        writer.gate.clear()  # the next write hangs in its transaction
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.ask, sm.UpdateSession(session="a", expected_version=1))
            await trio.to_thread.run_sync(writer.entered.wait)
            with trio.fail_after(5):
                loaded = await store.ask(sm.LoadSession("a"))
            assert loaded.record.version == 1  # the write in progress is not visible
            writer.gate.set()
        loaded = await store.ask(sm.LoadSession("a"))
        assert loaded.record.version == 2  # once answered, it is


async def test_a_graceful_stop_applies_what_the_lanes_still_hold(tmp_path: Path) -> None:
    backend = Recording(tmp_path / "s.db")
    results: dict[str, object] = {}

    async def update(session: str) -> None:
        results[session] = await store.ask(sm.UpdateSession(session=session, expected_version=0))

    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(recording_spec(backend))
        backend.gate.clear()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(update, "taken")
            await trio.to_thread.run_sync(backend.entered.wait)
            for session in ("q1", "q2", "q3"):
                nursery.start_soon(update, session)
            await trio.sleep(0.05)  # queued in the write lane, behind the held batch
            nursery.start_soon(system.stop, NAME)
            await trio.sleep(0.05)
            backend.gate.set()
    assert sorted(results) == ["q1", "q2", "q3", "taken"]
    assert all(isinstance(r, sm.SessionRecord) for r in results.values())
    assert backend.sizes == [1, 3]  # the rest in one batch, while stopping


async def test_requests_queued_behind_a_failed_transaction_get_actor_crashed_unapplied(
    tmp_path: Path,
) -> None:
    backend = Recording(tmp_path / "s.db")
    backend.fail_next = True
    results: dict[str, object] = {}

    async def update(session: str) -> None:
        try:
            results[session] = await store.ask(
                sm.UpdateSession(session=session, expected_version=0)
            )
        except Exception as exc:
            results[session] = type(exc)

    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(recording_spec(backend))
        backend.gate.clear()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(update, "failed")
            await trio.to_thread.run_sync(backend.entered.wait)
            nursery.start_soon(update, "queued")
            await trio.sleep(0.05)
            backend.gate.set()
    assert results == {"failed": StoreStorageError, "queued": ActorCrashed}
    check = SqliteSessionBackend(tmp_path / "s.db")
    try:
        assert check.record("queued") is None
    finally:
        check.close()


class Narrow(SessionStore):
    max_queued: ClassVar[int] = 2


async def test_a_full_lane_stops_the_actor_reading_its_mailbox(tmp_path: Path) -> None:
    backend = Recording(tmp_path / "s.db")
    factory = functools.partial(Narrow, lambda: backend, threaded=True)
    async with ActorSystem(strict=True) as system:
        store = await system.root.start_child(ChildSpec(NAME, factory, mailbox_size=100))
        backend.gate.clear()
        async with trio.open_nursery() as nursery:
            for n in range(6):
                nursery.start_soon(store.ask, sm.UpdateSession(session=f"s{n}", expected_version=0))
                if n == 0:
                    await trio.to_thread.run_sync(backend.entered.wait)
            await trio.sleep(0.05)
            (row,) = [r for r in system.snapshot() if r.name == NAME]
            # One taken, two queued in the lane, one waiting for room: two left unread.
            assert row.mailbox_depth == 2 and row.in_flight == 4
            backend.gate.set()
    assert sum(backend.sizes) == 6


async def test_a_store_spawned_concurrent_still_groups_its_writes(tmp_path: Path) -> None:
    backend = Recording(tmp_path / "s.db")
    factory = functools.partial(SessionStore, lambda: backend, threaded=True)
    async with ActorSystem(strict=True) as system:
        spec = ChildSpec(NAME, factory, mailbox_size=4096, max_concurrency=512)
        store = await system.root.start_child(spec)
        await many_turns(store, 200)
    assert sum(backend.sizes) == 400 and len(backend.sizes) < 100, backend.sizes
