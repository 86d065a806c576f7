"""Dormant incarnations: an idle concurrent actor with ``hibernate`` holds no task, and
nothing changes for its senders, its supervisor or its stop."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import pytest
import trio
import trio.testing

from agcore_actors import Actor, ActorSystem, Request
from agcore_actors.actor import ActorRef, ActorStopped


class Add(Request[int], frozen=True, tag=True):
    """Add ``n`` to the count; the new count."""

    n: int = 1


class Hold(Request[None], frozen=True, tag=True):
    """Run until the actor's ``release`` event is set."""


class Crash(Request[None], frozen=True, tag=True):
    """Raise an unexpected error (a crash)."""


class Spawn(Request[None], frozen=True, tag=True):
    """Start a background task that runs until ``release`` is set."""


Msg = Add | Hold | Crash | Spawn


class Counter(Actor[Msg]):
    max_concurrency: ClassVar[int] = 4
    hibernate: ClassVar[bool] = True

    def __init__(self, release: trio.Event, starts: list[int]) -> None:
        self.release = release
        self.starts = starts
        self.count = 0

    async def on_start(self) -> None:
        self.starts.append(1)

    async def handle(self, msg: Msg) -> int | None:
        match msg:
            case Add(n=n):
                self.count += n
                return self.count
            case Hold():
                await self.release.wait()
            case Crash():
                raise RuntimeError("boom")
            case Spawn():
                self.ctx.nursery.start_soon(self.release.wait)
        return None


class Awake(Counter):
    hibernate: ClassVar[bool] = False


class CounterWithStop(Counter):
    async def on_stop(self, reason: BaseException | None) -> None:
        self.starts.append(-1)


def dormant(ref: ActorRef[Any]) -> bool:
    cell = ref._cell
    return cell.task is None and cell._dormant is not None


async def settles_dormant(ref: ActorRef[Any]) -> bool:
    """Once every task is blocked: whether ``ref``'s actor is dormant."""
    await trio.testing.wait_all_tasks_blocked()
    return dormant(ref)


async def spawn_counter(
    system: ActorSystem, starts: list[int], release: trio.Event | None = None
) -> ActorRef[Msg]:
    event = release if release is not None else trio.Event()
    return await system.spawn(lambda: Counter(event, starts), name="c")


async def test_an_idle_actor_that_may_hibernate_holds_no_task_and_keeps_its_state(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[int] = []
    async with ActorSystem(strict=True) as system:
        ref = await spawn_counter(system, starts)
        assert await settles_dormant(ref)
        for expected in range(1, 6):
            assert await ref.ask(Add()) == expected
            assert await settles_dormant(ref)
    assert starts == [1]  # woken, never started again


async def test_an_actor_without_hibernate_or_with_its_own_on_stop_stays_parked(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[int] = []
    release = trio.Event()
    async with ActorSystem(strict=True) as system:
        awake = await system.spawn(lambda: Awake(release, starts), name="a")
        stopping = await system.spawn(lambda: CounterWithStop(release, starts), name="s")
        for ref in (awake, stopping):
            await ref.ask(Add())
        await trio.testing.wait_all_tasks_blocked()
        for ref in (awake, stopping):
            assert not dormant(ref) and ref._cell.task is not None
    assert starts[-1] == -1  # on_stop ran


async def race_the_sleep(
    system: ActorSystem, name: str, delay: int, action: Callable[[ActorRef[Msg]], Awaitable[Any]]
) -> ActorRef[Msg]:
    """Spawn a Counter, let a Hold run, and run ``action`` ``delay`` checkpoints after
    the Hold is released: just before, while or after the actor goes dormant."""
    release = trio.Event()
    ref = await system.spawn(functools.partial(Counter, release, []), name=name)

    async def racer() -> None:
        await release.wait()
        for _ in range(delay):
            await trio.lowlevel.checkpoint()
        await action(ref)

    with trio.fail_after(1):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(racer)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ref.ask, Hold())
            await trio.sleep(0.5)
            release.set()
    return ref


async def test_messages_racing_the_sleep_are_all_served(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with ActorSystem(strict=True) as system:
        for delay in range(12):
            replies: list[int] = []

            async def add(ref: ActorRef[Msg], replies: list[int] = replies) -> None:
                replies.append(await ref.ask(Add(10)))

            ref = await race_the_sleep(system, f"c{delay}", delay, add)
            assert replies == [10]
            assert await settles_dormant(ref)


async def test_a_stop_while_dormant_stops_it_normally(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[int] = []
    async with ActorSystem(strict=True) as system:
        ref = await spawn_counter(system, starts)
        await ref.ask(Add())
        assert await settles_dormant(ref)
        with trio.fail_after(1):
            await system.stop("c")
        with pytest.raises(ActorStopped):
            await ref.ask(Add())
        assert "c" not in [info.name for info in system.snapshot()]


async def test_a_stop_racing_the_sleep_stops_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with ActorSystem(strict=True) as system:
        for delay in range(12):

            async def stop(ref: ActorRef[Msg], name: str = f"c{delay}") -> None:
                await system.stop(name)

            ref = await race_the_sleep(system, f"c{delay}", delay, stop)
            with pytest.raises(ActorStopped):
                await ref.ask(Add())


async def test_a_cancelled_asker_cancels_a_woken_handler_and_it_sleeps_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[int] = []
    async with ActorSystem(strict=True) as system:
        ref = await spawn_counter(system, starts)
        assert await settles_dormant(ref)
        with trio.move_on_after(1) as timer:
            await ref.ask(Hold())  # never released: the asker gives up
        assert timer.cancelled_caught
        assert await settles_dormant(ref)
        assert await ref.ask(Add()) == 1


async def test_a_crash_after_waking_is_supervised_like_any_crash(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[int] = []
    async with ActorSystem(strict=True) as system:
        ref = await spawn_counter(system, starts)
        assert await ref.ask(Add(5)) == 5
        await trio.testing.wait_all_tasks_blocked()
        with pytest.raises(RuntimeError, match="boom"):  # the asker gets the crash
            await ref.ask(Crash())
        # The supervisor restarted it: a fresh instance, started again, dormant again.
        assert await ref.ask(Add()) == 1
        await trio.testing.wait_all_tasks_blocked()
        assert starts == [1, 1] and dormant(ref)


async def test_a_background_task_keeps_it_awake_until_the_task_ends(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[int] = []
    release = trio.Event()
    async with ActorSystem(strict=True) as system:
        ref = await spawn_counter(system, starts, release)
        await ref.ask(Spawn())
        await trio.testing.wait_all_tasks_blocked()
        assert not dormant(ref)
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        assert await ref.ask(Add()) == 1  # the next idle spell finds the nursery empty
        assert await settles_dormant(ref)


async def test_a_system_cancelled_from_outside_ends_with_dormant_actors(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[int] = []
    with trio.move_on_after(5) as outer:
        async with ActorSystem(strict=True) as system:
            ref = await spawn_counter(system, starts)
            await ref.ask(Add())
            assert await settles_dormant(ref)
            await trio.sleep_forever()
    assert outer.cancelled_caught


async def test_requests_queued_while_it_wakes_run_side_by_side(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()
    async with ActorSystem(strict=True) as system:
        ref = await spawn_counter(system, [], release)
        assert await settles_dormant(ref)
        got: list[int] = []
        added = trio.Event()

        async def add() -> None:
            got.append(await ref.ask(Add()))
            added.set()

        async with trio.open_nursery() as nursery:
            # Both queue before the woken task runs: the Add must not wait for the Hold.
            nursery.start_soon(ref.ask, Hold())
            nursery.start_soon(add)
            with trio.fail_after(5):
                await added.wait()
            release.set()
        assert got == [1]
        assert await settles_dormant(ref)


class Lingering(Counter):
    """Stays awake two seconds once idle before it goes dormant."""

    hibernate_after: ClassVar[float] = 2.0


async def test_an_actor_with_hibernate_after_stays_awake_that_long_once_idle(
    autojump_clock: trio.testing.MockClock,
) -> None:
    starts: list[int] = []
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Lingering(trio.Event(), starts), name="c")
        for expected in range(1, 4):
            assert await ref.ask(Add()) == expected
            awake = ref._cell.task
            assert awake is not None
            await trio.sleep(1.9)  # each request starts the while again
            assert ref._cell.task is awake and not dormant(ref)
        await trio.sleep(0.2)
        assert await settles_dormant(ref)
        assert await ref.ask(Add()) == 4  # and it wakes as any dormant actor does
        await trio.sleep(2.1)
        assert await settles_dormant(ref)
    assert starts == [1]


async def test_a_message_that_comes_as_the_while_runs_out_is_served(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with ActorSystem(strict=True) as system:
        for offset in (-1e-9, 0.0, 1e-9):
            ref = await system.spawn(lambda: Lingering(trio.Event(), []), name="c")
            await ref.ask(Add())
            await trio.sleep(2.0 + offset)
            with trio.fail_after(1):
                assert await ref.ask(Add()) == 2
            await system.stop("c")


async def test_a_stop_while_it_lingers_stops_it_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Lingering(trio.Event(), []), name="c")
        await ref.ask(Add())
        assert ref._cell.task is not None
        before = trio.current_time()
        await system.stop("c")
        assert trio.current_time() == before
        with pytest.raises(ActorStopped):
            await ref.ask(Add())


async def test_after_a_cancelled_ask_a_lingering_actor_serves_the_next_and_sleeps(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Lingering(release, []), name="c")
        with trio.move_on_after(1):
            await ref.ask(Hold())
        assert await ref.ask(Add()) == 1  # not cancelled by what cancelled the Hold
        await trio.sleep(1.0)
        assert await ref.ask(Add()) == 2
        await trio.sleep(2.1)
        assert await settles_dormant(ref)
        assert await ref.ask(Add()) == 3


async def test_a_snapshot_shows_a_dormant_actor_as_running_and_dormant(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Lingering(trio.Event(), []), name="c")
        await ref.ask(Add())

        def row() -> Any:
            return next(info for info in system.snapshot() if info.name == "c")

        assert not row().dormant  # lingering: awake
        await trio.sleep(2.1)
        assert await settles_dormant(ref)
        assert row().dormant and row().state.name == "RUNNING"
        await ref.ask(Add())
        assert not row().dormant
