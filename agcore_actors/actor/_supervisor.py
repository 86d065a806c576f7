"""The supervisor: starts children in order, restarts them by OTP rules.

The rules themselves live in :mod:`._policy`; this module applies them.
Everything a supervisor does (starting, stopping, restarting, dynamic
``start_child``/``stop_child``) happens in its own task, one event at a
time, so no two decisions about its children ever interleave.

Guarantees:

- Children start in spec order, each ready (``on_start`` done) before the
  next starts; they stop in reverse order, each given its ``shutdown`` grace
  before it is cancelled.
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

import attrs
import trio

from ._cancel import is_cancellation, unwrap_group
from ._cell import Cell
from ._errors import ActorCrashed, ActorStopped, NoSuchActor, SupervisorGaveUp
from ._node import ActorInfo, Link, Node, State
from ._policy import (
    Restart,
    Strategy,
    backoff_delay,
    next_attempt,
    record_restart,
    restart_set,
    should_restart,
    should_restart_sibling,
)
from ._ref import ActorRef
from ._runtime import Runtime, log
from ._spec import ChildSpec, SupervisorSpec

M = TypeVar("M")


@attrs.define(eq=False)
class _Child:
    """The supervisor's book-keeping for one child.

    There is one per actor, so it keeps only what it needs of the child's
    spec (its restart type and shutdown grace), not the spec itself.
    """

    owner: Supervisor
    node: Node
    restart: Restart
    shutdown: float
    dynamic: bool
    running: bool = False
    stopping: bool = False
    incarnation: int = 0
    # Exists only while the supervisor waits for this child's start or exit
    # (never both at once: the supervisor does one thing at a time).
    signal: trio.Event | None = None
    start_error: BaseException | None = None
    attempt: int = 0
    last_started: float = -math.inf
    restart_due: float | None = None

    @classmethod
    def of(cls, owner: Supervisor, spec: ChildSpec[Any] | SupervisorSpec, dynamic: bool) -> _Child:
        node = make_node(owner.runtime, spec, owner._rng)
        return cls(owner, node, spec.restart, spec.shutdown, dynamic)

    @property
    def name(self) -> str:
        return self.node.name

    # -- Link: called from the child's own task ---------------------------------

    def started(self) -> None:
        self.running = True
        self.last_started = trio.current_time()
        if self.signal is not None:
            self.signal.set()

    def exited(self, reason: BaseException | None) -> None:
        was_running, self.running = self.running, False
        cancelled = reason is not None and is_cancellation(reason)
        if not was_running:
            if reason is None or cancelled:
                reason = ActorStopped(self.name, "stopped while starting")
            self.start_error = reason
        elif not self.stopping and not cancelled:
            self.owner.post(_Exited(self, reason, self.incarnation))
        if self.signal is not None:
            self.signal.set()


@attrs.define(eq=False)
class _Call:
    """A request to the supervisor's task, answered through ``done``."""

    action: str  # "start" or "stop"
    arg: Any
    done: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


@attrs.define(eq=False)
class _Exited:
    child: _Child
    reason: BaseException | None
    incarnation: int


@attrs.define(eq=False)
class _StopSignal:
    epoch: int  # the incarnation it was meant for; a later one ignores it


_Event = _Call | _Exited | _StopSignal


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


class Supervisor:
    """A running supervisor; see the module docstring."""

    def __init__(self, runtime: Runtime, spec: SupervisorSpec, *, rng: random.Random) -> None:
        self.runtime = runtime
        self.spec = spec
        self.state = State.STARTING
        self.restarts = 0
        self._rng = rng
        self._history: tuple[float, ...] = ()
        self._events_in, self._events = trio.open_memory_channel[_Event](math.inf)
        self._nursery: trio.Nursery | None = None
        self._epoch = 0
        self._closed = False
        runtime.register(self)
        # Children by name, in start order (dicts keep insertion order): a
        # session host has thousands of dynamic children, so finding and
        # removing one must not scan them all.
        self._children: dict[str, _Child] = {}
        # Children waiting out a restart backoff, and child supervisors: the
        # few that the event loop and parent lookups need to look at.
        self._pending: set[_Child] = set()
        self._subtrees: set[_Child] = set()
        try:
            for child_spec in spec.children:
                self._add(_Child.of(self, child_spec, dynamic=False))
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

    async def _call(self, action: str, arg: Any) -> Any:
        # The supervisor's task carries the call out even if this caller is
        # cancelled meanwhile: a child started that way is supervised as usual.
        if self._closed:
            raise ActorStopped(self.name)
        call = _Call(action, arg)
        self.post(call)
        await call.done.wait()
        if call.error is not None:
            raise call.error
        return call.result

    def post(self, event: _Event) -> None:
        self._events_in.send_nowait(event)

    # -- Node protocol -----------------------------------------------------------

    def request_stop(self) -> None:
        if not self._closed:
            self.post(_StopSignal(self._epoch))

    def interrupt_with(self, error: BaseException) -> None:
        """Supervisors handle no requests themselves; each child is told on its stop."""

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
        self.runtime.unregister(self)
        # Answer calls that were posted but will never be handled.
        while True:
            try:
                event = self._events.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
            if isinstance(event, _Call):
                event.error = ActorStopped(self.name)
                event.done.set()

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

    async def _run(self, link: Link) -> None:
        """Run one incarnation: start children, supervise, shut down.

        Reports to ``link`` like a cell: a normal exit after a stop request,
        :class:`SupervisorGaveUp` or a child's start error as the reason.
        """
        self.state = State.STARTING
        self._history = ()
        self._epoch += 1
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
        self._drop_dynamic_children()
        link.exited(reason)
        if reason is not None and is_cancellation(reason):
            raise reason

    # -- the supervisor's own task ---------------------------------------------

    async def _loop(self) -> None:
        while True:
            due = min(
                (c.restart_due for c in self._pending if c.restart_due is not None),
                default=math.inf,
            )
            if due <= trio.current_time():
                await self._restart_due()
                continue
            event: _Event | None = None
            with trio.move_on_at(due):
                event = await self._events.receive()
            if event is None:
                continue
            if isinstance(event, _StopSignal):
                if event.epoch == self._epoch:
                    return
                continue
            if isinstance(event, _Exited):
                if event.incarnation == event.child.incarnation:  # else: an earlier run
                    await self._on_exit(event.child, event.reason)
            else:
                await self._on_call(event)

    async def _on_call(self, call: _Call) -> None:
        try:
            if call.action == "start":
                call.result = await self._start_dynamic(call.arg)
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
            call.done.set()

    def _find(self, name: str) -> _Child:
        child = self._children.get(name)
        if child is None:
            raise NoSuchActor(name)
        return child

    def _add(self, child: _Child) -> None:
        self._children[child.name] = child
        if isinstance(child.node, Supervisor):
            self._subtrees.add(child)

    def _has(self, child: _Child) -> bool:
        return self._children.get(child.name) is child

    async def _start_dynamic(self, spec: ChildSpec[Any] | SupervisorSpec) -> Node:
        child = _Child.of(self, spec, dynamic=True)
        self._add(child)
        error = await self._start(child)
        if error is not None:
            self._remove(child)
            raise error
        return child.node

    async def _start(self, child: _Child) -> BaseException | None:
        """Start one incarnation of ``child``; return its start error, if any."""
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
        await signal.wait()
        child.signal = None
        return child.start_error

    async def _on_exit(self, child: _Child, reason: BaseException | None) -> None:
        if not self._has(child):
            return
        crashed = reason is not None
        if crashed:
            log.warning("supervisor %r: child %r crashed: %r", self.name, child.name, reason)
        if not should_restart(child.restart, crashed):
            self._remove(child)
            return
        now = trio.current_time()
        self._history, exceeded = record_restart(self._history, now, self.spec.intensity)
        if exceeded:
            raise SupervisorGaveUp(
                self.name, len(self._history) - 1, self.spec.intensity.period, reason
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

    async def _restart_due(self) -> None:
        now = trio.current_time()
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
            error = await self._start(child)
            if error is not None:
                await self._on_exit(child, error)

    async def _stop(self, child: _Child, interrupt: BaseException) -> None:
        """Stop ``child`` gracefully, cancelling it after its grace period."""
        child.restart_due = None
        self._pending.discard(child)
        if not child.running:
            return
        child.stopping = True
        child.node.interrupt_with(interrupt)
        child.node.request_stop()
        signal = child.signal = trio.Event()
        with trio.move_on_after(child.shutdown):
            await signal.wait()
        if not signal.is_set():
            child.node.kill()
            await signal.wait()
        child.signal = None

    async def _shutdown(self) -> None:
        """Stop every child, last started first."""
        for child in reversed(list(self._children.values())):
            await self._stop(child, ActorStopped(child.name, "was shut down"))

    def _remove(self, child: _Child) -> None:
        if self._has(child):
            del self._children[child.name]
        self._pending.discard(child)
        self._subtrees.discard(child)
        child.node.close()

    def _drop_dynamic_children(self) -> None:
        for child in [c for c in self._children.values() if c.dynamic]:
            self._remove(child)
