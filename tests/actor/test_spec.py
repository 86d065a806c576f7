"""Child specs: per-child options override the actor class's defaults, no subclass needed."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agcore_actors import Actor, ActorSystem, ChildSpec, Request, SupervisorSpec


class Work(Request[int], frozen=True, tag=True):
    seconds: float


class Peak(Request[int], frozen=True, tag=True):
    pass


class Worker(Actor[Work | Peak]):
    """Serial by its class; records how many requests ran at once."""

    def __init__(self) -> None:
        self.running = 0
        self.peak = 0

    async def handle(self, msg: Work | Peak) -> int:
        if isinstance(msg, Peak):
            return self.peak
        self.running += 1
        self.peak = max(self.peak, self.running)
        try:
            await trio.sleep(msg.seconds)
        finally:
            self.running -= 1
        return self.peak


class Wide(Worker):
    max_concurrency = 4


async def run_wave(ref: object, n: int) -> None:
    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(ref.ask, Work(1))  # type: ignore[attr-defined]


async def test_max_concurrency_option_makes_a_serial_class_concurrent(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(Worker, name="w", max_concurrency=3)
    start = trio.current_time()
    await run_wave(ref, 6)
    assert trio.current_time() - start == pytest.approx(2)  # two waves of three
    assert await ref.ask(Peak()) == 3


async def test_max_concurrency_option_overrides_the_class_attribute(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    serial = await system.spawn(Wide, name="serial", max_concurrency=1)
    default = await system.spawn(Wide, name="default")
    await run_wave(serial, 3)
    await run_wave(default, 6)
    assert await serial.ask(Peak()) == 1
    assert await default.ask(Peak()) == 4  # the class attribute is the default


async def test_child_spec_carries_the_options(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    await system.start_supervisor(
        SupervisorSpec("team", children=[ChildSpec("w", Worker, max_concurrency=2)])
    )
    ref = system.lookup("w")
    await run_wave(ref, 4)
    assert await ref.ask(Peak()) == 2


async def test_background_tasks_option_gives_a_serial_actor_a_nursery(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ticks: list[float] = []

    class Ticker(Actor[Peak]):
        async def on_start(self) -> None:
            self.ctx.nursery.start_soon(self._tick)

        async def _tick(self) -> None:
            while True:
                await trio.sleep(1)
                ticks.append(trio.current_time())

        async def handle(self, msg: Peak) -> int:
            return len(ticks)

    ref = await system.spawn(Ticker, name="t", background_tasks=True)
    await trio.sleep(3.5)
    assert await ref.ask(Peak()) == 3
    with pytest.raises(RuntimeError, match="background_tasks=True"):
        await system.spawn(Ticker, name="no-nursery")


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_max_concurrency_must_be_a_positive_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="max_concurrency"):
        ChildSpec("w", Worker, max_concurrency=bad)  # type: ignore[arg-type]
