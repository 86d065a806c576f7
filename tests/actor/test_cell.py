"""The cell: what survives an incarnation, and what an incarnation leaves behind."""

from __future__ import annotations

import gc
import weakref
from typing import assert_never

import msgspec
import pytest
import trio
import trio.testing

from agcore_actors import Actor, ActorCrashed, ActorSystem, Request


class Who(Request[int], frozen=True, tag=True):
    """Reply with the incarnation (the restart count), after ``pause`` seconds."""

    pause: float = 0.0


class Boom(Request[None], frozen=True, tag=True):
    """Crash after ``after`` seconds."""

    after: float = 0.0


Msg = Who | Boom


class Worker(Actor[Msg]):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    async def handle(self, msg: Msg) -> int | None:
        match msg:
            case Who():
                return await self._on_who(msg)
            case Boom():
                await self._on_boom(msg)
            case _:
                assert_never(msg)
        return None

    async def _on_who(self, msg: Who) -> int:
        if msg.pause:
            await trio.sleep(msg.pause)
        self.log.append(f"who@{self.ctx.restarts}")
        return self.ctx.restarts

    async def _on_boom(self, msg: Boom) -> None:
        await trio.sleep(msg.after)
        raise RuntimeError("boom")


# -- 2: a concurrent actor's crash leaves queued requests queued ---------------------------


async def test_concurrent_crash_leaves_queued_requests_to_the_next_incarnation(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Worker(log), name="w", max_concurrency=2)
    outcomes: dict[str, object] = {}

    async def ask(key: str, msg: Msg) -> None:
        try:
            outcomes[key] = await ref.ask(msg)
        except Exception as exc:
            outcomes[key] = exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "boom", Boom(after=1))
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, "running", Who(pause=10))
        await trio.testing.wait_all_tasks_blocked()
        for i in range(3):  # both slots are busy: these wait in the mailbox
            nursery.start_soon(ask, f"queued{i}", Who())
            await trio.testing.wait_all_tasks_blocked()
    assert isinstance(outcomes["boom"], RuntimeError)
    assert isinstance(outcomes["running"], ActorCrashed)
    # Handled by the restarted instance, not pulled (or handled) by the crashed one.
    assert [outcomes[f"queued{i}"] for i in range(3)] == [1, 1, 1]
    assert log == ["who@1"] * 3


# -- 5: a background task's crash is a crash for the request in flight ---------------------


async def test_background_crash_gives_the_request_in_flight_actor_crashed(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    class Ticking(Worker):
        async def on_start(self) -> None:
            if self.ctx.restarts == 0:
                self.ctx.nursery.start_soon(self._fail_soon)

        async def _fail_soon(self) -> None:
            await trio.sleep(1)
            raise ValueError("background task failed")

    ref = await system.spawn(lambda: Ticking([]), name="t", background_tasks=True)
    with pytest.raises(ActorCrashed) as info:
        await ref.ask(Who(pause=10))
    assert isinstance(info.value.cause, ValueError)
    assert await ref.ask(Who()) == 1  # restarted at once


async def test_background_crash_of_a_concurrent_actor_gives_actor_crashed(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    class Ticking(Worker):
        max_concurrency = 3

        async def on_start(self) -> None:
            if self.ctx.restarts == 0:
                self.ctx.nursery.start_soon(self._fail_soon)

        async def _fail_soon(self) -> None:
            await trio.sleep(1)
            raise ValueError("background task failed")

    ref = await system.spawn(lambda: Ticking([]), name="t")
    with pytest.raises(ActorCrashed) as info:
        await ref.ask(Who(pause=10))
    assert isinstance(info.value.cause, ValueError)


# -- 6: an idle actor keeps no reference to its last message or reply ----------------------


class Blob(msgspec.Struct, weakref=True):
    data: bytes


class Make(Request[Blob], frozen=True, tag=True):
    size: int


class Maker(Actor[Make]):
    def __init__(self, made: list[weakref.ref[object]]) -> None:
        self.made = made

    async def handle(self, msg: Make) -> Blob:
        blob = Blob(b"x" * msg.size)
        self.made.append(weakref.ref(blob))
        return blob


@pytest.mark.parametrize("concurrency", [1, 2])
async def test_an_idle_actor_holds_no_reference_to_its_last_reply(concurrency: int) -> None:
    made: list[weakref.ref[object]] = []
    # Strict mode: the asker gets a copy, so only the actor could hold the original.
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Maker(made), name="m", max_concurrency=concurrency)
        reply = await ref.ask(Make(1 << 20))
        assert len(reply.data) == 1 << 20
        await trio.testing.wait_all_tasks_blocked()
        gc.collect()
        assert made[0]() is None
