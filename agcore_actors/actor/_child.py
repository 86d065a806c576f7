"""A supervisor's book-keeping for each child, and the events its task handles.

A :class:`Child` is also the child's :class:`Link`: the child's own task
reports its start and its exit through it. Exits that need a decision
(restart or not) are posted to the supervisor as :class:`Exited` events, so
every decision is taken in the supervisor's task, one event at a time.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

import attrs
import trio

from ._breaker import CircuitBreaker
from ._cancel import interrupt_in, is_cancellation
from ._errors import ActorStopped
from ._node import Node
from ._policy import Restart

if TYPE_CHECKING:
    from ._supervisor import Supervisor


@attrs.frozen(weakref_slot=False)
class Terms:
    """A child's restart type, shutdown grace, start timeout, whether it was started
    at run time and its isolation; one object for every child with the same ones (see
    :func:`terms`)."""

    restart: Restart
    shutdown: float
    start_timeout: float
    dynamic: bool
    isolate: CircuitBreaker | None = None


@functools.lru_cache(maxsize=256)
def terms(
    restart: Restart,
    shutdown: float,
    start_timeout: float,
    dynamic: bool,
    isolate: CircuitBreaker | None = None,
) -> Terms:
    """The shared :class:`Terms` of these values (thousands of session children have
    the same ones: one object, not five slots each)."""
    return Terms(restart, shutdown, start_timeout, dynamic, isolate)


@attrs.define(eq=False, weakref_slot=False)  # one per actor: no slot nobody uses
class Child:
    """The supervisor's book-keeping for one child.

    There is one per actor, so it keeps only what it needs of the child's
    spec (its restart type, shutdown grace and start timeout, as :class:`Terms`
    shared by every child with the same ones), not the spec itself.
    """

    owner: Supervisor
    node: Node
    terms: Terms
    running: bool = False
    stopping: bool = False
    incarnation: int = 0
    # Exists only while the supervisor waits for this child's start or exit
    # (never both at once: the supervisor does one thing at a time), or while a
    # start of it is handed off (a Handoff).
    signal: trio.Event | Handoff | None = None
    start_error: BaseException | None = None
    attempt: int = 0
    last_started: float = -math.inf
    restart_due: float | None = None

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def restart(self) -> Restart:
        return self.terms.restart

    @property
    def shutdown(self) -> float:
        return self.terms.shutdown

    @property
    def start_timeout(self) -> float:
        return self.terms.start_timeout

    @property
    def dynamic(self) -> bool:
        return self.terms.dynamic

    # -- Link: called from the child's own task ---------------------------------

    def started(self) -> None:
        self.running = True
        self.last_started = trio.current_time()
        if self.signal is not None:
            self.signal.set()

    def exited(self, reason: BaseException | None) -> None:
        was_running, self.running = self.running, False
        cancelled = reason is not None and is_cancellation(reason)
        interrupted = interrupt_in(reason) is not None
        if not was_running:
            if interrupted:
                reason = ActorStopped(self.name, "was interrupted while starting")
            elif reason is None or cancelled:
                reason = ActorStopped(self.name, "stopped while starting")
            self.start_error = reason
        elif not self.stopping and not cancelled and not interrupted:
            # An interrupt is no crash: the system is stopping, nothing restarts.
            self.owner.post(Exited(self, reason, self.incarnation))
        if self.signal is not None:
            self.signal.set()


@attrs.define(eq=False)
class Call:
    """A request to the supervisor's task, answered through ``done``."""

    action: str  # "start" or "stop"
    arg: Any
    done: trio.Event = attrs.field(factory=trio.Event)
    result: Any = None
    error: BaseException | None = None


@attrs.define(eq=False)
class Exited:
    child: Child
    reason: BaseException | None
    incarnation: int


@attrs.define(eq=False)
class StopSignal:
    epoch: int  # the incarnation it was meant for; a later one ignores it


@attrs.define(eq=False)
class StartDone:
    """The handed-off start ``handoff`` ended (started, or failed to)."""

    handoff: Handoff


Event = Call | Exited | StopSignal | StartDone


class Handoff:
    """A start the supervisor no longer waits for; it stands in for the child's signal.

    A start that takes more than a few scheduling passes is handed off: the child's
    own task reports its start (or its failure to start) through :meth:`set`, as it
    would set the signal the supervisor waits on, and that posts a :class:`StartDone`
    to the supervisor's task; the supervisor's loop fails it at ``deadline``. So a
    slow ``on_start`` holds neither the supervisor nor any other start, and costs no
    task and no cancel scope.
    """

    __slots__ = ("call", "child", "deadline")

    def __init__(self, child: Child, call: Call | None, begun: float) -> None:
        self.child = child
        self.call = call  # the dynamic start to answer, if any
        self.deadline = begun + child.start_timeout

    def set(self) -> None:
        self.child.owner.post(StartDone(self))


async def started_soon(signal: trio.Event) -> None:
    """Give a start the few scheduling passes most starts need (see :func:`wait_started`)."""
    for _ in range(3):
        if signal.is_set():
            return
        await trio.lowlevel.checkpoint()


async def wait_started(child: Child, signal: trio.Event) -> None:
    """Wait for ``child``'s start, at most its start timeout.

    Most starts finish within a few scheduling passes: two let the child's
    task run that far, three an ``on_start`` that asks another actor once (a
    session loading itself from its store). Only a start that takes longer gets
    a deadline, since each deadline's cancel scope stays in trio's deadline
    heap until it is due (30 s by default), which would cost every spawned
    actor, and a cancel scope costs more than a scheduling pass.
    """
    begun = trio.current_time()
    for _ in range(3):
        if signal.is_set():
            return
        await trio.lowlevel.checkpoint()
    if signal.is_set():
        return
    if math.isinf(child.start_timeout):
        await signal.wait()
        return
    with trio.move_on_at(begun + child.start_timeout):
        await signal.wait()
