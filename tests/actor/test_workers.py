"""The workers of a concurrent actor: how many tasks a burst and an idle spell leave."""

from __future__ import annotations

import trio
import trio.testing
from trio.lowlevel import Task, current_task

from agcore_actors import Actor, ActorSystem, Request


class Hold(Request[None], frozen=True, tag=True):
    """Run until the actor's ``release`` event is set."""


class Nap(Request[None], frozen=True, tag=True):
    """Sleep ``seconds``, noting which task ran the request."""

    seconds: float = 1.0


Msg = Hold | Nap


class Napper(Actor[Msg]):
    def __init__(self, release: trio.Event, ran_on: set[Task]) -> None:
        self.release = release
        self.ran_on = ran_on

    async def handle(self, msg: Msg) -> None:
        match msg:
            case Hold():
                await self.release.wait()
            case Nap(seconds=seconds):
                self.ran_on.add(current_task())
                await trio.sleep(seconds)


async def test_a_worker_idle_while_others_run_takes_the_next_burst(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()
    ran_on: set[Task] = set()
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Napper(release, ran_on), name="n", max_concurrency=8)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ref.ask, Hold())
            await trio.testing.wait_all_tasks_blocked()
            for _ in range(5):  # bursts of 3 while the Hold keeps the actor busy
                async with trio.open_nursery() as burst:
                    for _ in range(3):
                        burst.start_soon(ref.ask, Nap())
            release.set()
        # The same 3 workers ran every burst: none was started per burst.
        assert len(ran_on) == 3


async def test_an_idle_concurrent_actor_is_one_parked_task(
    autojump_clock: trio.testing.MockClock,
) -> None:
    release = trio.Event()
    ran_on: set[Task] = set()
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Napper(release, ran_on), name="n", max_concurrency=8)
        release.set()
        for pauses in ([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0]):
            async with trio.open_nursery() as burst:
                burst.start_soon(ref.ask, Hold())
                for seconds in pauses:
                    burst.start_soon(ref.ask, Nap(seconds))
            await trio.testing.wait_all_tasks_blocked()
            assert len(ref._cell.pool.tasks) == 1  # type: ignore[union-attr]
