"""Starting, stopping and restarting a supervisor's children: the supervisor's mechanics.

These run in the supervisor's own task only (see :mod:`._supervisor`), one at
a time. They apply the pure rules of :mod:`._policy`:

- a start waits for ``on_start`` at most the child's ``start_timeout``; past
  it the child is cancelled and the start fails with :class:`StartTimeout`;
- a dynamic start or a ``one_for_one`` restart not done within a few
  scheduling passes is handed off (:class:`Handoff`): the supervisor's task
  goes on, the child's task posts a :class:`StartDone` when its start ends,
  and the loop times it out; stopping the child cancels its start, and a
  supervisor that ends answers the dynamic starts still handed off;
- an isolated child's crashes go to its breaker (:mod:`._isolation`), never
  to the intensity window; when the breaker opens the child is parked until
  its next trial;
- a stop gives the child its ``shutdown`` grace, then cancels it;
- an exit that needs a restart is counted in the intensity window, then the
  restart set is stopped (last started first) and started again (in start
  order) after the backoff; a failed restart counts as another crash.
"""

from __future__ import annotations

import heapq
import math
import random
from typing import TYPE_CHECKING, Any

import trio

from ._breaker import BreakerState
from ._cancel import interrupt_in
from ._cell import Cell
from ._child import Call, Child, Handoff, started_soon, wait_started
from ._errors import ActorCrashed, ActorStopped, StartTimeout, SupervisorGaveUp
from ._isolation import isolated_crash, isolated_start
from ._node import Node, State
from ._policy import (
    RestartWindow,
    Strategy,
    backoff_delay,
    next_attempt,
    restart_set,
    should_restart,
    should_restart_sibling,
)
from ._runtime import Runtime, log

#: A breaker with no failures.
CLOSED = BreakerState()

if TYPE_CHECKING:
    from ._spec import ChildSpec, SupervisorSpec


class ChildControl:
    """Mixin of :class:`Supervisor`: what its task does to its children."""

    runtime: Runtime
    spec: SupervisorSpec
    awaiting: Child | None
    _rng: random.Random
    _window: RestartWindow
    _nursery: trio.Nursery | None
    _children: dict[str, Child]
    _pending: set[Child]
    # Starts left to finish on their own (see Handoff), by child.
    _starting: dict[Child, Handoff]
    # Their deadlines, soonest first (entries of starts that ended are dropped lazily):
    # the loop looks up the next one without a scan of every start in flight.
    _deadlines: list[tuple[float, int, Handoff]]
    # Breaker states of isolated children (only of those: see _isolation).
    _breakers: dict[Child, BreakerState]

    if TYPE_CHECKING:
        # Provided by Supervisor; declared here so the mixin type-checks on its own.
        @property
        def name(self) -> str: ...

        def children(self) -> list[str]: ...

        def _has(self, child: Child) -> bool: ...

        def _remove(self, child: Child) -> None: ...

        def _add(self, child: Child) -> None: ...

        def _find(self, name: str) -> Child: ...

        def _new_child(self, spec: ChildSpec[Any] | SupervisorSpec, dynamic: bool) -> Child: ...

    async def _on_call(self, call: Call) -> None:
        handed_off = False
        try:
            if call.action == "start":
                node = await self._start_dynamic(call)
                handed_off = node is None  # then answered when the start ends
                call.result = node
            else:
                child = self._find(call.arg)
                await self._stop(child, ActorStopped(child.name, "was stopped"))
                self._remove(child)
        except Exception as exc:
            call.error = exc
        except BaseException:
            call.error = ActorStopped(self.name, "stopped while handling this call")
            raise
        finally:
            if not handed_off:
                call.done.set()

    async def _start_dynamic(self, call: Call) -> Node | None:
        """Start the child ``call`` asks for: its node, or None when the start was
        handed off (a slow ``on_start``: then :meth:`_start_done` answers ``call``)."""
        child = self._new_child(call.arg, dynamic=True)
        self._add(child)
        result = await self._begin_start(child, call, hand_off=True)
        if isinstance(result, Handoff):
            return None
        if result is not None:
            self._remove(child)
            raise result
        return child.node

    async def _start(self, child: Child) -> BaseException | None:
        """Start one incarnation of ``child`` and wait for it; return its start error."""
        result = await self._begin_start(child, None, hand_off=False)
        assert not isinstance(result, Handoff)
        return result

    async def _begin_start(
        self, child: Child, call: Call | None, *, hand_off: bool
    ) -> BaseException | Handoff | None:
        """Start one incarnation of ``child``; return its start error, if any.

        With ``hand_off``, a start that is not done within a few scheduling passes is
        left to finish on its own (see :class:`Handoff`): this returns the handoff,
        and :meth:`_start_done` later finishes the job (answering ``call``, the
        dynamic start that asked for it, if any).
        """
        assert self._nursery is not None
        child.incarnation += 1
        child.start_error = None
        child.stopping = False
        signal = child.signal = trio.Event()
        # The node starts its task with start_soon, not nursery.start, whose
        # temporary nursery would cost every idle actor a cancel scope.
        try:
            child.node.start(self._nursery, child)
        except Exception as exc:  # the factory failed
            child.signal = None
            return exc
        except BaseException as exc:
            child.signal = None
            fatal = interrupt_in(exc)
            if fatal is None:
                raise
            self.runtime.interrupt(fatal)
            return ActorStopped(child.name, "was interrupted while starting")
        self.awaiting = child
        try:
            if hand_off:
                begun = trio.current_time()
                await started_soon(signal)
                if not signal.is_set():
                    # Slow: the start goes on without us (no task, no scope: one entry
                    # and the loop's timer), so it holds no other start or restart.
                    handoff = child.signal = Handoff(child, call, begun)
                    self._starting[child] = handoff
                    heapq.heappush(self._deadlines, (handoff.deadline, id(handoff), handoff))
                    return handoff
            else:
                await wait_started(child, signal)
            if not signal.is_set():
                await self._time_out(child)
        finally:
            self.awaiting = None
        child.signal = None
        if child.start_error is None:
            self._started_ok(child)
        return child.start_error

    async def _time_out(self, child: Child) -> None:
        """``child``'s start ran past its timeout: cancel it, fail it with StartTimeout."""
        signal = child.signal = trio.Event()
        child.node.kill()  # its on_start is cancelled; on_stop runs
        await signal.wait()
        if child.running:  # it started as the kill came: stop it again
            await self._stop(child, ActorStopped(child.name, "started too late"))
        child.start_error = StartTimeout(child.name, child.start_timeout)

    async def _start_done(self, handoff: Handoff) -> None:
        """The handed-off start ``handoff`` ended (the child set it): finish it."""
        child = handoff.child
        if self._starting.get(child) is not handoff:
            return  # reported twice, timed out or cancelled meanwhile
        del self._starting[child]
        child.signal = None
        await self._finish_start(child, handoff.call)

    def _next_start_deadline(self) -> float:
        """When the soonest handed-off start times out (``math.inf``: none)."""
        deadlines, starting = self._deadlines, self._starting
        while deadlines and starting.get(deadlines[0][2].child) is not deadlines[0][2]:
            heapq.heappop(deadlines)  # that start ended
        return deadlines[0][0] if deadlines else math.inf

    async def _starts_due(self, now: float) -> None:
        """Fail the handed-off starts whose start timeout has run out."""
        late: list[Handoff] = []
        while self._next_start_deadline() <= now:
            late.append(heapq.heappop(self._deadlines)[2])
        for handoff in late:
            child = handoff.child
            if self._starting.get(child) is not handoff:
                continue  # finished or cancelled by an earlier one of these
            if child.running or child.start_error is not None:
                continue  # it ended meanwhile: its StartDone is on its way
            del self._starting[child]
            self.awaiting = child
            try:
                await self._time_out(child)
            finally:
                self.awaiting = None
            child.signal = None
            await self._finish_start(child, handoff.call)

    async def _finish_start(self, child: Child, call: Call | None) -> None:
        error = child.start_error
        if error is None:
            self._started_ok(child)
        if call is not None:  # a dynamic start: answer it
            if error is None:
                call.result = child.node
            else:
                self._remove(child)
                call.error = error
            call.done.set()
        elif error is not None:  # a restart: a failed one counts as another crash
            await self._on_exit(child, error)

    async def _cancel_start(self, child: Child, interrupt: BaseException) -> None:
        """Stop a handed-off start of ``child`` (it is being stopped or removed)."""
        handoff = self._starting.pop(child)
        signal = child.signal = trio.Event()
        self.awaiting = child
        try:
            child.stopping = True
            child.node.interrupt_with(interrupt)
            child.node.kill()
            await signal.wait()
        finally:
            self.awaiting = None
        child.signal = None
        if handoff.call is not None:
            handoff.call.error = ActorStopped(child.name, "was stopped while starting")
            handoff.call.done.set()

    def _answer_starts(self) -> None:
        """The supervisor ends: answer the dynamic starts still handed off."""
        starting, self._starting = self._starting, {}
        self._deadlines.clear()
        for handoff in starting.values():
            if handoff.call is not None and not handoff.call.done.is_set():
                handoff.call.error = ActorStopped(self.name, "stopped while starting it")
                handoff.call.done.set()

    def _started_ok(self, child: Child) -> None:
        """``child`` finished starting: an isolated one's breaker counts a success."""
        isolate = child.terms.isolate
        if isolate is not None:
            state = self._breakers.get(child, CLOSED)
            self._breakers[child] = isolated_start(isolate, state, trio.current_time())

    async def _on_exit(self, child: Child, reason: BaseException | None) -> None:
        if not self._has(child):
            return
        crashed = reason is not None
        if crashed:
            # The reason goes in as text: a record kept by a handler must not keep the
            # crashed instance alive through the exception's frames.
            log.warning("supervisor %r: child %r crashed: %s", self.name, child.name, repr(reason))
        if not should_restart(child.restart, crashed):
            self._remove(child)
            return
        now = trio.current_time()
        parked_until: float | None = None
        isolate = child.terms.isolate
        if isolate is not None and crashed:
            # An isolated child's crashes go to its breaker, never to the intensity
            # window: it can be parked, but never make this supervisor give up.
            state, parked_until = isolated_crash(
                isolate, self._breakers.get(child, CLOSED), now, self._rng.random()
            )
            self._breakers[child] = state
        elif self._window.record(now):
            raise SupervisorGaveUp(
                self.name, len(self._window) - 1, self.spec.intensity.period, reason
            )
        strategy = self.spec.strategy
        # one_for_one needs no look at the siblings: keep it O(1).
        order = [child.name] if strategy is Strategy.ONE_FOR_ONE else self.children()
        targets = [self._children[n] for n in restart_set(strategy, order, child.name)]
        for sibling in reversed(targets):
            if sibling is child:
                continue
            await self._stop(sibling, ActorCrashed(sibling.name, reason))
            if not should_restart_sibling(sibling.restart):
                self._remove(sibling)
        child.attempt = next_attempt(child.attempt, child.last_started, now, self.spec.backoff)
        due = now + backoff_delay(child.attempt, self.spec.backoff, self._rng.random())
        for target in targets:
            if self._has(target):
                target.restart_due = due
                target.node.state = State.RESTARTING
                self._pending.add(target)
        if parked_until is not None and self._has(child):
            assert isinstance(child.node, Cell)  # only actor children are isolated
            child.node.park(parked_until, f"{type(reason).__name__}: {reason}")
            child.restart_due = parked_until

    async def _restart_due(self) -> None:
        now = trio.current_time()
        one_for_one = self.spec.strategy is Strategy.ONE_FOR_ONE
        due = [c for c in self._pending if c.restart_due is not None and c.restart_due <= now]
        if len(due) > 1:  # a group restart: in start order
            position = {name: i for i, name in enumerate(self._children)}
            due.sort(key=lambda c: position.get(c.name, -1))
        for child in due:
            if child.restart_due is None or child.restart_due > now:
                continue  # rescheduled by a failed start earlier in this loop
            child.restart_due = None
            self._pending.discard(child)
            if not self._has(child) or child.running:
                continue
            child.node.restarts += 1
            # A one_for_one restart is handed off when slow: a start that hangs holds
            # no sibling's restart. A group restarts in order, each ready first.
            result = await self._begin_start(child, None, hand_off=one_for_one)
            if result is not None and not isinstance(result, Handoff):
                await self._on_exit(child, result)

    async def _stop(self, child: Child, interrupt: BaseException) -> None:
        """Stop ``child`` gracefully, cancelling it after its grace period."""
        child.restart_due = None
        self._pending.discard(child)
        if child in self._starting:
            await self._cancel_start(child, interrupt)
        if not child.running:
            return
        child.stopping = True
        child.node.interrupt_with(interrupt)
        child.node.request_stop()
        signal = child.signal = trio.Event()
        self.awaiting = child
        try:
            with trio.move_on_after(child.shutdown):
                await signal.wait()
            if not signal.is_set():
                child.node.kill()
                await signal.wait()
        finally:
            self.awaiting = None
        child.signal = None

    async def _shutdown(self) -> None:
        """Stop every child, last started first."""
        for child in reversed(list(self._children.values())):
            await self._stop(child, ActorStopped(child.name, "was shut down"))
