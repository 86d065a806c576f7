"""Deferred replies: a serial actor's handler hands its reply over and returns."""

from __future__ import annotations

from typing import ClassVar, assert_never

import outcome
import pytest
import trio
import trio.testing

from agcore_actors import Actor, ActorCrashed, ActorStopped, ActorSystem, Request
from agcore_actors.actor.lowlevel import DeferredReply, defer_reply


class Later(Request[int], frozen=True, tag=True):
    """Reply ``n`` later, through the test (``withdrawable``: on_cancel says True)."""

    n: int
    withdrawable: bool = False


class Now(Request[int], frozen=True, tag=True):
    """Reply ``n`` at once."""

    n: int


class DeferThenFail(Request[int], frozen=True, tag=True):
    """Defer, then raise from the handler."""


Msg = Later | Now | DeferThenFail


class Holder(Actor[Msg]):
    """Keeps the deferred replies in ``held`` for the test to complete."""

    def __init__(self, held: list[DeferredReply], cancelled: list[int]) -> None:
        self.held = held
        self.cancelled = cancelled

    async def handle(self, msg: Msg) -> int | None:
        match msg:
            case Later():
                self._on_later(msg)
                return None
            case Now():
                return msg.n
            case DeferThenFail():
                defer_reply(self.ctx)
                raise ValueError("after deferring")
            case _:
                assert_never(msg)

    def _on_later(self, msg: Later) -> None:
        reply = defer_reply(self.ctx)
        if msg.withdrawable:

            def withdraw() -> bool:
                self.cancelled.append(msg.n)
                return True

            reply.on_cancel = withdraw
        self.held.append(reply)


async def test_a_deferred_reply_answers_after_the_handler_returned_and_the_actor_reads_on() -> None:
    held: list[DeferredReply] = []
    got: list[int] = []
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Holder(held, []), name="holder")

        async def later() -> None:
            got.append(await ref.ask(Later(1)))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(later)
            await trio.testing.wait_all_tasks_blocked()
            assert await ref.ask(Now(2)) == 2  # the serial actor is not held by Later
            (row,) = [r for r in system.snapshot() if r.name == "holder"]
            assert row.in_flight == 1
            assert held[0].pending and got == []
            held[0].complete(outcome.Value(7))
            assert not held[0].pending
            held[0].complete(outcome.Value(8))  # a second completion is ignored
        assert got == [7]


async def test_an_error_given_to_a_deferred_reply_goes_to_the_asker_and_is_no_crash() -> None:
    held: list[DeferredReply] = []
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Holder(held, []), name="holder")
        async with trio.open_nursery() as nursery:

            async def fail_later() -> None:
                await trio.testing.wait_all_tasks_blocked()
                held[0].complete(outcome.Error(KeyError("gone")))

            nursery.start_soon(fail_later)
            with pytest.raises(KeyError, match="gone"):
                await ref.ask(Later(1))
        assert await ref.ask(Now(3)) == 3
        (row,) = [r for r in system.snapshot() if r.name == "holder"]
        assert row.restarts == 0 and row.in_flight == 0


async def test_a_handler_failing_after_deferring_answers_with_its_error() -> None:
    held: list[DeferredReply] = []
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Holder(held, []), name="holder")
        with pytest.raises(ValueError, match="after deferring"):
            await ref.ask(DeferThenFail())
        assert await ref.ask(Now(3)) == 3  # from the next incarnation
        (row,) = [r for r in system.snapshot() if r.name == "holder"]
        assert row.restarts == 1 and row.in_flight == 0  # not expected: a crash


async def test_an_asker_cancelled_while_withdrawable_gives_up_at_once() -> None:
    held: list[DeferredReply] = []
    cancelled: list[int] = []
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Holder(held, cancelled), name="holder")
        with trio.move_on_after(0.01) as scope:
            await ref.ask(Later(5, withdrawable=True))
        assert scope.cancelled_caught and cancelled == [5]
        assert not held[0].pending
        held[0].complete(outcome.Value(1))  # ignored: nobody waits


async def test_an_asker_cancelled_while_not_withdrawable_waits_for_the_reply_then_is_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    held: list[DeferredReply] = []
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Holder(held, []), name="holder")
        done_at: list[float] = []

        async def complete_later() -> None:
            await trio.sleep(10)
            held[0].complete(outcome.Value(1))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(complete_later)
            with trio.move_on_after(1) as scope:
                await ref.ask(Later(5))
            done_at.append(trio.current_time())
        assert scope.cancelled_caught
        assert done_at[0] >= 10  # the cancellation completed only with the reply


class Stopping(Holder):
    """Completes its first held reply in on_stop; leaves the others."""

    background_tasks: ClassVar[bool] = True

    async def on_stop(self, reason: BaseException | None) -> None:
        if self.held:
            self.held[0].complete(outcome.Value(100))


async def test_replies_left_deferred_after_on_stop_get_why_the_incarnation_ended() -> None:
    held: list[DeferredReply] = []
    results: dict[int, object] = {}
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Stopping(held, []), name="holder")

        async def ask(n: int) -> None:
            try:
                results[n] = await ref.ask(Later(n))
            except ActorStopped as exc:
                results[n] = type(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, 1)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ask, 2)
            await trio.testing.wait_all_tasks_blocked()
            await system.stop("holder")
    assert results == {1: 100, 2: ActorStopped}


async def test_replies_left_deferred_by_a_crash_get_actor_crashed() -> None:
    held: list[DeferredReply] = []
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Holder(held, []), name="holder")
        async with trio.open_nursery() as nursery:

            async def crash() -> None:
                await trio.testing.wait_all_tasks_blocked()
                with pytest.raises(ValueError):
                    await ref.ask(DeferThenFail())

            nursery.start_soon(crash)
            with pytest.raises(ActorCrashed):
                await ref.ask(Later(1))


class Concurrent(Holder):
    max_concurrency: ClassVar[int] = 4


async def test_defer_reply_is_refused_outside_a_serial_actors_handler() -> None:
    async with ActorSystem() as system:
        ref = await system.spawn(lambda: Concurrent([], []), name="holder")
        with pytest.raises(RuntimeError, match="serial"):
            await ref.ask(Later(1))
