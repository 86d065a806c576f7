"""Supervisors' limits: deadlocks refused as errors, a start timeout per child, stops
within their grace, crashed instances not kept alive."""

from __future__ import annotations

import functools
import gc
import logging
import random
import weakref

import pytest
import trio
import trio.testing

from agcore_actors import (
    NO_BACKOFF,
    Actor,
    ActorSystem,
    ChildSpec,
    Intensity,
    Request,
    SupervisorSpec,
)
from agcore_actors.actor import ActorStopped, StartTimeout, WouldDeadlock
from tests.actor.supervision import Crash, Hold, Node, Who

# -- deadlocks refused as errors ------------------------------------------------------------


class Spawner(Node):
    """Spawns a sibling from on_start (under the supervisor that is starting it)."""

    async def on_start(self) -> None:
        await self.ctx_system.spawn(lambda: Node("sibling", self.log), name="sibling")

    ctx_system: ActorSystem


async def test_spawn_from_on_start_under_the_same_supervisor_is_refused(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []

    def make() -> Spawner:
        spawner = Spawner("spawner", log)
        spawner.ctx_system = system
        return spawner

    with trio.fail_after(100), pytest.raises(WouldDeadlock, match="on_start"):
        await system.spawn(make, name="spawner")
    assert "sibling" not in system.root.children()


class LateSpawner(Spawner):
    """Spawns a sibling from on_start once its start has been handed off."""

    async def on_start(self) -> None:
        await trio.sleep(1)
        await self.ctx_system.spawn(lambda: Node("sibling", self.log), name="sibling")


async def test_a_spawn_from_a_handed_off_on_start_proceeds_without_deadlock(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []

    def make() -> LateSpawner:
        spawner = LateSpawner("spawner", log)
        spawner.ctx_system = system
        return spawner

    with trio.fail_after(5):
        await system.spawn(make, name="spawner")
    assert system.root.children() == ["spawner", "sibling"]


class StopSelf(Request[None], frozen=True, tag=True):
    pass


async def test_stopping_its_own_actor_from_a_handler_is_refused(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    class Quitter(Actor[StopSelf]):
        async def handle(self, msg: StopSelf) -> None:
            await system.stop(self.ctx.name)

    ref = await system.spawn(Quitter, name="q", shutdown=10)
    start = trio.current_time()
    with pytest.raises(WouldDeadlock, match=r"ctx\.stop\(\)"):
        await ref.ask(StopSelf())
    assert trio.current_time() == start  # no grace period stalled away


# -- a start timeout per child ----------------------------------------------------------------


class SlowStart(Node):
    async def on_start(self) -> None:
        if self.ctx.restarts == self.fail_start:
            self.log.append(f"slow {self.name}")
            await trio.sleep_forever()
        self.log.append(f"start {self.name}")


async def test_a_start_that_never_ends_fails_after_the_default_start_timeout(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    start = trio.current_time()
    with trio.move_on_after(1000), pytest.raises(StartTimeout) as info:
        await system.spawn(lambda: SlowStart("s", log), name="s")
    assert trio.current_time() - start == info.value.seconds == 30
    assert isinstance(info.value, TimeoutError)
    assert log == ["slow s", "stop s"]
    assert "s" not in system.root.children()


async def test_a_slow_restart_does_not_keep_a_crashed_sibling_down(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(
        SupervisorSpec(
            "team",
            children=[
                ChildSpec("a", lambda: Node("a", log)),
                ChildSpec("b", lambda: SlowStart("b", log, fail_start=1), start_timeout=2),
            ],
            intensity=Intensity(max_restarts=10, period=60),
            backoff=NO_BACKOFF,
        )
    )
    await system.lookup("b").tell(Crash())  # b's restart hangs in on_start
    await trio.testing.wait_all_tasks_blocked()
    crashed = trio.current_time()
    await system.lookup("a").tell(Crash())
    with trio.move_on_after(1000):
        assert await system.lookup("a").ask(Who()) == "a#1"
    assert trio.current_time() - crashed <= 2  # not until b's start returns (never)


async def test_a_hanging_restart_never_holds_a_sibling_restart_with_default_timeouts(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    # Default start timeout (30 s) and default backoff: b's restart hangs in on_start
    # for the whole timeout, while a crashes and must come back after its own backoff.
    log: list[str] = []
    await system.start_supervisor(
        SupervisorSpec(
            "team",
            children=[
                ChildSpec("a", lambda: Node("a", log)),
                ChildSpec("b", lambda: SlowStart("b", log, fail_start=1)),
            ],
        )
    )
    await system.lookup("b").tell(Crash())  # b's restart hangs in on_start
    for _ in range(5):  # let b's restart begin (after its backoff) and hang
        await trio.sleep(1)
    assert "slow b" in log
    crashed = trio.current_time()
    await system.lookup("a").tell(Crash())
    with trio.move_on_after(1000):
        assert await system.lookup("a").ask(Who()) == "a#1"
    assert trio.current_time() - crashed <= 1  # a's backoff, not b's 30 s start timeout
    # b's hanging start still times out and b is restarted once more.
    with trio.move_on_after(1000):
        assert await system.lookup("b").ask(Who()) == "b#2"


class Hang(Node):
    async def on_start(self) -> None:
        self.log.append(f"slow {self.name}")
        await trio.sleep_forever()


async def test_a_hanging_dynamic_start_holds_no_other_start_and_times_out_by_default(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.spawn(lambda: Node("a", log), name="a")
    outcome: list[StartTimeout] = []

    async def hang() -> None:
        try:
            await system.spawn(lambda: Hang("h", log), name="h")
        except StartTimeout as exc:
            outcome.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(hang)
        await trio.sleep(1)
        begun = trio.current_time()
        ref = await system.spawn(lambda: Node("b", log), name="b")  # not after h's 30 s
        assert trio.current_time() == begun
        await system.lookup("a").tell(Crash())
        assert await system.lookup("a").ask(Who()) == "a#1"
        assert await ref.ask(Who()) == "b#0"
        assert trio.current_time() - begun <= 1  # a's restart backoff only
    assert len(outcome) == 1 and outcome[0].seconds == 30
    assert "h" not in system.root.children() and log.count("stop h") == 1


async def test_stopping_a_child_whose_restart_hangs_ends_it_at_once(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    ref = await system.spawn(lambda: SlowStart("s", log, fail_start=1), name="s")
    await ref.tell(Crash())
    await trio.sleep(5)  # its restart hangs in on_start
    assert log[-1] == "slow s"
    begun = trio.current_time()
    await system.stop("s")
    assert trio.current_time() == begun
    assert log[-1] == "stop s" and "s" not in system.root.children()


async def test_a_supervisor_stopped_during_a_hanging_dynamic_start_answers_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log: list[str] = []
    errors: list[BaseException] = []
    async with ActorSystem(strict=True, seed=0) as system:
        team = await system.start_supervisor(SupervisorSpec("team"))

        async def hang() -> None:
            try:
                await team.start_child(ChildSpec("h", lambda: Hang("h", log)))
            except ActorStopped as exc:
                errors.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(hang)
            await trio.sleep(1)
            begun = trio.current_time()
            await system.stop("team")
            assert trio.current_time() == begun
    assert len(errors) == 1 and log == ["slow h", "stop h"]


# -- stops take at most the grace -------------------------------------------------------------


async def test_on_stop_runs_within_the_grace_that_is_left(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    class SlowStop(Node):
        async def on_stop(self, reason: BaseException | None) -> None:
            try:
                await trio.sleep(10)
            finally:
                self.log.append(f"stop {self.name}")

    log: list[str] = []
    ref = await system.spawn(lambda: SlowStop("x", log), name="x", shutdown=4)
    await ref.tell(Hold(3))
    await trio.testing.wait_all_tasks_blocked()
    start = trio.current_time()
    await system.stop("x")
    # 3 s of message, then on_stop for the 1 s left of the 4 s grace: not a fresh 4 s.
    assert trio.current_time() - start == 4


class _Keep(logging.Handler):
    """A handler that keeps every record, as buffering and error-reporting handlers do."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_a_logged_crash_does_not_keep_the_crashed_instance_alive() -> None:
    instances: weakref.WeakSet[Node] = weakref.WeakSet()

    def make() -> Node:
        node = Node("a", [])
        instances.add(node)
        return node

    keep = _Keep()
    logger = logging.getLogger("agcore_actors.actor")
    logger.addHandler(keep)
    try:
        async with ActorSystem(strict=True) as system:
            await system.start_supervisor(
                SupervisorSpec("team", children=[ChildSpec("a", make)], backoff=NO_BACKOFF)
            )
            ref = system.lookup("a")
            ref.tell_nowait(Crash())
            assert await ref.ask(Who()) == "a#1"
            gc.collect()
            assert len(instances) == 1  # only the running incarnation
    finally:
        logger.removeHandler(keep)
    assert any("crashed" in record.getMessage() for record in keep.records)


class Randomly(Node):
    """on_start takes a seeded while: quick, slow, for ever, or fails."""

    def __init__(self, name: str, log: list[str], plan: str) -> None:
        super().__init__(name, log)
        self.plan = plan

    async def on_start(self) -> None:
        if self.ctx.restarts > 0 or self.plan == "quick":
            return
        if self.plan == "slow":
            await trio.sleep(5)
        elif self.plan == "hang":
            await trio.sleep_forever()
        else:
            raise RuntimeError("cannot start")


@pytest.mark.parametrize("seed", range(12))
async def test_concurrent_slow_hanging_and_failing_starts_each_end_by_their_own_timeout(
    seed: int, autojump_clock: trio.testing.MockClock
) -> None:
    rng = random.Random(seed)
    log: list[str] = []
    ended: dict[str, tuple[str, float]] = {}
    stopped: set[str] = set()
    async with ActorSystem(strict=True, seed=seed) as system:
        team = await system.start_supervisor(
            SupervisorSpec("team", intensity=Intensity(max_restarts=100, period=1))
        )

        async def start(name: str, plan: str) -> None:
            await trio.sleep(rng.random() * 3)
            begun = trio.current_time()
            try:
                ref = await team.start_child(
                    ChildSpec(name, lambda: Randomly(name, log, plan), start_timeout=10)
                )
            except (StartTimeout, RuntimeError, ActorStopped) as exc:
                ended[name] = (type(exc).__name__, trio.current_time() - begun)
                return
            ended[name] = ("started", trio.current_time() - begun)
            if rng.random() < 0.5:
                await ref.tell(Crash())  # its restart is quick
            elif rng.random() < 0.5:
                await system.stop(name)
                stopped.add(name)

        plans = [rng.choice(["quick", "slow", "hang", "fail"]) for _ in range(30)]
        async with trio.open_nursery() as nursery:
            for i, plan in enumerate(plans):
                nursery.start_soon(start, f"c{i}", plan)
        for i, plan in enumerate(plans):
            outcome, took = ended[f"c{i}"]
            expected = {
                "quick": "started",
                "slow": "started",
                "hang": "StartTimeout",
                "fail": "RuntimeError",
            }[plan]
            assert outcome == expected, (i, plan, outcome)
            # Each start took its own time only, never another's.
            assert took == {"quick": 0, "slow": 5, "hang": 10, "fail": 0}[plan]
        await trio.sleep(1)  # crashed children are back after their backoff
        names = set(team.children())
        for i, plan in enumerate(plans):
            name = f"c{i}"
            assert (name in names) == (plan in ("quick", "slow") and name not in stopped)


class TakesTwoSeconds(Node):
    async def on_start(self) -> None:
        await trio.sleep(2)
        self.log.append(f"start {self.name}")


async def test_a_cancelled_caller_of_a_slow_start_leaves_a_supervised_child_never_an_orphan(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    for k in range(12):
        name = f"s{k}"
        with trio.move_on_after(k * 0.25):  # cancelled before, during or after the start
            for _ in range(k):
                await trio.lowlevel.checkpoint()
            await system.spawn(functools.partial(TakesTwoSeconds, name, log), name=name)
    await trio.sleep(3)
    for k in range(12):
        assert await system.lookup(f"s{k}").ask(Who()) == f"s{k}#0"
    assert system.root.children() == [f"s{k}" for k in range(12)]
