"""The public test kit: TrioDriver, virtual-time helpers, Probe, scenario strategies."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import msgspec
import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agcore_actors import (
    ActorStopped,
    ActorSystem,
    ChildSpec,
    NoSuchActor,
    Restart,
    State,
    SupervisorSpec,
)
from agcore_actors.testing import (
    Crash,
    EventLog,
    Exit,
    Ping,
    Probe,
    ProbeCrash,
    Sleep,
    StartChild,
    StepTimeout,
    TrioDriver,
    TrioRunEnded,
    apply_operation,
    elapsed,
    settle,
    virtual_clock,
)
from agcore_actors.testing.strategies import backoffs, operations, supervisor_specs


def test_the_kit_imports_without_hypothesis() -> None:
    """Only agcore_actors.testing.strategies needs hypothesis (a test dependency)."""
    code = (
        "import sys, agcore_actors.testing as kit; "
        "assert 'hypothesis' not in sys.modules, 'hypothesis was imported'; "
        "assert all(hasattr(kit, name) for name in kit.__all__)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- TrioDriver --------------------------------------------------------------------------


async def answer(x: int) -> int:
    await trio.lowlevel.checkpoint()
    return x * 2


async def fail(message: str) -> None:
    await trio.sleep(1)
    raise ValueError(message)


async def now() -> float:
    return trio.current_time()


def test_run_returns_the_result_and_raises_the_error_of_each_step() -> None:
    with TrioDriver(clock=virtual_clock()) as driver:
        assert driver.run(answer, 21) == 42
        with pytest.raises(ValueError, match="boom"):
            driver.run(fail, "boom")
        assert driver.run(answer, 1) == 2  # a failed step leaves the run alive
        assert driver.current_time() == 1.0


def test_virtual_time_autojumps_during_a_step() -> None:
    started = time.monotonic()
    with TrioDriver(clock=virtual_clock()) as driver:
        driver.run(trio.sleep, 3600)
        assert driver.current_time() == 3600
        assert driver.run(now) == 3600
    assert time.monotonic() - started < 5


def test_time_stands_still_between_steps_and_steps_that_do_not_wait() -> None:
    fired: list[float] = []

    async def timer(delay: float) -> None:
        await trio.sleep(delay)
        fired.append(trio.current_time())

    with TrioDriver(clock=virtual_clock()) as driver:
        driver.start_soon(timer, 5.0)
        time.sleep(0.01)
        # A timer is pending, but steps that do not wait never let time jump
        # to it, not even as they begin or end.
        for _ in range(5):
            assert driver.run(answer, 1) == 2
            assert driver.current_time() == 0.0
        driver.advance(3.0)
        assert (fired, driver.current_time()) == ([], 3.0)
        driver.advance(2.0)  # a timer due exactly when the step ends fires in it
        assert (fired, driver.current_time()) == ([5.0], 5.0)


def test_a_jump_of_the_clock_between_steps_is_kept() -> None:
    clock = virtual_clock()
    with TrioDriver(clock=clock) as driver:
        clock.jump(7.5)
        assert driver.run(now) == 7.5


def test_the_driver_also_runs_on_the_real_clock() -> None:
    with TrioDriver() as driver:
        before = driver.current_time()
        driver.run(trio.sleep, 0.01)
        assert driver.current_time() - before >= 0.01


def test_a_step_that_never_finishes_times_out_and_close_still_works() -> None:
    driver = TrioDriver(clock=virtual_clock(), timeout=0.2)
    with pytest.raises(StepTimeout, match="sleep_forever"):
        driver.run(trio.sleep_forever)  # nothing pending: no deadline to jump to
    with pytest.raises(RuntimeError, match="timed out"):
        driver.run(answer, 1)
    driver.close()
    assert driver.closed


def test_entered_contexts_stay_open_across_steps_and_close_last_first() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def resource(name: str) -> AsyncIterator[str]:
        events.append(f"enter {name}")
        try:
            yield name.upper()
        finally:
            await trio.sleep(1)  # exiting takes (virtual) time
            events.append(f"exit {name} at {trio.current_time():g}")

    driver = TrioDriver(clock=virtual_clock())
    assert driver.enter(resource("a")) == "A"
    assert driver.enter(resource("b")) == "B"
    driver.advance(10)
    assert events == ["enter a", "enter b"]
    driver.close()
    assert events == ["enter a", "enter b", "exit b at 11", "exit a at 12"]
    with pytest.raises(TrioRunEnded):
        driver.run(answer, 1)


def test_an_error_while_entering_is_raised_by_enter() -> None:
    @asynccontextmanager
    async def broken() -> AsyncIterator[None]:
        raise OSError("cannot open")
        yield  # pragma: no cover

    with TrioDriver(clock=virtual_clock()) as driver:
        with pytest.raises(OSError, match="cannot open"):
            driver.enter(broken())
        assert driver.run(answer, 2) == 4


def test_a_failing_background_task_ends_the_run() -> None:
    driver = TrioDriver(clock=virtual_clock())
    driver.start_soon(fail, "background")
    with pytest.raises(ValueError, match="background"):
        driver.run(trio.sleep, 5)  # the task fails at t=1, during this step
    with pytest.raises(TrioRunEnded):
        driver.run(answer, 1)
    driver.close()  # the failure was reported once already


def test_the_driver_refuses_to_be_driven_from_inside_its_run() -> None:
    with TrioDriver(clock=virtual_clock()) as driver:

        async def reenter() -> int:
            return driver.run(answer, 1)

        with pytest.raises(RuntimeError, match="synchronous code"):
            driver.run(reenter)


# -- time helpers ----------------------------------------------------------------------


async def test_elapsed_measures_trio_time(autojump_clock: trio.testing.MockClock) -> None:
    with elapsed() as took:
        await trio.sleep(2.5)
        assert took.seconds == 2.5
    await trio.sleep(1)
    assert took.seconds == 2.5  # fixed once the block has ended


async def test_settle_does_not_advance_the_clock(autojump_clock: trio.testing.MockClock) -> None:
    done = trio.Event()

    async def later() -> None:
        await trio.sleep(1)
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        await settle()
        assert trio.current_time() == 0 and not done.is_set()
    assert trio.current_time() == 1 and done.is_set()


# -- Probe ---------------------------------------------------------------------------------


async def test_probe_records_starts_crashes_and_restarts(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log = EventLog()
    ref = await system.spawn(Probe.factory(log), name="p")
    assert await ref.ask(Ping()) == 0
    await ref.tell(Crash("first"))
    assert await ref.ask(Ping()) == 1  # queued until the restart
    with pytest.raises(ProbeCrash, match="second"):
        await ref.ask(Crash("second"))
    assert await ref.ask(Ping()) == 2
    assert log.events == [
        ("start", "p", 0),
        ("stop", "p", "crash"),
        ("start", "p", 1),
        ("stop", "p", "crash"),
        ("start", "p", 2),
    ]
    assert log.starts("p")[-1] == ("start", "p", 2)
    assert [row.restarts for row in system.snapshot() if row.name == "p"] == [2]


async def test_a_transient_probe_that_exits_normally_is_not_restarted(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log = EventLog()
    ref = await system.spawn(Probe.factory(log), name="t", restart=Restart.TRANSIENT)
    await ref.ask(Exit())
    await settle()
    assert log.events == [("start", "t", 0), ("stop", "t", "normal")]
    with pytest.raises(NoSuchActor):
        system.lookup("t")


async def test_a_sleeping_probe_is_cut_short_after_its_grace_period(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log = EventLog()
    ref = await system.spawn(Probe.factory(log), name="s", shutdown=2.0)

    async def ask_sleep() -> None:
        with pytest.raises(ActorStopped):
            await ref.ask(Sleep(10.0))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask_sleep)
        await settle()
        with elapsed() as took:
            await system.stop("s")
    assert took.seconds == 2.0
    assert [e.kind for e in log.stops("s")] == ["stop"]
    assert log.times[-1] == 2.0


async def test_a_probe_cancelled_from_outside_records_killed(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    """Its supervisor's own grace (1 s) runs out before the probe's (10 s)."""
    log = EventLog()
    spec = SupervisorSpec(
        "sup",
        [ChildSpec("slow", Probe.factory(log), shutdown=10.0)],
        restart=Restart.TEMPORARY,
        shutdown=1.0,
    )
    await system.start_supervisor(spec)
    ref = system.lookup("slow")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ref.tell, Sleep(60.0))
        await settle()
        await system.stop("sup")
    assert log.stops("slow") == [("stop", "slow", "killed")]
    assert log.times[-1] == 1.0


@pytest.mark.parametrize("msg", [Crash(), Crash("why"), Exit(), Sleep(0.5), Ping()])
def test_probe_messages_survive_a_msgpack_round_trip(msg: msgspec.Struct) -> None:
    data = msgspec.msgpack.encode(msg)
    assert msgspec.msgpack.decode(data, type=type(msg)) == msg


# -- scenario strategies and apply_operation ------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_scenarios_keep_the_basic_guarantees(data: st.DataObject) -> None:
    """Any scenario, with jitter: lives alternate start/stop, temporaries never restart."""
    log = EventLog()
    spec = data.draw(
        supervisor_specs(Probe.factory(log), backoff=backoffs(jitter=st.floats(0, 1))),
        label="spec",
    )
    ops = data.draw(operations(max_size=15), label="ops")
    temporary = {c.name for c in spec.children if c.restart is Restart.TEMPORARY}
    temporary |= {
        op.name for op in ops if isinstance(op, StartChild) and op.restart is Restart.TEMPORARY
    }

    async def scenario() -> None:
        async with ActorSystem(strict=True, seed=1) as system:
            await system.start_supervisor(spec)
            for op in ops:
                await apply_operation(system, spec.name, op, log)
                rows = [r for r in system.snapshot() if r.parent == spec.name]
                for row in rows:
                    assert row.state in (State.RUNNING, State.RESTARTING)
                    assert row.restarts == len(log.starts(row.name)) - 1

    trio.run(scenario, clock=virtual_clock())
    for name in {e.name for e in log.events}:
        kinds = [e.kind for e in log.events if e.name == name]
        assert kinds == ["start", "stop"] * (len(kinds) // 2), (name, kinds)
    assert all(e.detail == 0 for e in log.starts() if e.name in temporary)


async def test_a_probe_stopped_by_an_interrupt_records_interrupted(
    autojump_clock: trio.testing.MockClock,
) -> None:
    log = EventLog()
    with pytest.raises(KeyboardInterrupt):
        async with ActorSystem(strict=True) as system:
            await system.spawn(Probe.factory(log), name="p")
            raise KeyboardInterrupt  # as trio delivers a SIGINT to the main task
    assert log.stops("p") == [("stop", "p", "interrupted")]
