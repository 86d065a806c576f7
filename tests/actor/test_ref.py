"""Asks: replies, typed errors, timeouts, cancellation, crashes mid-ask."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from agcore_actors import (
    Actor,
    ActorCrashed,
    ActorStopped,
    ActorSystem,
    AskTimeout,
    Request,
    Restart,
    StreamRequest,
)
from agcore_actors.actor import ForeignThread, WouldDeadlock, WrongRequestKind


class Echo(Request[int], frozen=True, tag=True):
    n: int


class Slow(Request[str], frozen=True, tag=True):
    seconds: float
    label: str = ""


class Fail(Request[None], frozen=True, tag=True):
    kind: str  # "expected" or "crash"


class Count(Request[int], frozen=True, tag=True):
    pass


Msg = Echo | Slow | Fail | Count


class Expected(Exception):
    pass


class Worker(Actor[Msg]):
    """Records what happened to each Slow request in a shared log."""

    expected_errors = (Expected,)

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.handled = 0

    async def on_start(self) -> None:
        self.log.append(f"start:{self.ctx.restarts}")

    async def handle(self, msg: Msg) -> object:
        self.handled += 1
        match msg:
            case Echo(n=n):
                return n
            case Slow(seconds=seconds, label=label):
                self.log.append(f"begin:{label}")
                try:
                    await trio.sleep(seconds)
                except trio.Cancelled:
                    self.log.append(f"cancelled:{label}")
                    raise
                self.log.append(f"end:{label}")
                return label
            case Fail(kind="expected"):
                raise Expected("the asker's problem")
            case Fail():
                raise RuntimeError("a bug")
            case Count():
                return self.handled
        raise AssertionError(msg)


async def test_ask_returns_the_reply(system: ActorSystem) -> None:
    ref = await system.spawn(lambda: Worker([]), name="w")
    assert await ref.ask(Echo(41)) == 41
    assert [await ref.ask(Echo(i)) for i in range(5)] == [0, 1, 2, 3, 4]


async def test_expected_error_reaches_asker_and_state_survives(system: ActorSystem) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Worker(log), name="w")
    await ref.ask(Echo(1))
    with pytest.raises(Expected):
        await ref.ask(Fail("expected"))
    # Same instance: it counted all three messages and was not restarted.
    assert await ref.ask(Count()) == 3
    assert log == ["start:0"]


async def test_crash_mid_ask_gives_the_error_and_keeps_queued_messages(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Worker(log), name="w")
    results: dict[str, object] = {}

    async def ask(key: str, msg: Msg) -> None:
        try:
            results[key] = await ref.ask(msg)
        except Exception as exc:
            results[key] = exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "crash", Fail("crash"))
        await trio.testing.wait_all_tasks_blocked()
        for i in range(3):  # queued behind the crash
            nursery.start_soon(ask, f"echo{i}", Echo(i))
            await trio.testing.wait_all_tasks_blocked()
    crash = results["crash"]
    assert isinstance(crash, RuntimeError)
    assert "raised in actor 'w' handling Fail" in crash.__notes__
    # The queued asks were answered by the restarted instance.
    assert [results[f"echo{i}"] for i in range(3)] == [0, 1, 2]
    assert log == ["start:0", "start:1"]
    assert await ref.ask(Count()) == 4  # a fresh instance: 3 echoes + this


async def test_ask_timeout_cancels_the_handler(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Worker(log), name="w")
    start = trio.current_time()
    with pytest.raises(AskTimeout) as info:
        await ref.ask(Slow(60, "long"), timeout=1.5)
    assert trio.current_time() - start == pytest.approx(1.5)
    assert info.value.actor == "w"
    assert log == ["start:0", "begin:long", "cancelled:long"]
    # The actor is fine and handles the next request.
    assert await ref.ask(Echo(7)) == 7
    assert log == ["start:0", "begin:long", "cancelled:long"]


async def test_cancelling_the_asker_cancels_only_its_request(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Worker(log), name="w")
    answers: list[str] = []

    async def ask(msg: Slow) -> None:
        answers.append(await ref.ask(msg))

    async with trio.open_nursery() as outer:
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask, Slow(10, "a"))
                await trio.testing.wait_all_tasks_blocked()
                outer.start_soon(ask, Slow(1, "b"))  # queued behind "a", not cancelled
                await trio.testing.wait_all_tasks_blocked()
                scope.cancel()
        # The asker's cancellation completed only after the handler unwound.
        assert "cancelled:a" in log
    assert answers == ["b"]
    assert log == ["start:0", "begin:a", "cancelled:a", "begin:b", "end:b"]


async def test_cancelled_asker_withdraws_a_queued_request(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Worker(log), name="w")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.ask, Slow(5, "first"))
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(1):
            await ref.ask(Slow(5, "withdrawn"))
    assert "begin:withdrawn" not in log
    assert await ref.ask(Count()) == 2  # "first" and this one


async def test_nested_asks_cancel_down_the_chain(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """Cancelling an ask to A cancels A's handler, which cancels its ask to B."""
    log: list[str] = []
    inner = await system.spawn(lambda: Worker(log), name="inner")

    class Relay(Actor[Slow]):
        async def handle(self, msg: Slow) -> str:
            return await inner.ask(msg)

    outer = await system.spawn(Relay, name="outer")
    with trio.move_on_after(2):
        await outer.ask(Slow(100, "deep"))
    assert log == ["start:0", "begin:deep", "cancelled:deep"]
    assert await outer.ask(Slow(1, "again")) == "again"


async def test_late_reply_is_dropped_and_published(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    class Stubborn(Actor[Slow]):
        """Finishes its work even when cancelled (a handler that shields)."""

        async def handle(self, msg: Slow) -> str:
            with trio.CancelScope(shield=True):
                await trio.sleep(msg.seconds)
            return msg.label

    ref = await system.spawn(Stubborn, name="stubborn")
    async with system.dead_letters() as letters:
        start = trio.current_time()
        with pytest.raises(AskTimeout):
            await ref.ask(Slow(3, "late"), timeout=1)
        # The asker waited for the handler to unwind: cancellation is total.
        assert trio.current_time() - start == pytest.approx(3)
        letter = letters.receive_nowait()
    assert (letter.recipient, letter.message, letter.reason) == ("stubborn", "late", "late_reply")


async def test_ask_a_stopped_actor(system: ActorSystem) -> None:
    ref = await system.spawn(lambda: Worker([]), name="w", restart=Restart.TEMPORARY)
    await system.stop("w")
    with pytest.raises(ActorStopped):
        await ref.ask(Echo(1))
    with pytest.raises(ActorStopped):
        await ref.tell(Echo(1))
    with pytest.raises(ActorStopped):
        ref.tell_nowait(Echo(1))


async def test_asks_queued_at_shutdown_fail_with_actor_stopped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    errors: list[BaseException] = []

    async def ask(ref: object, msg: Slow) -> None:
        try:
            await ref.ask(msg)  # type: ignore[attr-defined]
        except ActorStopped as exc:
            errors.append(exc)

    async with trio.open_nursery() as nursery, ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Worker([]), name="w", shutdown=1.0)
        for label in ("running", "queued1", "queued2"):
            nursery.start_soon(ask, ref, Slow(100, label))
            await trio.testing.wait_all_tasks_blocked()
    # The running one was cut off after the grace period, the queued ones at close.
    assert len(errors) == 3
    assert all(e.actor == "w" for e in errors)  # type: ignore[attr-defined]


class Parallel(Actor[Slow | Fail]):
    max_concurrency = 3

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.running = 0
        self.peak = 0

    async def handle(self, msg: Slow | Fail) -> str | None:
        if isinstance(msg, Fail):
            raise RuntimeError("boom")
        self.running += 1
        self.peak = max(self.peak, self.running)
        self.log.append(f"peak:{self.peak}")
        try:
            await trio.sleep(msg.seconds)
        finally:
            self.running -= 1
        return msg.label


async def test_concurrent_actor_runs_up_to_its_limit(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: Parallel(log), name="p")
    start = trio.current_time()
    results: list[str] = []

    async def ask(label: str) -> None:
        results.append(await ref.ask(Slow(1, label)))

    async with trio.open_nursery() as nursery:
        for i in range(7):
            nursery.start_soon(ask, str(i))
    # 7 one-second requests, 3 at a time: three waves.
    assert trio.current_time() - start == pytest.approx(3)
    assert sorted(results) == [str(i) for i in range(7)]
    assert max(int(entry.split(":")[1]) for entry in log) == 3


async def test_concurrent_actor_crash_fails_siblings_with_actor_crashed(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(lambda: Parallel([]), name="p")
    outcomes: dict[str, BaseException | str | None] = {}

    async def ask(key: str, msg: Slow | Fail) -> None:
        try:
            outcomes[key] = await ref.ask(msg)
        except Exception as exc:
            outcomes[key] = exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "slow", Slow(10, "slow"))
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(ask, "fail", Fail("crash"))
    assert isinstance(outcomes["fail"], RuntimeError)
    sibling = outcomes["slow"]
    assert isinstance(sibling, ActorCrashed)
    assert isinstance(sibling.cause, RuntimeError)
    assert await ref.ask(Slow(0, "after")) == "after"  # restarted


async def test_cancelling_one_concurrent_request_leaves_the_others(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(lambda: Parallel([]), name="p")
    results: list[str] = []

    async def ask(label: str) -> None:
        results.append(await ref.ask(Slow(2, label)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, "kept")
        with trio.move_on_after(1):
            await ref.ask(Slow(2, "dropped"))
    assert results == ["kept"]


async def test_a_concurrent_request_after_a_cancelled_one_and_an_idle_spell_is_not_cancelled(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    # A worker leaves its cancel scope when it parks and enters a fresh one on the next
    # message: the cancellation of an earlier asker never reaches a later request.
    ref = await system.spawn(lambda: Parallel([]), name="p")
    for round_ in range(3):
        with trio.move_on_after(1) as cancelled:
            await ref.ask(Slow(2, "dropped"))
        assert cancelled.cancelled_caught
        await trio.sleep(5)  # the worker is idle (parked) in between
        assert await ref.ask(Slow(2, f"kept{round_}")) == f"kept{round_}"
        assert await ref.ask(Slow(0, "at once")) == "at once"


async def test_messages_are_plain_structs(system: ActorSystem) -> None:
    """Tell-only messages need not derive from Request."""

    class Note(msgspec.Struct, frozen=True):
        text: str

    seen: list[str] = []

    class Listener(Actor[Note]):
        async def handle(self, msg: Note) -> None:
            seen.append(msg.text)

    ref = await system.spawn(Listener, name="l")
    for text in ("a", "b", "c"):
        await ref.tell(Note(text))
    await trio.testing.wait_all_tasks_blocked()
    assert seen == ["a", "b", "c"]


# -- calls from a worker thread -------------------------------------------------------------


class Note(msgspec.Struct, frozen=True, tag=True):
    text: str


class Notes(Request[list[str]], frozen=True, tag=True):
    pass


class Notebook(Actor[Note | Notes]):
    def __init__(self) -> None:
        self.notes: list[str] = []

    async def handle(self, msg: Note | Notes) -> list[str] | None:
        if isinstance(msg, Notes):
            return self.notes
        self.notes.append(msg.text)
        return None


async def test_tell_nowait_from_a_worker_thread_is_delivered(system: ActorSystem) -> None:
    ref = await system.spawn(Notebook, name="book")

    def sync_tool() -> None:  # e.g. a sync tool run with trio.to_thread
        ref.tell_nowait(Note("from a thread"))

    await trio.to_thread.run_sync(sync_tool)
    assert await ref.ask(Notes()) == ["from a thread"]
    ref.tell_nowait(Note("from trio"))  # the actor still wakes for the next message
    assert await ref.ask(Notes()) == ["from a thread", "from trio"]


async def test_async_calls_from_another_thread_fail_before_touching_the_mailbox(
    system: ActorSystem,
) -> None:
    ref = await system.spawn(Notebook, name="book")
    errors: list[BaseException] = []

    def other_run() -> None:
        async def use_ref() -> None:
            try:
                await ref.tell(Note("x"))
            except ForeignThread as exc:
                errors.append(exc)
            try:
                await ref.ask(Notes())
            except ForeignThread as exc:
                errors.append(exc)

        trio.run(use_ref)

    await trio.to_thread.run_sync(other_run)
    assert len(errors) == 2 and all(isinstance(e, RuntimeError) for e in errors)
    assert "trio.from_thread.run" in str(errors[0])
    assert await ref.ask(Notes()) == []


# -- deadlocks refused as errors ------------------------------------------------------------


class AskSelf(Request[int], frozen=True, tag=True):
    pass


class Ticks(StreamRequest[int], frozen=True, tag=True):
    pass


class Selfish(Actor[AskSelf | Echo | Ticks]):
    async def handle(self, msg: AskSelf | Echo | Ticks) -> object:
        if isinstance(msg, AskSelf):
            return await self.ctx.self_ref.ask(Echo(1))
        if isinstance(msg, Ticks):
            return self._ticks()
        return msg.n

    async def _ticks(self) -> AsyncIterator[int]:
        yield 1


async def test_a_serial_actor_asking_itself_gets_would_deadlock(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(Selfish, name="me")
    with trio.fail_after(100), pytest.raises(WouldDeadlock, match="itself"):
        await ref.ask(AskSelf())
    assert await ref.ask(Echo(2)) == 2


async def test_a_concurrent_actor_may_ask_itself(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(Selfish, name="me", max_concurrency=2)
    assert await ref.ask(AskSelf()) == 1


async def test_asking_for_a_stream_or_streaming_a_request_is_the_callers_error(
    system: ActorSystem,
) -> None:
    ref: Any = await system.spawn(Selfish, name="me")
    with pytest.raises(WrongRequestKind, match="use stream"):
        await ref.ask(Ticks())
    with pytest.raises(WrongRequestKind, match="use ask"):
        async with ref.stream(Echo(1)):
            pass  # pragma: no cover - never entered
    row = next(r for r in system.snapshot() if r.name == "me")
    assert row.restarts == 0  # the actor never saw either
    async with ref.stream(Ticks()) as events:
        assert [e async for e in events] == [1]
