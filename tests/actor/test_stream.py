"""Stream requests: events in order, errors, back-pressure, early exit, cancellation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from agcore_actors import (
    Actor,
    ActorStopped,
    ActorSystem,
    Request,
    Restart,
    StreamRequest,
    UnencodableMessage,
)


class Tick(msgspec.Struct, frozen=True, tag=True):
    n: int


class Count(StreamRequest[Tick], frozen=True, tag=True):
    upto: int
    fail_at: int = -1
    pause: float = 0.0


class Weird(StreamRequest[Any], frozen=True, tag=True):
    kind: str


class Ping(Request[str], frozen=True, tag=True):
    pass


class Failure(Exception):
    pass


class Counter(Actor[Count | Weird | Ping]):
    expected_errors = (Failure,)

    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def handle(self, msg: Count | Weird | Ping) -> Any:
        if isinstance(msg, Ping):
            return "pong"
        if isinstance(msg, Weird):
            return self._weird(msg.kind)
        return self._count(msg)

    async def _count(self, msg: Count) -> AsyncIterator[Tick]:
        self.log.append("open")
        try:
            for n in range(msg.upto):
                if n == msg.fail_at:
                    raise Failure(f"failed at {n}")
                await trio.sleep(msg.pause)
                self.log.append(f"yield {n}")
                yield Tick(n)
        finally:
            self.log.append("closed")

    def _weird(self, kind: str) -> Any:
        if kind == "not-an-iterator":
            return [1, 2, 3]
        return self._unencodable()

    async def _unencodable(self) -> AsyncIterator[object]:
        yield Tick(0)
        yield trio.Event()


class Parallel(Counter):
    max_concurrency = 4


async def test_events_arrive_in_order(system: ActorSystem) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Counter(log), name="c")
    async with ref.stream(Count(5)) as events:
        got = [tick.n async for tick in events]
    assert got == [0, 1, 2, 3, 4]
    assert log[0] == "open" and log[-1] == "closed"
    assert await ref.ask(Ping()) == "pong"


async def test_error_ends_the_stream_after_earlier_events(system: ActorSystem) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Counter(log), name="c")
    got: list[int] = []
    with pytest.raises(Failure, match="failed at 3"):
        async with ref.stream(Count(10, fail_at=3)) as events:
            async for tick in events:
                got.append(tick.n)
    assert got == [0, 1, 2]
    assert log[-1] == "closed"
    assert await ref.ask(Ping()) == "pong"  # expected error: no crash


async def test_leaving_early_closes_the_handler_before_the_exit_returns(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Counter(log), name="c")
    async with ref.stream(Count(1000, pause=1)) as events:
        async for tick in events:
            if tick.n == 2:
                break
    assert log[-1] == "closed"  # the generator was closed before we got here
    assert "yield 10" not in log
    assert await ref.ask(Ping()) == "pong"


async def test_cancelling_the_reader_cancels_the_handler(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Counter(log), name="c")
    with trio.move_on_after(3.5):
        async with ref.stream(Count(1000, pause=1)) as events:
            async for _ in events:
                pass
    assert log[-1] == "closed"
    # One event a second from t=1: 0, 1 and 2 were yielded by t=3.5, 3 never was.
    assert "yield 2" in log and "yield 3" not in log


async def test_slow_reader_holds_the_handler_back(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Counter(log), name="c")
    async with ref.stream(Count(100), buffer=4) as events:
        await trio.testing.wait_all_tasks_blocked()
        # 4 events fill the buffer and a fifth waits in send: no more than that.
        assert log.count("open") == 1 and sum(e.startswith("yield") for e in log) == 5
        assert [tick.n async for tick in events] == list(range(100))


async def test_concurrent_actor_serves_streams_in_parallel(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(lambda: Parallel([]), name="p")
    results: dict[int, list[int]] = {}

    async def read(key: int) -> None:
        async with ref.stream(Count(5, pause=1)) as events:
            results[key] = [tick.n async for tick in events]

    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        for key in range(4):
            nursery.start_soon(read, key)
    assert trio.current_time() - start == pytest.approx(5)  # not 20: in parallel
    assert all(v == [0, 1, 2, 3, 4] for v in results.values())


async def test_unencodable_event_ends_the_stream_without_a_crash(system: ActorSystem) -> None:
    ref = await system.spawn(lambda: Counter([]), name="c")
    got: list[Any] = []
    with pytest.raises(UnencodableMessage):
        async with ref.stream(Weird("unencodable")) as events:
            async for event in events:
                got.append(event)
    assert got == [Tick(0)]
    row = next(r for r in system.snapshot() if r.name == "c")
    assert row.restarts == 0


async def test_handler_that_returns_no_iterator_is_a_bug(system: ActorSystem) -> None:
    ref = await system.spawn(lambda: Counter([]), name="c")
    with pytest.raises(TypeError, match="not an async iterator"):
        async with ref.stream(Weird("not-an-iterator")) as events:
            async for _ in events:
                pass


async def test_stream_from_a_stopped_actor(system: ActorSystem) -> None:
    ref = await system.spawn(lambda: Counter([]), name="c", restart=Restart.TEMPORARY)
    await system.stop("c")
    with pytest.raises(ActorStopped):
        async with ref.stream(Count(3)) as events:
            async for _ in events:
                pass


async def test_queued_stream_fails_when_the_actor_stops(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Counter(log), name="c", restart=Restart.TEMPORARY, shutdown=1)
    outcome: list[BaseException] = []

    async def read_queued() -> None:
        try:
            async with ref.stream(Count(3)) as events:
                async for _ in events:
                    pass
        except ActorStopped as exc:
            outcome.append(exc)

    async with trio.open_nursery() as nursery, ref.stream(Count(1000, pause=1)) as events:
        await events.__anext__()  # the first stream is running
        nursery.start_soon(read_queued)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(system.stop, "c")
        with pytest.raises(ActorStopped):
            async for _ in events:
                pass
    assert len(outcome) == 1


async def test_a_cancelled_reader_reads_no_more_even_with_events_queued(
    system: ActorSystem,
) -> None:
    # Queued events are read without a task switch each, but every read is still a
    # cancellation point.
    log: list[str] = []
    ref = await system.spawn(lambda: Counter(log), name="c")
    got: list[int] = []
    with trio.CancelScope() as scope:
        async with ref.stream(Count(5)) as events:
            async for tick in events:
                got.append(tick.n)
                await trio.testing.wait_all_tasks_blocked()  # the rest is queued now
                scope.cancel()
    assert scope.cancelled_caught
    assert got == [0]
    assert await ref.ask(Ping()) == "pong"
