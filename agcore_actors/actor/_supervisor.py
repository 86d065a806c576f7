"""The supervisor: starts children in order, restarts them by OTP rules.

The rules themselves live in :mod:`._policy`; this module applies them.
Everything a supervisor does (starting, stopping, restarting, dynamic
``start_child``/``stop_child``) happens in its own task, one event at a
time, so no two decisions about its children ever interleave (other tasks'
calls are posted to it: :mod:`._supervisor_calls`).

Guarantees:

- Children start in spec order, each ready (``on_start`` done) before the
  next starts; they stop in reverse order, each given its ``shutdown`` grace
  before it is cancelled.
- A dynamic start or a ``one_for_one`` restart whose ``on_start`` is slow is
  handed off (see :class:`._child.Handoff`): it holds no other start, restart
  or call, and still fails at its start timeout.
- A child with ``isolate`` set never makes the supervisor give up: it is
  parked instead (see :mod:`._isolation`).
- A restarted child keeps its :class:`ActorRef` and its queued messages.
- When restarts exceed the intensity, every child is stopped and
  :class:`SupervisorGaveUp` is raised to the parent.
- One child's failure never touches another child except as the strategy
  says (``one_for_all`` / ``rest_for_one``).
"""

from __future__ import annotations

import math
import random
from typing import Any, TypeVar

import trio

from ._breaker import BreakerState
from ._cancel import is_cancellation, unwrap_group
from ._cell import Cell
from ._child import (
    Child,
    Event,
    Exited,
    Handoff,
    StartDone,
    StopSignal,
    terms,
)
from ._control import ChildControl
from ._errors import NoSuchActor, SupervisorGaveUp
from ._node import ActorInfo, Link, Node, State
from ._policy import (
    RestartWindow,
)
from ._ref import ActorRef
from ._runtime import Runtime
from ._spec import ChildSpec, SupervisorSpec
from ._supervisor_calls import SupervisorCalls

M = TypeVar("M")


def make_node(runtime: Runtime, spec: ChildSpec[Any] | SupervisorSpec, rng: random.Random) -> Node:
    """Create (and register) the cell or supervisor for ``spec``."""
    node: Node
    if isinstance(spec, SupervisorSpec):
        node = Supervisor(runtime, spec, rng=rng)
    else:
        node = Cell(
            runtime,
            spec.name,
            spec.factory,
            mailbox_size=spec.mailbox_size,
            shutdown=spec.shutdown,
            max_concurrency=spec.max_concurrency,
            background_tasks=spec.background_tasks,
        )
        runtime.register(node)
    return node


class Supervisor(SupervisorCalls, ChildControl):
    """A running supervisor; see the module docstring (the calls other tasks make:
    :class:`~._supervisor_calls.SupervisorCalls`, what its task does to its children:
    :class:`~._control.ChildControl`)."""

    def __init__(self, runtime: Runtime, spec: SupervisorSpec, *, rng: random.Random) -> None:
        self.runtime = runtime
        self.spec = spec
        self.state = State.STARTING
        self.restarts = 0
        self._rng = rng
        self._window = RestartWindow(spec.intensity)
        # The child this supervisor's task is waiting on (a start or a stop).
        self.awaiting: Child | None = None
        self._events_in, self._events = trio.open_memory_channel[Event](math.inf)
        self._nursery: trio.Nursery | None = None
        self._epoch = 0
        #: A stop asked before the first run began (its epoch would be stale by then).
        self._stop_before_start = False
        self._closed = False
        runtime.register(self)
        # Children by name, in start order (dicts keep insertion order): a
        # session host has thousands of dynamic children, so finding and
        # removing one must not scan them all.
        self._children: dict[str, Child] = {}
        # Children waiting out a restart backoff, and child supervisors: the
        # few that the event loop and parent lookups need to look at.
        self._pending: set[Child] = set()
        self._subtrees: set[Child] = set()
        self._breakers: dict[Child, BreakerState] = {}
        self._starting: dict[Child, Handoff] = {}
        self._deadlines: list[tuple[float, int, Handoff]] = []
        try:
            for child_spec in spec.children:
                self._add(self._new_child(child_spec, dynamic=False))
        except BaseException:
            self.close()
            raise

    @property
    def name(self) -> str:
        return self.spec.name

    def __repr__(self) -> str:
        return f"<Supervisor {self.name!r} {self.state.value}>"

    # -- public API (called from any task) -------------------------------------

    async def start_child(self, spec: ChildSpec[M]) -> ActorRef[M]:
        """Start a dynamic actor child after the existing ones; return its ref.

        Returns once the child's ``on_start`` has finished. The child is
        supervised by ``spec``'s rules until it stops for good; it stops
        before the children started earlier.

        Cancellation: if the caller is cancelled, the supervisor still
        completes the start and supervises the child as usual.

        Raises:
            DuplicateName: an actor or supervisor called ``spec.name`` exists.
            ActorStopped: this supervisor has stopped, or stopped meanwhile.
            Exception: whatever the factory or ``on_start`` raised; the child
                is then not added.
        """
        node = await self._call("start", spec)
        assert isinstance(node, Cell)
        return node.ref

    async def start_supervisor(self, spec: SupervisorSpec) -> Supervisor:
        """Start a dynamic child supervisor (with its children) after the others."""
        node = await self._call("start", spec)
        assert isinstance(node, Supervisor)
        return node

    async def stop_child(self, name: str) -> None:
        """Stop a child for good and remove it.

        The child's current message (a supervisor child: its own children,
        last started first) gets the child's ``shutdown`` grace, then it is
        cancelled; ``on_stop`` runs; asks still queued fail with
        :class:`ActorStopped` and queued tells become dead letters. Returns
        once the child has stopped.

        Cancellation: if the caller is cancelled, the supervisor still
        completes the stop.

        Raises:
            NoSuchActor: this supervisor has no child called ``name``.
            ActorStopped: this supervisor has stopped.
        """
        await self._call("stop", name)

    def children(self) -> list[str]:
        """Names of the current children, in start order."""
        return list(self._children)

    def parent_of(self, name: str) -> Supervisor | None:
        """The supervisor in this subtree whose child is called ``name``."""
        if name in self._children:
            return self
        for child in self._subtrees:
            assert isinstance(child.node, Supervisor)
            found = child.node.parent_of(name)
            if found is not None:
                return found
        return None

    # -- Node protocol -----------------------------------------------------------

    def request_stop(self) -> None:
        if not self._closed:
            if self._epoch == 0:
                self._stop_before_start = True
            self.post(StopSignal(self._epoch))

    def interrupt_with(self, error: BaseException) -> None:
        """Supervisors handle no requests themselves; each child is told on its stop."""

    def runs_in(self, task: trio.lowlevel.Task) -> bool:
        """Whether ``task`` belongs to an actor anywhere under this supervisor."""
        return any(child.node.runs_in(task) for child in self._children.values())

    def blocked_on(self) -> Node | None:
        """The child this supervisor's task is waiting on (a start or a stop), if any."""
        return self.awaiting.node if self.awaiting is not None else None

    def kill(self) -> None:
        """Cancel every child now, without grace."""
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()

    def close(self) -> None:
        """Stop for good: close every child, refuse further calls."""
        if self._closed:
            return
        self._closed = True
        self.state = State.STOPPED
        for child in reversed(self._children.values()):
            child.node.close()
        self._children.clear()
        self._pending.clear()
        self._subtrees.clear()
        self._breakers.clear()
        self._answer_starts()
        self.runtime.unregister(self)
        self._answer_unhandled_calls()

    def snapshot(self, parent: str | None, into: list[ActorInfo]) -> None:
        into.append(
            ActorInfo(
                name=self.name,
                kind="supervisor",
                parent=parent,
                state=self.state,
                mailbox_depth=self._events.statistics().current_buffer_used,
                mailbox_capacity=0,
                restarts=self.restarts,
                in_flight=0,
            )
        )
        for child in self._children.values():
            child.node.snapshot(self.name, into)

    def start(self, nursery: trio.Nursery, link: Link) -> None:
        nursery.start_soon(self._run, link, name=self.name)

    @trio.lowlevel.enable_ki_protection
    async def _run(self, link: Link) -> None:
        """Run one incarnation: start children, supervise, shut down.

        Reports to ``link`` like a cell: a normal exit after a stop request,
        :class:`SupervisorGaveUp` or a child's start error as the reason.
        Protected from KeyboardInterrupt (trio delivers a SIGINT that arrives
        here to the main task instead), so an interrupt never cuts a
        supervisor's ordered shutdown short.
        """
        self.state = State.STARTING
        self._window = RestartWindow(self.spec.intensity)
        self._epoch += 1
        if self._stop_before_start:
            self._stop_before_start = False
            self.post(StopSignal(self._epoch))
        for child in self._pending:
            child.restart_due = None
        self._pending.clear()
        reason: BaseException | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for child in list(self._children.values()):
                    error = await self._start(child)
                    if error is not None:
                        await self._shutdown()
                        raise error
                self.state = State.RUNNING
                link.started()
                # A cancellation skips the shutdown: the nursery then cancels
                # every child at once.
                try:
                    await self._loop()
                except SupervisorGaveUp:
                    await self._shutdown()
                    raise
                await self._shutdown()
        except BaseException as exc:
            reason = exc if is_cancellation(exc) else unwrap_group(exc)
        self._nursery = None
        self.state = State.STOPPED
        self._answer_starts()
        self._drop_dynamic_children()
        link.exited(reason)
        if reason is not None and is_cancellation(reason):
            raise reason

    # -- the supervisor's own task ---------------------------------------------

    async def _loop(self) -> None:
        while True:
            # Events that have arrived come before due restarts: restarts that
            # keep failing (each after a start timeout) must not starve them.
            event: Event | None = None
            try:
                event = self._events.receive_nowait()
            except trio.WouldBlock:
                due = min(
                    (c.restart_due for c in self._pending if c.restart_due is not None),
                    default=math.inf,
                )
                if self._deadlines:
                    due = min(due, self._next_start_deadline())
                now = trio.current_time()
                if due <= now:
                    await self._starts_due(now)
                    await self._restart_due()
                    continue
                if math.isinf(due):  # no scope: nothing to time out
                    event = await self._events.receive()
                else:
                    with trio.move_on_at(due):
                        event = await self._events.receive()
            if event is None:
                continue
            if isinstance(event, StopSignal):
                if event.epoch == self._epoch:
                    return
                continue
            if isinstance(event, Exited):
                if event.incarnation == event.child.incarnation:  # else: an earlier run
                    await self._on_exit(event.child, event.reason)
            elif isinstance(event, StartDone):
                await self._start_done(event.handoff)
            else:
                await self._on_call(event)

    def _find(self, name: str) -> Child:
        child = self._children.get(name)
        if child is None:
            raise NoSuchActor(name)
        return child

    def _new_child(self, spec: ChildSpec[Any] | SupervisorSpec, dynamic: bool) -> Child:
        node = make_node(self.runtime, spec, self._rng)
        # A supervisor's start is its children's starts, each with its own timeout.
        if isinstance(spec, ChildSpec):
            start_timeout, isolate = spec.start_timeout, spec.isolate
        else:
            start_timeout, isolate = math.inf, None
        return Child(
            self, node, terms(spec.restart, spec.shutdown, start_timeout, dynamic, isolate)
        )

    def _add(self, child: Child) -> None:
        self._children[child.name] = child
        if isinstance(child.node, Supervisor):
            self._subtrees.add(child)

    def _has(self, child: Child) -> bool:
        return self._children.get(child.name) is child

    def _remove(self, child: Child) -> None:
        if self._has(child):
            del self._children[child.name]
        self._pending.discard(child)
        self._subtrees.discard(child)
        self._breakers.pop(child, None)
        child.node.close()

    def _drop_dynamic_children(self) -> None:
        for child in [c for c in self._children.values() if c.dynamic]:
            self._remove(child)
