"""ActorSystem: registry, snapshot, dead letters, shutdown, root failure."""

from __future__ import annotations

import msgspec
import pytest
import trio
import trio.testing

from agcore_actors import (
    NO_BACKOFF,
    Actor,
    ActorStopped,
    ActorSystem,
    ChildSpec,
    DuplicateName,
    Intensity,
    NoSuchActor,
    Request,
    Restart,
    State,
    SupervisorGaveUp,
    SupervisorSpec,
)


class Hold(msgspec.Struct, frozen=True, tag=True):
    seconds: float


class Ping(Request[str], frozen=True, tag=True):
    pass


class Crash(msgspec.Struct, frozen=True, tag=True):
    pass


class Member(Actor[Hold | Ping | Crash]):
    """Logs its start and stop; holds a message as long as asked to."""

    def __init__(self, name: str, log: list[str], stop_takes: float = 0.0) -> None:
        self.name = name
        self.log = log
        self.stop_takes = stop_takes

    async def on_start(self) -> None:
        self.log.append(f"start {self.name}")

    async def handle(self, msg: Hold | Ping | Crash) -> str | None:
        if isinstance(msg, Hold):
            await trio.sleep(msg.seconds)
            return None
        if isinstance(msg, Crash):
            raise RuntimeError(f"{self.name} crashed")
        return self.name

    async def on_stop(self, reason: BaseException | None) -> None:
        if self.stop_takes:  # after a kill there is no time left to wait
            await trio.sleep(self.stop_takes)
        self.log.append(f"stop {self.name}")


def member(name: str, log: list[str], **kw: float) -> ChildSpec[Hold | Ping | Crash]:
    return ChildSpec(name, lambda: Member(name, log, **kw))


async def test_lookup_and_duplicate_names(system: ActorSystem) -> None:
    ref = await system.spawn(lambda: Member("a", []), name="a")
    assert system.lookup("a").name == "a"
    assert await system.lookup("a").ask(Ping()) == "a"
    assert ref.name == "a"
    with pytest.raises(DuplicateName):
        await system.spawn(lambda: Member("a", []), name="a")
    with pytest.raises(NoSuchActor):
        system.lookup("nobody")
    sup = await system.start_supervisor(SupervisorSpec("team", children=[member("b", [])]))
    assert system.supervisor("team") is sup
    with pytest.raises(NoSuchActor):
        system.lookup("team")  # a supervisor has no mailbox
    with pytest.raises(DuplicateName):
        await system.start_supervisor(SupervisorSpec("other", children=[member("a", [])]))


async def test_snapshot_shows_tree_depth_and_restarts(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(
        SupervisorSpec("team", children=[member("a", log), member("b", log)], backoff=NO_BACKOFF)
    )
    a = system.lookup("a")
    await a.tell(Hold(10))
    for _ in range(3):
        await a.tell(Ping())
    await trio.testing.wait_all_tasks_blocked()
    rows = {row.name: row for row in system.snapshot()}
    assert [row.name for row in system.snapshot()] == ["root", "team", "a", "b"]
    assert rows["team"].parent == "root" and rows["a"].parent == "team"
    assert rows["a"].mailbox_depth == 3 and rows["a"].in_flight == 1
    assert rows["b"].mailbox_depth == 0 and rows["b"].in_flight == 0
    assert rows["a"].state is State.RUNNING and rows["a"].mailbox_capacity == 1024

    await system.lookup("b").tell(Crash())
    await trio.sleep(0.1)
    rows = {row.name: row for row in system.snapshot()}
    assert rows["b"].restarts == 1 and rows["a"].restarts == 0


async def test_shutdown_stops_in_reverse_start_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with ActorSystem(strict=True) as system:
        await system.spawn(lambda: Member("first", log), name="first")
        await system.start_supervisor(
            SupervisorSpec("team", children=[member("t1", log), member("t2", log)])
        )
        await system.spawn(lambda: Member("last", log), name="last")
    assert log == [
        "start first",
        "start t1",
        "start t2",
        "start last",
        "stop last",
        "stop t2",
        "stop t1",
        "stop first",
    ]


async def test_shutdown_waits_for_the_current_message_within_grace(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Member("a", log), name="a", shutdown=5)
        await ref.tell(Hold(3))
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
    assert trio.current_time() - start == pytest.approx(3)  # finished its message


async def test_shutdown_kills_after_grace(autojump_clock: trio.testing.MockClock) -> None:
    log: list[str] = []
    errors: list[BaseException] = []

    async def ask(ref: object) -> None:
        try:
            await ref.ask(Ping())  # type: ignore[attr-defined]
        except ActorStopped as exc:
            errors.append(exc)

    async with trio.open_nursery() as nursery:
        async with ActorSystem(strict=True) as system:
            ref = await system.spawn(lambda: Member("a", log), name="a", shutdown=2)
            await ref.tell(Hold(1000))
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(ask, ref)  # queued behind the endless Hold
            await trio.testing.wait_all_tasks_blocked()
            start = trio.current_time()
        assert trio.current_time() - start == pytest.approx(2)
    assert log == ["start a", "stop a"]  # on_stop ran after the kill
    assert len(errors) == 1


async def test_dead_letters_for_queued_tells(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(lambda: Member("a", []), name="a", restart=Restart.TEMPORARY)
    await ref.tell(Hold(10))
    await trio.testing.wait_all_tasks_blocked()
    async with system.dead_letters() as letters:
        await ref.tell(Hold(1))
        await ref.tell(Ping())
        await system.stop("a")
        got = [letters.receive_nowait(), letters.receive_nowait()]
    assert [(d.recipient, d.reason) for d in got] == [("a", "stopped")] * 2
    assert [type(d.message) for d in got] == [Hold, Ping]


async def test_slow_dead_letter_subscriber_never_blocks(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(
        lambda: Member("a", []), name="a", restart=Restart.TEMPORARY, mailbox_size=2000
    )
    await ref.tell(Hold(10))
    await trio.testing.wait_all_tasks_blocked()
    for _ in range(1000):
        ref.tell_nowait(Ping())
    async with system.dead_letters() as letters:
        await system.stop("a")  # 1000 letters for a 256-letter buffer
        received = 0
        while True:
            try:
                letters.receive_nowait()
            except trio.WouldBlock:
                break
            received += 1
    assert received == 256


async def test_stop_unknown_name(system: ActorSystem) -> None:
    with pytest.raises(NoSuchActor):
        await system.stop("ghost")


async def test_root_giving_up_ends_the_system_block(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    with pytest.raises(SupervisorGaveUp) as info:
        async with ActorSystem(
            strict=True, intensity=Intensity(max_restarts=2, period=10), backoff=NO_BACKOFF
        ) as system:
            ref = await system.spawn(lambda: Member("a", log), name="a")
            for _ in range(3):
                await ref.tell(Crash())
                await trio.sleep(1)
            await trio.sleep_forever()  # cancelled when the root gives up
    assert info.value.supervisor == "root"
    assert isinstance(info.value.last, RuntimeError)
    assert log.count("start a") == 3 and log[-1] == "stop a"


async def test_system_cannot_be_entered_twice() -> None:
    system = ActorSystem()
    async with system:
        with pytest.raises(RuntimeError, match="only once"):
            await system.__aenter__()


async def test_on_stop_learns_that_the_actor_was_killed(
    autojump_clock: trio.testing.MockClock,
) -> None:
    reasons: list[BaseException | None] = []

    class Recorder(Member):
        async def on_stop(self, reason: BaseException | None) -> None:
            reasons.append(reason)

    async with ActorSystem(strict=True) as system:
        graceful = await system.spawn(lambda: Recorder("g", []), name="g", shutdown=2)
        stubborn = await system.spawn(lambda: Recorder("s", []), name="s", shutdown=2)
        await stubborn.tell(Hold(1000))
        await graceful.tell(Hold(1))
        await trio.testing.wait_all_tasks_blocked()
    killed, finished = reasons  # stopped last started first
    assert isinstance(killed, ActorStopped) and "grace" in str(killed)
    assert finished is None


async def test_a_handler_that_shields_itself_delays_the_stop_until_it_returns(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Cancelling is all a kill can do: the stop waits for a shielded handler."""
    log: list[str] = []

    class Shielded(Member):
        async def handle(self, msg: Hold | Ping | Crash) -> str | None:
            with trio.CancelScope(shield=True):
                await trio.sleep(10)
            log.append("handler returned")
            return None

    async with ActorSystem(strict=True) as system:
        ref = await system.spawn(lambda: Shielded("s", log), name="s", shutdown=2)
        await ref.tell(Hold(0))
        await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
    assert trio.current_time() - start == 10  # not the 2 s grace
    assert log == ["start s", "handler returned", "stop s"]


class Degrade(Request[None], frozen=True, tag=True):
    reason: str | None


class Health(Actor[Degrade | Crash]):
    """Publishes what it is told as its degraded state; crashes on demand."""

    async def handle(self, msg: Degrade | Crash) -> None:
        if isinstance(msg, Crash):
            raise RuntimeError("crashed")
        self.ctx.set_degraded(msg.reason)


async def test_snapshot_shows_what_an_actor_publishes_as_degraded_until_cleared(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    await system.start_supervisor(
        SupervisorSpec("team", children=[ChildSpec("h", Health)], backoff=NO_BACKOFF)
    )
    h = system.lookup("h")

    def degraded() -> dict[str, str | None]:
        return {row.name: row.degraded for row in system.snapshot()}

    assert degraded() == {"root": None, "team": None, "h": None}
    await h.ask(Degrade("disk full: writes refused"))
    assert degraded()["h"] == "disk full: writes refused"
    await h.ask(Degrade(None))
    assert degraded()["h"] is None
    # A new incarnation starts healthy: the state belongs to the one that published it.
    await h.ask(Degrade("read-only file"))
    await h.tell(Crash())
    await trio.sleep(0.1)
    rows = {row.name: row for row in system.snapshot()}
    assert rows["h"].restarts == 1 and rows["h"].degraded is None
