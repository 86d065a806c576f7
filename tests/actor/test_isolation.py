"""Isolation of a child that keeps crashing: the pure rule against an independent model,
then the supervisor applying it (parked, typed errors, never giving up, tried again)."""

from __future__ import annotations

import functools
import itertools
import random

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors import (
    Actor,
    ActorSystem,
    ChildSpec,
    Intensity,
    Request,
    SupervisorSpec,
)
from agcore_actors.actor import (
    DEFAULT_ISOLATION,
    ActorError,
    ActorParked,
    ActorStopped,
    CircuitBreaker,
    State,
    SupervisorGaveUp,
)
from agcore_actors.actor.policy import Backoff, BreakerState, isolated_crash, isolated_start

# -- the pure rule ------------------------------------------------------------------------


class Life:
    """An isolated child's starts and crashes, written out plainly (no shared code)."""

    def __init__(self, threshold: int, park: list[float], healthy: float) -> None:
        self.threshold, self.park, self.healthy = threshold, park, healthy
        self.crashes_in_a_row = 0
        self.parks = 0
        self.started_at: float | None = None

    def start(self, now: float) -> None:
        self.started_at = now

    def crash(self, now: float) -> float | None:
        if self.started_at is not None and now - self.started_at >= self.healthy:
            self.crashes_in_a_row = self.parks = 0  # it ran long enough: a fresh history
        self.started_at = None
        self.crashes_in_a_row += 1
        if self.crashes_in_a_row < self.threshold:
            return None
        length = self.park[min(self.parks, len(self.park) - 1)]
        self.parks += 1
        return now + length


@given(
    threshold=st.integers(1, 5),
    initial=st.floats(0.5, 20),
    multiplier=st.floats(1, 3),
    cap=st.floats(0.5, 500),
    healthy=st.floats(0.1, 60),
    events=st.lists(st.tuples(st.sampled_from(["start", "crash"]), st.floats(0, 100)), max_size=40),
)
def test_an_isolated_child_is_parked_exactly_when_the_model_says(
    threshold: int,
    initial: float,
    multiplier: float,
    cap: float,
    healthy: float,
    events: list[tuple[str, float]],
) -> None:
    isolate = CircuitBreaker(
        threshold=threshold,
        backoff=Backoff(initial=initial, multiplier=multiplier, cap=cap, jitter=0.0),
        healthy_after=healthy,
    )
    model = Life(threshold, [min(cap, initial * multiplier**k) for k in range(60)], healthy)
    state, now = BreakerState(), 0.0
    for kind, gap in events:
        now += gap
        if kind == "start":
            state = isolated_start(isolate, state, now)
            model.start(now)
        else:
            state, until = isolated_crash(isolate, state, now)
            expected = model.crash(now)
            if expected is None:
                assert until is None
            else:
                assert until == pytest.approx(expected)


@given(crashes=st.integers(0, 30), unit=st.floats(0, 0.999))
def test_the_default_isolation_parks_at_the_third_quick_crash_and_ever_longer_within_its_cap(
    crashes: int, unit: float
) -> None:
    state, now, parks = BreakerState(), 0.0, []
    for _ in range(crashes):
        state = isolated_start(DEFAULT_ISOLATION, state, now)
        now += 1.0  # crashes 1 s after each start: never healthy
        state, until = isolated_crash(DEFAULT_ISOLATION, state, now, unit)
        if until is not None:
            parks.append(until - now)
            now = until
    assert len(parks) == max(0, crashes - 2)
    assert all(5.0 <= p <= 300.0 * 1.1 for p in parks)
    assert all(a <= b + 1e-6 for a, b in itertools.pairwise(parks))  # one unit: same stretch


# -- the supervisor applying it -----------------------------------------------------------


class Boom(Request[str], frozen=True, tag=True):
    pass


class Ping(Request[str], frozen=True, tag=True):
    pass


class Note(msgspec.Struct, frozen=True, tag=True):
    pass


class Flaky(Actor[Boom | Ping | Note]):
    """Crashes on Boom while the shared switch says so."""

    def __init__(self, broken: list[bool]) -> None:
        self.broken = broken

    async def handle(self, msg: Boom | Ping | Note) -> str | None:
        match msg:
            case Boom():
                if self.broken[0]:
                    raise RuntimeError("bug")
                return "boom handled"
            case Ping():
                return f"pong {self.ctx.restarts}"
            case Note():
                return None


QUICK = CircuitBreaker(
    threshold=2,
    backoff=Backoff(initial=10.0, multiplier=2.0, cap=100.0, jitter=0.0),
    healthy_after=30.0,
)


async def test_an_isolated_child_never_makes_its_supervisor_give_up_and_serves_again(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    broken = [True]
    await system.start_supervisor(
        SupervisorSpec(
            "team",
            children=[
                ChildSpec("flaky", lambda: Flaky(broken), isolate=QUICK),
                ChildSpec("steady", lambda: Flaky([False])),
            ],
            intensity=Intensity(max_restarts=0, period=60),  # any counted restart: gave up
        )
    )
    flaky, steady = system.lookup("flaky"), system.lookup("steady")
    with pytest.raises(RuntimeError, match="bug"):
        await flaky.ask(Boom())
    # Asks queued behind the second crash fail with ActorParked the moment it is parked.
    results: list[BaseException | str] = []

    async def ask(msg: Boom | Ping) -> None:
        try:
            results.append(await flaky.ask(msg))
        except Exception as exc:
            results.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask, Boom())
        await trio.testing.wait_all_tasks_blocked()
        for _ in range(5):
            nursery.start_soon(ask, Ping())
    crashed = [r for r in results if isinstance(r, RuntimeError)]
    refused = [r for r in results if isinstance(r, ActorParked)]
    assert len(crashed) == 1 and len(refused) == 5
    parked = refused[0]
    assert isinstance(parked, ActorParked) and parked.retry_in == pytest.approx(10.0)
    assert "RuntimeError: bug" in parked.cause
    # Parked: asks and tells fail at once, the snapshot says so, the sibling is untouched.
    with pytest.raises(ActorParked):
        await flaky.ask(Ping())
    with pytest.raises(ActorParked):
        flaky.tell_nowait(Note())
    with pytest.raises(ActorParked):
        await flaky.tell(Note())
    row = next(r for r in system.snapshot() if r.name == "flaky")
    assert row.state is State.PARKED and row.degraded is not None
    assert await steady.ask(Ping()) == "pong 0"
    # After the park it is tried again, and serves once the bug is gone.
    broken[0] = False
    await trio.sleep(10.0)
    assert await flaky.ask(Boom()) == "boom handled"
    assert await flaky.ask(Ping()) == "pong 2"


async def test_a_stopped_isolated_child_fails_with_actor_stopped_not_parked(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(lambda: Flaky([True]), name="flaky", isolate=QUICK)
    for _ in range(2):
        with pytest.raises(RuntimeError):
            await ref.ask(Boom())
    await trio.testing.wait_all_tasks_blocked()
    with pytest.raises(ActorParked):
        await ref.ask(Ping())
    await system.stop("flaky")
    with pytest.raises(ActorStopped) as info:
        await ref.ask(Ping())
    assert not isinstance(info.value, ActorParked)


async def test_without_isolation_the_same_crashes_make_the_supervisor_give_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    with pytest.raises(SupervisorGaveUp):
        async with ActorSystem(strict=True, seed=0) as system:
            ref = await system.spawn(lambda: Flaky([True]), name="flaky")
            for _ in range(10):
                with pytest.raises((RuntimeError, ActorStopped)):
                    await ref.ask(Boom())
                await trio.sleep(1)


async def test_parking_wakes_blocked_senders_with_actor_parked_and_dead_letters_queued_tells(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    ref = await system.spawn(lambda: Flaky([True]), name="flaky", isolate=QUICK, mailbox_size=2)
    async with system.dead_letters() as letters:
        with pytest.raises(RuntimeError):
            await ref.ask(Boom())
        # During the restart backoff: a Boom and a Note fill the mailbox, more sends wait.
        outcome: list[BaseException | str] = []

        async def boom() -> None:
            try:
                outcome.append(await ref.ask(Boom()))
            except Exception as exc:
                outcome.append(exc)

        async def blocked() -> None:
            try:
                await ref.tell(Note())
                outcome.append("enqueued")
            except ActorParked as exc:
                outcome.append(exc)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(boom)
            await trio.testing.wait_all_tasks_blocked()
            ref.tell_nowait(Note())
            # Two wait: taking the Boom frees a slot for one of them (it may get in
            # before the crash), the other still waits when the actor is parked.
            nursery.start_soon(blocked)
            nursery.start_soon(blocked)
        assert sum(isinstance(o, RuntimeError) for o in outcome) == 1, outcome  # the 2nd crash
        assert sum(isinstance(o, ActorParked) for o in outcome) >= 1, outcome  # still waiting
        letter = letters.receive_nowait()
        assert letter.reason == "parked" and isinstance(letter.message, Note)


class Wobbly(Flaky):
    """Crashes on Boom; its on_start hangs on some restarts (seeded)."""

    def __init__(self, broken: list[bool], hang_on: frozenset[int]) -> None:
        super().__init__(broken)
        self.hang_on = hang_on

    async def on_start(self) -> None:
        if self.ctx.restarts in self.hang_on:
            await trio.sleep_forever()


@pytest.mark.parametrize("seed", range(8))
async def test_crashes_and_hanging_restarts_of_isolated_children_never_end_the_supervisor(
    seed: int, autojump_clock: trio.testing.MockClock
) -> None:
    rng = random.Random(seed)
    broken = [True]
    told: list[BaseException | str] = []
    async with ActorSystem(strict=True, seed=seed) as system:
        children = [
            ChildSpec(
                f"w{i}",
                functools.partial(Wobbly, broken, frozenset(rng.sample(range(1, 8), 3))),
                isolate=QUICK,
                start_timeout=5,
            )
            for i in range(4)
        ]
        await system.start_supervisor(
            SupervisorSpec("team", children=children, intensity=Intensity(0, 60))
        )

        async def caller(name: str) -> None:
            ref = system.lookup(name)
            for _ in range(15):
                await trio.sleep(rng.random() * 4)
                msg = Boom() if rng.random() < 0.6 else Ping()
                begun = trio.current_time()
                try:
                    told.append(await ref.ask(msg))
                except Exception as exc:
                    assert isinstance(exc, ActorError) or str(exc) == "bug", exc
                    told.append(exc)
                # Never longer than a restart's backoff plus a start timeout or two.
                assert trio.current_time() - begun <= 12

        async with trio.open_nursery() as nursery:
            for i in range(4):
                nursery.start_soon(caller, f"w{i}")
        assert len(told) == 60
        assert any(isinstance(t, ActorParked) for t in told)
        assert system.root.children() == ["team"]
        # Healed: every child serves again once its park is over.
        broken[0] = False
        for i in range(4):
            ref = system.lookup(f"w{i}")
            for _ in range(20):  # parks, and trials whose start still hangs (at most 7)
                try:
                    assert await ref.ask(Boom()) == "boom handled"
                    break
                except ActorParked as exc:
                    await trio.sleep(exc.retry_in)
            else:
                raise AssertionError(f"w{i} never served again")
