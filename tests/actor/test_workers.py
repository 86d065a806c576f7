"""The workers of a concurrent actor: how many tasks a burst and an idle spell leave."""

from __future__ import annotations

import pytest
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


class Stubborn(Request[None], frozen=True, tag=True):
    """Sleep ``seconds`` shielded: the handler returns normally even when cancelled."""

    seconds: float = 2.0


class Finisher(Actor[Stubborn | Nap]):
    async def handle(self, msg: Stubborn | Nap) -> None:
        if isinstance(msg, Stubborn):
            with trio.CancelScope(shield=True):
                await trio.sleep(msg.seconds)
        else:
            await trio.sleep(msg.seconds)


class FinisherWithoutIdleScope(Finisher):
    idle_scope = False


@pytest.mark.parametrize("actor_class", [Finisher, FinisherWithoutIdleScope])
async def test_a_cancelled_request_never_reaches_the_next_one_queued_or_after_idling(
    autojump_clock: trio.testing.MockClock, actor_class: type[Finisher]
) -> None:
    # The first worker parks inside its cancel scope (idle_scope) or outside any: either
    # way a scope an asker's cancellation cancelled is never used again, even when the
    # handler returned normally (it shields itself from that cancellation here).
    async with ActorSystem() as system:
        ref = await system.spawn(actor_class, name="f", max_concurrency=2)
        finished: list[str] = []

        async def ask(label: str, msg: Stubborn | Nap, delay: float) -> None:
            await trio.sleep(delay)
            with trio.fail_after(10):
                await ref.ask(msg)
            finished.append(label)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "busy", Nap(4), 0.1)  # holds the other worker
            nursery.start_soon(ask, "queued", Nap(2), 0.5)  # waits for a free worker
            with trio.move_on_after(1) as cancelled:
                await ref.ask(Stubborn(2))  # its asker leaves at 1, the handler ends at 2
            assert cancelled.cancelled_caught
        assert sorted(finished) == ["busy", "queued"]
        await trio.sleep(5)  # idle
        with trio.move_on_after(1):
            await ref.ask(Stubborn(2))
        with trio.fail_after(3):
            await ref.ask(Nap(2))  # after an idle spell: not cancelled either
        await trio.testing.wait_all_tasks_blocked()
        assert len(ref._cell.pool.tasks) == 1  # type: ignore[union-attr]
