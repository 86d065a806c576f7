"""A live supervisor tree against an independent model of the OTP rules.

A hypothesis state machine builds a supervisor ("tree") of probes under the
root of an ``ActorSystem(strict=True)``, in a :class:`TrioDriver` on a
virtual clock, and then crashes children, makes them exit normally, stops
them, starts dynamic ones and lets time pass. After every step the tree must
agree with :class:`Model`, which is written from the rules as documented
(Erlang/OTP's, plus our restart backoff) and shares no code with
``agcore_actors.actor._policy``:

- restart types: permanent children always restart, transient ones only
  after a crash, temporary ones never; a child that is not restarted leaves
  the supervisor;
- strategies: one_for_one restarts the failed child; one_for_all all
  children; rest_for_one the failed child and those started after it. The
  others in the set are stopped last-started first, and all of them start
  again in start order; temporary ones among them are stopped for good;
- intensity: a restart at time ``now`` counts with the earlier restarts at
  times ``t`` with ``now - t <= period`` (OTP keeps a restart exactly
  ``period`` old in the window); more than ``max_restarts`` of them and the
  supervisor gives up: it stops every running child, last-started first, and
  raises SupervisorGaveUp to its parent. The tree is a TEMPORARY child of the
  root, so the root then removes it;
- backoff (jitter 0 here): the n-th consecutive restart of the failed child
  waits ``min(cap, initial * multiplier**(n-1))``; n starts again from 1 when
  the failed incarnation had run for at least ``reset_after``. Every child in
  the restart set starts again when that delay has passed.

The virtual times are binary fractions, so they add up exactly and the
model compares them with ``==``; ties (a restart due exactly when a step
ends, a restart exactly ``period`` old) are deliberate.
"""

from __future__ import annotations

import logging
import re
from typing import NamedTuple

import attrs
import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from agcore_actors import (
    ActorSystem,
    Backoff,
    NoSuchActor,
    Restart,
    State,
    Strategy,
    SupervisorSpec,
)
from agcore_actors.testing import (
    AdvanceTime,
    CrashChild,
    EventLog,
    ExitChild,
    Operation,
    Probe,
    StartChild,
    StopChild,
    TrioDriver,
    apply_operation,
    virtual_clock,
)
from agcore_actors.testing.strategies import restart_types, supervisor_specs, time_steps

TREE = "tree"

Event = tuple[str, str, int | str]


@attrs.define
class ModelChild:
    name: str
    restart: Restart
    started_at: float
    running: bool = True
    due: float | None = None  # when a pending restart happens
    attempt: int = 0  # consecutive restarts of this child, for its backoff
    restarts: int = 0


class Model:
    """The tree as the OTP rules (module docstring) say it must be."""

    def __init__(self, spec: SupervisorSpec, now: float) -> None:
        self.strategy = spec.strategy
        self.max_restarts = spec.intensity.max_restarts
        self.period = spec.intensity.period
        self.backoff: Backoff = spec.backoff
        assert self.backoff.jitter == 0, "the model predicts exact restart times"
        self.now = now
        self.children = [ModelChild(c.name, c.restart, now) for c in spec.children]
        self.window: list[float] = []
        self.alive = True
        self.gave_up = False
        self.ever: set[str] = {c.name for c in self.children}
        self.temporary = {c.name for c in self.children if c.restart is Restart.TEMPORARY}
        self.events: list[Event] = [("start", c.name, 0) for c in self.children]

    # -- what an operation targets ------------------------------------------------

    def running(self) -> list[ModelChild]:
        return [c for c in self.children if c.running]

    def pending(self) -> list[float]:
        """When the pending restarts are due."""
        return [c.due for c in self.children if c.due is not None]

    def apply(self, op: Operation) -> str | None:
        """Apply ``op``; return the child it acts on, as apply_operation must."""
        if isinstance(op, AdvanceTime):
            self.advance(op.seconds)
            return None
        if not self.alive:
            return None
        if isinstance(op, CrashChild | ExitChild):
            running = self.running()
            if not running:
                return None
            child = running[op.index % len(running)]
            self.exit(child, crashed=isinstance(op, CrashChild))
            return child.name
        if isinstance(op, StopChild):
            if not self.children:
                return None
            child = self.children[op.index % len(self.children)]
            self.stop(child)
            return child.name
        self.start(op.name, op.restart)
        return op.name

    # -- the rules ----------------------------------------------------------------

    def delay(self, attempt: int) -> float:
        b = self.backoff
        return min(b.cap, b.initial * b.multiplier ** (attempt - 1))

    def exit(self, child: ModelChild, *, crashed: bool) -> None:
        self.events.append(("stop", child.name, "crash" if crashed else "normal"))
        child.running = False
        restarts = child.restart is Restart.PERMANENT or (
            child.restart is Restart.TRANSIENT and crashed
        )
        if not restarts:
            self.children.remove(child)
            return
        self.window = [t for t in self.window if self.now - t <= self.period]
        self.window.append(self.now)
        if len(self.window) > self.max_restarts:
            self.give_up()
            return
        index = self.children.index(child)
        if self.strategy is Strategy.ONE_FOR_ONE:
            group = [child]
        elif self.strategy is Strategy.ONE_FOR_ALL:
            group = list(self.children)
        else:
            group = self.children[index:]
        for sibling in reversed(group):
            if sibling is child:
                continue
            if sibling.running:
                self.events.append(("stop", sibling.name, "normal"))
                sibling.running = False
            if sibling.restart is Restart.TEMPORARY:
                self.children.remove(sibling)
        if self.now - child.started_at >= self.backoff.reset_after:
            child.attempt = 1
        else:
            child.attempt += 1
        due = self.now + self.delay(child.attempt)
        for member in group:
            if member in self.children:
                member.due = due
        self.restart_due(self.now)

    def give_up(self) -> None:
        for child in reversed(self.children):
            if child.running:
                self.events.append(("stop", child.name, "normal"))
        self.children = []
        self.alive = False
        self.gave_up = True

    def restart_due(self, until: float) -> None:
        """Run the pending restarts due by ``until``, earliest first, in start order."""
        while True:
            dues = [c.due for c in self.children if c.due is not None]
            if not dues or min(dues) > until:
                return
            self.now = min(dues)
            for child in self.children:
                if child.due is not None and child.due <= self.now:
                    child.due = None
                    child.running = True
                    child.restarts += 1
                    child.started_at = self.now
                    self.events.append(("start", child.name, child.restarts))

    def advance(self, seconds: float) -> None:
        end = self.now + seconds
        self.restart_due(end)
        self.now = end

    def start(self, name: str, restart: Restart) -> None:
        self.children.append(ModelChild(name, restart, self.now))
        self.ever.add(name)
        if restart is Restart.TEMPORARY:
            self.temporary.add(name)
        self.events.append(("start", name, 0))

    def stop(self, child: ModelChild) -> None:
        if child.running:
            self.events.append(("stop", child.name, "normal"))
        self.children.remove(child)

    def shutdown(self) -> None:
        for child in reversed(self.children):
            if child.running:
                self.events.append(("stop", child.name, "normal"))
        self.children = []

    def take_events(self) -> list[Event]:
        events, self.events = self.events, []
        return events


class _GaveUpRecords(logging.Handler):
    """Collects the SupervisorGaveUp errors the root logs as its child's crash.

    The runtime logs a crash's reason as text (a kept record must not keep the crashed
    instance alive), so the supervisor and its restart count are read from that text.
    """

    _GAVE_UP = re.compile(r"SupervisorGaveUp\(\"supervisor '([^']*)' gave up after (\d+) restarts")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.errors: list[GaveUp] = []

    def emit(self, record: logging.LogRecord) -> None:
        found = self._GAVE_UP.search(record.getMessage())
        if found:
            self.errors.append(GaveUp(found[1], int(found[2])))


class GaveUp(NamedTuple):
    supervisor: str
    restarts: int


_runtime_log = logging.getLogger("agcore_actors.actor")


class SupervisorMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.log = EventLog()
        self.mark = 0
        self.dynamic = 0
        self.model: Model | None = None
        self.consistent = True
        self.driver = TrioDriver(clock=virtual_clock(), timeout=10)
        try:
            self.system = self.driver.enter(ActorSystem(strict=True, seed=0))
        except BaseException:
            self.driver.close()
            raise
        self.records = _GaveUpRecords()
        # Crash warnings go to the handler only, not to pytest's log capture.
        self._propagate = _runtime_log.propagate
        _runtime_log.propagate = False
        _runtime_log.addHandler(self.records)

    @initialize(data=st.data())
    def start_tree(self, data: st.DataObject) -> None:
        spec = data.draw(supervisor_specs(Probe.factory(self.log), name=TREE), label="spec")
        self.driver.run(self.system.start_supervisor, spec)
        self.model = Model(spec, self.driver.current_time())
        self.check()

    def tree_alive(self) -> bool:
        return self.model is not None and self.model.alive

    # -- rules ------------------------------------------------------------------------

    @precondition(tree_alive)
    @rule(index=st.integers(0, 7))
    def crash_child(self, index: int) -> None:
        self.apply(CrashChild(index))

    @precondition(tree_alive)
    @rule(index=st.integers(0, 7))
    def exit_child(self, index: int) -> None:
        self.apply(ExitChild(index))

    @precondition(tree_alive)
    @rule(index=st.integers(0, 7))
    def stop_child(self, index: int) -> None:
        self.apply(StopChild(index))

    @precondition(tree_alive)
    @rule(restart=restart_types())
    def start_child(self, restart: Restart) -> None:
        self.dynamic += 1
        self.apply(StartChild(f"dyn{self.dynamic}", restart))

    @rule(seconds=time_steps())
    def advance_time(self, seconds: float) -> None:
        self.apply(AdvanceTime(seconds))

    @precondition(lambda self: self.model is not None and self.model.pending())
    @rule(fraction=st.sampled_from([0.5, 1.0]))
    def advance_to_next_restart(self, fraction: float) -> None:
        """Let time pass halfway to the next pending restart, or exactly up to it.

        Makes every backoff delay observable: a restart that comes early or
        late shows in the snapshot (RESTARTING or RUNNING) and in the log.
        """
        assert self.model is not None
        self.apply(AdvanceTime((min(self.model.pending()) - self.model.now) * fraction))

    @precondition(tree_alive)
    @rule(edge=st.sampled_from(["window", "reset", "due"]), index=st.integers(0, 7))
    def crash_at_edge(self, edge: str, index: int) -> None:
        """Let time pass up to an edge of the rules, then crash a child right there.

        - ``window``: the oldest restart in the intensity window is then
          exactly ``period`` old;
        - ``reset``: the chosen child has then run exactly ``reset_after``;
        - ``due``: the next pending restart happens exactly then.
        """
        model = self.model
        assert model is not None
        running = model.running()
        target: float | None = None
        name: str | None = None
        if edge == "window" and model.window:
            target = min(model.window) + model.period
        elif edge == "reset" and running:
            child = running[index % len(running)]
            target, name = child.started_at + model.backoff.reset_after, child.name
        elif edge == "due":
            target = min(model.pending(), default=None)
        if target is not None and target > model.now:
            self.apply(AdvanceTime(target - model.now))
        names = [c.name for c in model.running()]
        if name is not None and name in names:
            index = names.index(name)
        self.apply(CrashChild(index))

    def apply(self, op: Operation) -> None:
        assert self.model is not None
        self.consistent = False
        acted = self.driver.run(apply_operation, self.system, TREE, op, self.log)
        expected = self.model.apply(op)
        assert acted == expected, f"{op} acted on {acted!r}, the model says {expected!r}"
        self.check()

    # -- checks -------------------------------------------------------------------------

    def check(self) -> None:
        """The live tree agrees with the model; sets ``consistent`` when it does."""
        model = self.model
        assert model is not None
        self.consistent = False
        assert self.driver.current_time() == model.now
        events = self.log.since(self.mark)
        self.mark = len(self.log)
        assert events == model.take_events()
        rows = self.system.snapshot()
        children = [r for r in rows if r.parent == TREE]
        assert [r.name for r in children] == [c.name for c in model.children]
        for row, child in zip(children, model.children, strict=True):
            state = State.RUNNING if child.running else State.RESTARTING
            assert (row.name, row.state, row.restarts) == (child.name, state, child.restarts)
        assert (TREE in {r.name for r in rows}) == model.alive
        assert [e.restarts for e in self.records.errors] == (
            [model.max_restarts] if model.gave_up else []
        )
        assert all(e.supervisor == TREE for e in self.records.errors)
        if not model.alive:
            for name in model.ever:
                with pytest.raises(NoSuchActor):
                    self.system.lookup(name)
            with pytest.raises(NoSuchActor):
                self.system.supervisor(TREE)
        self.consistent = True

    @invariant()
    def temporary_children_never_restart(self) -> None:
        if self.model is not None:
            temporary = self.model.temporary
            assert all(e.detail == 0 for e in self.log.starts() if e.name in temporary)

    def teardown(self) -> None:
        try:
            self.driver.close()  # exits the system: stops every actor, last started first
            if self.model is not None and self.consistent:
                self.model.shutdown()
                assert self.log.since(self.mark) == self.model.take_events()
        finally:
            _runtime_log.removeHandler(self.records)
            _runtime_log.propagate = self._propagate


SupervisorMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    # One failure, shrunk well, rather than several shrunk in turn.
    report_multiple_bugs=False,
)
TestSupervisorTree = SupervisorMachine.TestCase
