"""How an ActorSystem ends: interrupts, outer cancellation and the shutdown timeout.

Whatever ends the system (leaving the block, a KeyboardInterrupt or SystemExit raised in
an actor, a cancellation of the scope around the block), actors stop last started first,
each with its grace, and the system's ``shutdown_timeout`` bounds the whole shutdown.
"""

from __future__ import annotations

import math
from typing import NoReturn, assert_never

import pytest
import trio
import trio.testing

from agcore_actors import Actor, ActorStopped, ActorSystem, Request


class Hold(Request[str], frozen=True, tag=True):
    seconds: float


class Interrupt(Request[None], frozen=True, tag=True):
    """Raise KeyboardInterrupt, or SystemExit with ``exit=True``, in the handler."""

    exit: bool = False


Msg = Hold | Interrupt


def interrupt(exit: bool) -> NoReturn:
    if exit:
        raise SystemExit(3)
    raise KeyboardInterrupt


class Member(Actor[Msg]):
    """Logs ``start``, ``done`` (a Hold finished) and ``stop`` with the on_stop reason."""

    def __init__(self, name: str, log: list[str], start_fails: str = "") -> None:
        self.name = name
        self.log = log
        self.start_fails = start_fails

    async def on_start(self) -> None:
        self.log.append(f"start {self.name}")
        if self.start_fails:
            interrupt(self.start_fails == "exit")

    async def handle(self, msg: Msg) -> str | None:
        match msg:
            case Hold():
                return await self._on_hold(msg)
            case Interrupt():
                interrupt(msg.exit)
            case _:
                assert_never(msg)

    async def _on_hold(self, msg: Hold) -> str:
        await trio.sleep(msg.seconds)
        self.log.append(f"done {self.name}")
        return self.name

    async def on_stop(self, reason: BaseException | None) -> None:
        why = "none" if reason is None else type(reason).__name__
        self.log.append(f"stop {self.name} {why} @{trio.current_time():g}")


async def spawn_three(system: ActorSystem, log: list[str]) -> None:
    for name in "abc":
        await system.spawn(lambda name=name: Member(name, log), name=name)  # type: ignore[misc]


# -- 1: KeyboardInterrupt and SystemExit end the system, in order -----------------------


@pytest.mark.parametrize(("exit", "raised"), [(False, KeyboardInterrupt), (True, SystemExit)])
async def test_an_interrupt_in_a_handler_ends_the_system_through_the_ordered_shutdown(
    autojump_clock: trio.testing.MockClock, exit: bool, raised: type[BaseException]
) -> None:
    log: list[str] = []
    with trio.move_on_after(100), pytest.raises(raised):  # the old code ran on for ever
        async with ActorSystem(strict=True) as system:
            await spawn_three(system, log)
            await system.lookup("b").tell(Interrupt(exit))
            await trio.sleep_forever()
    name = raised.__name__
    assert log == [
        "start a",
        "start b",
        "start c",  # never restarted: an interrupt is no crash
        f"stop c {name} @0",
        f"stop b {name} @0",
        f"stop a {name} @0",
    ]


async def test_the_asker_of_an_interrupted_request_gets_actor_stopped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    got: list[BaseException] = []
    with trio.move_on_after(100), pytest.raises(KeyboardInterrupt):
        async with ActorSystem(strict=True) as system:
            await spawn_three(system, log)
            try:
                await system.lookup("b").ask(Interrupt())
            except ActorStopped as exc:
                got.append(exc)
            await trio.sleep_forever()
    assert len(got) == 1 and "interrupted" in str(got[0])
    assert log.count("start b") == 1


async def test_an_interrupt_in_on_start_ends_the_system_instead_of_a_retry(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    with trio.move_on_after(100), pytest.raises(KeyboardInterrupt):
        async with ActorSystem(strict=True) as system:
            await system.spawn(lambda: Member("a", log), name="a")
            with pytest.raises(ActorStopped, match="interrupted"):
                await system.spawn(lambda: Member("b", log, start_fails="interrupt"), name="b")
            await trio.sleep_forever()
    assert log == [
        "start a",
        "start b",
        "stop b KeyboardInterrupt @0",
        "stop a KeyboardInterrupt @0",
    ]


async def test_an_interrupt_in_a_concurrent_request_ends_the_system(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    with trio.move_on_after(100), pytest.raises(KeyboardInterrupt):
        async with ActorSystem(strict=True) as system:
            await system.spawn(lambda: Member("a", log), name="a")
            ref = await system.spawn(lambda: Member("b", log), name="b", max_concurrency=4)
            await ref.tell(Hold(1))
            await ref.tell(Interrupt())
            await trio.sleep_forever()
    # b finished its running Hold within its grace, then stopped; then a.
    assert log == [
        "start a",
        "start b",
        "done b",
        "stop b KeyboardInterrupt @1",
        "stop a KeyboardInterrupt @1",
    ]


async def test_an_interrupt_in_a_background_task_ends_the_system(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []

    class Ticker(Member):
        async def on_start(self) -> None:
            await super().on_start()
            self.ctx.nursery.start_soon(self._tick)

        async def _tick(self) -> None:
            await trio.sleep(1)
            raise KeyboardInterrupt

    with trio.move_on_after(100), pytest.raises(KeyboardInterrupt):
        async with ActorSystem(strict=True) as system:
            await system.spawn(lambda: Member("a", log), name="a")
            await system.spawn(lambda: Ticker("t", log), name="t", background_tasks=True)
            await trio.sleep_forever()
    assert log == [
        "start a",
        "start t",
        "stop t KeyboardInterrupt @1",
        "stop a KeyboardInterrupt @1",
    ]


# -- 10: a cancellation around the block stops actors in order, with their grace ----------


async def test_outer_cancellation_stops_actors_in_reverse_order_with_their_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    replies: list[str] = []
    async with trio.open_nursery() as nursery:
        with trio.move_on_after(1):
            async with ActorSystem(strict=True) as system:
                await spawn_three(system, log)
                c = system.lookup("c")

                async def hold() -> None:
                    replies.append(await c.ask(Hold(2)))

                nursery.start_soon(hold)
                await trio.sleep_forever()
    # c finished its message (2 s, within its 5 s grace) before it stopped; then b, then a.
    assert replies == ["c"]
    assert log == [
        "start a",
        "start b",
        "start c",
        "done c",
        "stop c Cancelled @2",
        "stop b Cancelled @2",
        "stop a Cancelled @2",
    ]


# -- 3: shutdown_timeout bounds the shutdown, then cancels what is left ---------------------


async def test_shutdown_timeout_cancels_a_child_with_infinite_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    with trio.move_on_after(1000):  # the old code never left the block
        async with ActorSystem(strict=True, shutdown_timeout=3) as system:
            ref = await system.spawn(lambda: Member("a", log), name="a", shutdown=math.inf)
            await ref.tell(Hold(math.inf))
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
    assert trio.current_time() - start == 3
    assert log == ["start a", "stop a ActorStopped @3"]


async def test_shutdown_timeout_bounds_a_hanging_on_stop(
    autojump_clock: trio.testing.MockClock,
) -> None:
    stopped: list[float] = []

    class Stuck(Member):
        async def on_stop(self, reason: BaseException | None) -> None:
            try:
                await trio.sleep_forever()
            finally:
                stopped.append(trio.current_time())

    with trio.move_on_after(1000):
        async with ActorSystem(strict=True, shutdown_timeout=3) as system:
            await system.spawn(lambda: Stuck("a", []), name="a", shutdown=math.inf)
            start = trio.current_time()
    assert trio.current_time() - start == 3
    assert stopped == [3]


@pytest.mark.parametrize("steps", [0, 1, 2, 3, 5, 8, 13])
async def test_a_system_entered_in_a_cancelled_scope_returns(
    steps: int, autojump_clock: trio.testing.MockClock
) -> None:
    """Hung on cffdf1f (in real time too): cancelled before or while the root started,
    ``async with ActorSystem()`` never returned. Found writing the testing guide."""

    async def enter_and_wait() -> None:
        async with ActorSystem():
            await trio.sleep_forever()

    with trio.CancelScope() as outer:
        if steps == 0:
            outer.cancel()
            await enter_and_wait()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(enter_and_wait)
            for _ in range(steps):
                await trio.lowlevel.checkpoint()
            outer.cancel()
    assert outer.cancelled_caught
