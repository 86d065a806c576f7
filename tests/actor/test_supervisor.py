"""Supervisors, one readable scenario per rule (the stateful test covers mixes)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agcore_actors import (
    NO_BACKOFF,
    ActorCrashed,
    ActorSystem,
    Backoff,
    ChildSpec,
    Intensity,
    Restart,
    Strategy,
    SupervisorGaveUp,
    SupervisorSpec,
)
from tests.actor.supervision import Crash, Hold, Node, Quit, Who, child, crash, team


async def test_one_for_one_restarts_only_the_failed_child(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(team(log, Strategy.ONE_FOR_ONE))
    log.clear()
    await crash(system, "b")
    assert log == ["stop b", "start b"]
    assert await system.lookup("a").ask(Who()) == "a#0"
    assert await system.lookup("b").ask(Who()) == "b#1"


async def test_one_for_all_restarts_everyone_in_order(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(team(log, Strategy.ONE_FOR_ALL))
    log.clear()
    await crash(system, "b")
    assert log == ["stop b", "stop c", "stop a", "start a", "start b", "start c"]
    assert [await system.lookup(n).ask(Who()) for n in "abc"] == ["a#1", "b#1", "c#1"]


async def test_rest_for_one_restarts_the_failed_and_later_children(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(team(log, Strategy.REST_FOR_ONE))
    log.clear()
    await crash(system, "b")
    assert log == ["stop b", "stop c", "start b", "start c"]
    assert [await system.lookup(n).ask(Who()) for n in "abc"] == ["a#0", "b#1", "c#1"]


async def test_sibling_stopped_by_strategy_fails_its_running_request(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(team(log, Strategy.ONE_FOR_ALL))
    errors: list[BaseException] = []

    async def hold() -> None:
        try:
            await system.lookup("c").ask(Hold(100))
        except ActorCrashed as exc:
            errors.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(hold)
        await trio.testing.wait_all_tasks_blocked()
        await crash(system, "a")
    # c was given its grace period (5 s), then killed: its asker learns why.
    assert len(errors) == 1 and isinstance(errors[0].__cause__ or errors[0], ActorCrashed)
    assert await system.lookup("c").ask(Who()) == "c#1"


@pytest.mark.parametrize(
    ("restart", "exit_kind", "restarted"),
    [
        (Restart.PERMANENT, Crash(), True),
        (Restart.PERMANENT, Quit(), True),
        (Restart.TRANSIENT, Crash(), True),
        (Restart.TRANSIENT, Quit(), False),
        (Restart.TEMPORARY, Crash(), False),
        (Restart.TEMPORARY, Quit(), False),
    ],
)
async def test_restart_types(
    system: ActorSystem,
    autojump_clock: trio.testing.MockClock,
    restart: Restart,
    exit_kind: Crash | Quit,
    restarted: bool,
) -> None:
    log: list[str] = []
    sup = await system.start_supervisor(
        SupervisorSpec("team", children=[child("x", log, restart)], backoff=NO_BACKOFF)
    )
    await system.lookup("x").tell(exit_kind)
    await trio.sleep(1)
    assert (log == ["start x", "stop x", "start x"]) is restarted
    assert (sup.children() == ["x"]) is restarted


async def test_temporary_sibling_is_not_restarted_by_one_for_all(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(
        SupervisorSpec(
            "team",
            children=[child("a", log), child("tmp", log, Restart.TEMPORARY), child("c", log)],
            strategy=Strategy.ONE_FOR_ALL,
            backoff=NO_BACKOFF,
        )
    )
    log.clear()
    await crash(system, "a")
    assert log == ["stop a", "stop c", "stop tmp", "start a", "start c"]
    assert system.supervisor("team").children() == ["a", "c"]


async def test_intensity_exceeded_gives_up_and_parent_decides(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(
        team(log, Strategy.ONE_FOR_ONE, intensity=Intensity(max_restarts=2, period=5))
    )
    await crash(system, "a")
    await crash(system, "a")
    assert "team" in system.root.children()
    await crash(system, "a")  # the third restart within 5 s is one too many
    assert "team" not in system.root.children()  # temporary: the root let it go
    # a stopped by crashing; giving up stops the others, last started first.
    assert log[-3:] == ["stop a", "stop c", "stop b"]


async def test_restarts_outside_the_period_do_not_count(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(
        team(log, Strategy.ONE_FOR_ONE, intensity=Intensity(max_restarts=2, period=5))
    )
    for _ in range(6):
        await crash(system, "a")
        await trio.sleep(2)  # 3 s between crashes: never 3 within 5 s
    assert await system.lookup("a").ask(Who()) == "a#6"


async def test_nested_give_up_escalates_to_a_permanent_parent(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    inner = SupervisorSpec(
        "inner",
        children=[child("leaf", log)],
        intensity=Intensity(max_restarts=0, period=5),
        backoff=NO_BACKOFF,
    )
    await system.start_supervisor(
        SupervisorSpec(
            "outer",
            children=[child("sibling", log), inner],
            backoff=NO_BACKOFF,
            restart=Restart.TEMPORARY,
        )
    )
    log.clear()
    await crash(system, "leaf")  # inner gives up at once; outer restarts inner
    assert log == ["stop leaf", "start leaf"]
    # The leaf's ref survived the restart of its supervisor.
    assert await system.lookup("leaf").ask(Who()) == "leaf#0"
    assert system.supervisor("inner").restarts == 1


async def test_backoff_delays_grow_and_reset_after_quiet_period(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    await system.start_supervisor(
        SupervisorSpec(
            "team",
            children=[child("x", log)],
            intensity=Intensity(max_restarts=100, period=1),
            backoff=Backoff(initial=1, multiplier=2, cap=4, jitter=0.5, reset_after=30),
        )
    )
    ref = system.lookup("x")
    delays = []
    for _ in range(5):
        await ref.tell(Crash())
        await trio.testing.wait_all_tasks_blocked()
        crashed = trio.current_time()
        await ref.ask(Who())  # queued until the restart
        delays.append(trio.current_time() - crashed)
    bases = [1, 2, 4, 4, 4]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay <= base * 1.5
    await trio.sleep(30)  # a quiet period resets the backoff
    await ref.tell(Crash())
    await trio.testing.wait_all_tasks_blocked()
    crashed = trio.current_time()
    await ref.ask(Who())
    assert 1 <= trio.current_time() - crashed <= 1.5


async def test_failed_start_fails_the_supervisor_start(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    spec = SupervisorSpec(
        "team",
        children=[child("a", log), child("bad", log, fail_start=1), child("c", log)],
        restart=Restart.TEMPORARY,
    )
    with pytest.raises(RuntimeError, match="bad cannot start"):
        await system.start_supervisor(spec)
    assert log == ["start a", "failstart bad", "stop bad", "stop a"]
    assert "team" not in system.root.children()


async def test_failed_restart_is_retried_as_another_crash(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []

    class Flaky(Node):
        async def on_start(self) -> None:
            if self.ctx.restarts in (1, 2):
                self.log.append("failstart")
                raise RuntimeError("not yet")
            self.log.append(f"start#{self.ctx.restarts}")

    await system.start_supervisor(
        SupervisorSpec(
            "team",
            children=[ChildSpec("f", lambda: Flaky("f", log))],
            intensity=Intensity(max_restarts=5, period=60),
            backoff=NO_BACKOFF,
        )
    )
    await crash(system, "f")
    assert await system.lookup("f").ask(Who()) == "f#3"
    assert [e for e in log if e != "stop f"] == ["start#0", "failstart", "failstart", "start#3"]


async def test_dynamic_children(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    log: list[str] = []
    sup = await system.start_supervisor(SupervisorSpec("sessions", backoff=NO_BACKOFF))
    refs = [await sup.start_child(child(f"s{i}", log)) for i in range(3)]
    assert sup.children() == ["s0", "s1", "s2"]
    assert await refs[1].ask(Who()) == "s1#0"
    await sup.stop_child("s1")
    assert sup.children() == ["s0", "s2"]
    with pytest.raises(RuntimeError, match="cannot start"):
        await sup.start_child(child("broken", log, fail_start=1))
    assert sup.children() == ["s0", "s2"]
    await crash(system, "s2")
    assert await refs[2].ask(Who()) == "s2#1"


async def test_invalid_specs_are_refused() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        SupervisorSpec("s", children=[child("a", []), child("a", [])])
    with pytest.raises(ValueError):
        ChildSpec("", lambda: Node("x", []))
    with pytest.raises(ValueError):
        ChildSpec("x", lambda: Node("x", []), shutdown=-1)
    with pytest.raises(ValueError):
        Intensity(max_restarts=-1)
    with pytest.raises(ValueError):
        Backoff(multiplier=0.5)


async def test_give_up_reports_the_last_failure(autojump_clock: trio.testing.MockClock) -> None:
    log: list[str] = []
    with pytest.raises(SupervisorGaveUp, match="gave up after 0 restarts") as info:
        async with ActorSystem(intensity=Intensity(max_restarts=0, period=1)) as system:
            await system.spawn(lambda: Node("x", log), name="x")
            await system.lookup("x").tell(Crash())
            await trio.sleep_forever()
    assert str(info.value.last) == "x crashed"
