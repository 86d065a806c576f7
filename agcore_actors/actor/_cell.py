"""The cell: the part of an actor that outlives its instances.

A cell owns the mailbox, the :class:`ActorRef`, the restart count and the
factory, and it is the instance's :class:`ActorContext`. Each *incarnation*
is one instance made by the factory, running ``on_start``, the receive loop
and ``on_stop`` in one task. A supervisor starts incarnations one after
another; the mailbox, and everything queued in it, carries over.

Cancellation design: a serial actor's receive loop runs inside one
long-lived cancel scope. An asker's cancellation cancels that scope when,
and only when, the asker's request is the one running; the loop completes
that request with the asker's Cancelled and opens a fresh scope. No scope is
opened per message (it would cost as much as the whole message hop). The
same scope is the kill switch of the incarnation. A concurrent actor runs the
same loop in each of its workers (see :mod:`._workers`).

Ending: see :mod:`._ending`.

Memory design: an idle serial actor is one task parked in
:meth:`_serve_serial` (its root coroutine, one frame) plus this cell, its
mailbox, ref and one cancel scope; the loop drops its last message and reply
before it parks. An idle concurrent actor that may hibernate holds no task at
all (see :mod:`._dormant`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import outcome
import trio
from trio.lowlevel import Abort, Task, current_task, wait_task_rescheduled

from ._accept import Accepted, accepted
from ._actor import Actor, ActorContext
from ._cancel import is_cancellation, unwrap_group
from ._deferred import DeferredReply
from ._dormant import may_sleep
from ._ending import Ending
from ._envelope import ABANDONED, DEFERRED, QUEUED, RUNNING, Envelope
from ._errors import ActorParked, ActorStopped
from ._mailbox import Mailbox
from ._node import ActorInfo, Link, State
from ._ref import ActorRef
from ._runtime import Runtime
from ._workers import Pool, work

M = TypeVar("M")

#: Messages a serial actor handles back to back before it lets others run.
_BURST = 64


class Cell(Ending, ActorContext[M], Generic[M]):
    """Mailbox, ref and life cycle of one actor across its incarnations."""

    __slots__ = (
        "_degraded",
        "_dormant",
        "_home",
        "_killed",
        "_link",
        "_name",
        "_nursery",
        "_options",
        "_restarts",
        "accepts",
        "factory",
        "mailbox",
        "pool",
        "ref",
        "runtime",
        "shutdown",
        "stop_deadline",
    )

    def __init__(
        self,
        runtime: Runtime,
        name: str,
        factory: Callable[[], Actor[M]],
        *,
        mailbox_size: int,
        shutdown: float,
        max_concurrency: int | None = None,
        background_tasks: bool | None = None,
    ) -> None:
        self.runtime = runtime
        self._name = name
        self.factory = factory
        self.mailbox = Mailbox(name, mailbox_size)
        self.shutdown = shutdown
        # Spawn options (max_concurrency, background_tasks); a None among them,
        # or None for both (the common case, one slot): the class decides.
        self._options: tuple[int | None, bool | None] | None = (
            None
            if max_concurrency is None and background_tasks is None
            else (max_concurrency, background_tasks)
        )
        # The message classes a send must match (None: unchecked); set per
        # incarnation from the instance's class, see _accept.
        self.accepts: Accepted | None = None
        self.ref: ActorRef[M] = ActorRef(self)
        self.state = State.STARTING
        self._restarts = 0
        # What the running incarnation published with set_degraded.
        self._degraded: str | None = None
        # When the running stop must be over (None: no stop was requested).
        self.stop_deadline: float | None = None
        self._killed = False
        self.interrupt: BaseException | None = None
        # The running request of a serial actor.
        self._current: Envelope | None = None
        # Requests whose handlers took their replies (see _deferred); None while none.
        self._deferred: dict[Envelope, DeferredReply] | None = None
        # The serial loop's scope, which askers cancel (see module doc). With
        # no nursery, it is also the incarnation's kill switch.
        self._loop_scope: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        # The task running on_start and, for a serial actor, the receive loop.
        self.task: Task | None = None
        # The workers of a concurrent incarnation (None for serial actors).
        self.pool: Pool | None = None
        # The dormant instance (it has no task; see _dormant), and where its task runs
        # again: the supervisor's nursery and link of the incarnation (set by start).
        # The cell itself is the mailbox's miss hook while dormant (no object per sleep).
        self._dormant: Actor[M] | None = None
        self._home: trio.Nursery | None = None
        self._link: Link | None = None

    # -- ActorContext --------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def self_ref(self) -> ActorRef[M]:
        return self.ref

    @property
    def restarts(self) -> int:
        return self._restarts

    @restarts.setter
    def restarts(self, value: int) -> None:
        self._restarts = value

    @property
    def nursery(self) -> trio.Nursery:
        if self._nursery is None:
            raise RuntimeError(
                f"actor {self._name!r} has no nursery: spawn it with background_tasks=True "
                "(or set that attribute on its class) to start background tasks"
            )
        return self._nursery

    def set_degraded(self, reason: str | None) -> None:
        self._degraded = reason

    def stop(self) -> None:
        self.request_stop()

    # -- requests from askers --------------------------------------------------

    def abort_ask(self, env: Envelope, raise_cancel: Any) -> Abort:
        """The asker of ``env`` was cancelled (trio abort callback)."""
        if env.state == QUEUED:
            env.state = ABANDONED
            env.asker = None
            self.mailbox.withdraw(env)
            return Abort.SUCCEEDED
        if env.state == DEFERRED:
            return self.abort_deferred(env, raise_cancel)
        # Running: cancel the handler; the asker wakes once it has unwound.
        env.raise_cancel = raise_cancel
        if env.scope is not None:
            env.scope.cancel()
        elif self._current is env and self._loop_scope is not None:
            self._loop_scope.cancel()
        return Abort.FAILED

    def runs_in(self, task: Task) -> bool:
        """Whether ``task`` is this actor's own (it runs on_start or handlers)."""
        pool = self.pool
        return task is self.task or (pool is not None and task in pool.tasks)

    def blocked_on(self) -> None:
        """An actor's task never waits on a supervisor's behalf."""
        return None

    # -- Node: life cycle, driven by the supervisor ----------------------------

    def request_stop(self) -> None:
        if self.stop_deadline is None:
            self.stop_deadline = trio.current_time() + self.shutdown
        if self._dormant is not None:
            self()  # a dormant incarnation needs its task to stop
        self.mailbox.wake()
        if self.pool is not None:
            self.pool.wake_host()

    def interrupt_with(self, error: BaseException) -> None:
        self.interrupt = error

    def kill(self) -> None:
        self._killed = True
        self.request_stop()
        scope = self._nursery.cancel_scope if self._nursery is not None else self._loop_scope
        if scope is not None:
            scope.cancel()

    def close(self) -> None:
        """Stop for good: queued asks fail, queued tells become dead letters."""
        self.state = State.STOPPED
        self.runtime.unregister(self)
        self._home = self._link = None
        for env in self.mailbox.close():
            if env.state != QUEUED:
                continue
            self.runtime.dead_letters.publish(self._name, env.msg, "stopped")
            if env.awaited:
                env.complete(outcome.Error(ActorStopped(self._name)))

    def park(self, until: float, cause: str) -> None:
        """Refuse messages until ``until`` (its supervisor isolates it, see _isolation):
        queued asks fail with :class:`ActorParked`, queued tells become dead letters."""
        self.state = State.PARKED
        self._degraded = f"parked (keeps crashing: {cause})"
        retry_in = until - trio.current_time()
        for env in self.mailbox.suspend(until, cause):
            if env.state != QUEUED:
                continue
            self.runtime.dead_letters.publish(self._name, env.msg, "parked")
            if env.awaited:
                env.complete(outcome.Error(ActorParked(self._name, retry_in, cause)))

    def start(self, nursery: trio.Nursery, link: Link) -> None:
        """Start one incarnation as a task in ``nursery``; it reports to ``link``.

        The factory runs here, so its error is raised to the supervisor as a
        start failure. A parked mailbox accepts messages again.
        """
        self.mailbox.resume()
        self.stop_deadline = None
        self._killed = False
        self.interrupt = None
        self._degraded = None
        self.state = State.STARTING
        self._leave_dormant()  # if a cancelled supervisor left it dormant
        self._home, self._link = nursery, link
        actor = self.factory()
        actor.ctx = self
        self.accepts = accepted(type(actor))
        limit = self._limit(actor)
        background = self._options[1] if self._options is not None else None
        if background is None:
            background = actor.background_tasks
        if limit > 1 or background:
            nursery.start_soon(self.run_hosted, actor, link, limit, nursery, name=self._name)
        else:
            nursery.start_soon(self._serve_serial, actor, link, True, name=self._name)

    def _limit(self, actor: Actor[M]) -> int:
        """Requests the incarnation serves at once: the spawn option, else the class's."""
        limit = self._options[0] if self._options is not None else None
        return actor.max_concurrency if limit is None else limit

    async def run_hosted(
        self, actor: Actor[M], link: Link, limit: int, home: trio.Nursery, woken: bool = False
    ) -> None:
        """An incarnation with its own nursery (concurrent or background tasks), in
        ``home`` (its supervisor's nursery); ``woken`` when a dormant one runs again."""
        self.task = current_task()
        reason: BaseException | None = None
        orphans: list[Envelope] = []
        sleep = False
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                if not woken:
                    await actor.on_start()
                    self._started(link)
                if limit > 1:
                    # The incarnation's task is the first worker (one frame below this one).
                    pool = self.pool = Pool(self, actor, nursery, limit, orphans)
                    pool.may_sleep = may_sleep(actor)
                    self.mailbox.on_miss(pool)
                    pool.catch_up()
                    sleep = await work(self, pool, True)
                    if not sleep:
                        await pool.drain()  # a graceful stop lets running requests finish
                else:
                    await self._serve_serial(actor, link, False)
                nursery.cancel_scope.cancel()  # background tasks end with us
        except BaseException as exc:
            reason = exc if is_cancellation(exc) else unwrap_group(exc)
        self._nursery = None
        if self.pool is not None:
            self.mailbox.on_miss(None)
            self.pool = None
        if sleep and reason is None and self.stop_deadline is None:
            # Dormant: no task until a message (or a stop) arrives, see _dormant.
            self.task = None
            self._dormant = actor
            self.mailbox.on_miss(self)
            if not self.mailbox.empty:
                self()  # arrived while the nursery closed
            return
        await self._finish(actor, link, reason, orphans)

    def _leave_dormant(self) -> Actor[M] | None:
        """End the dormant state: the sleeping instance, or None if there was none."""
        actor = self._dormant
        if actor is not None:
            self._dormant = None
            self.mailbox.on_miss(None)
        return actor

    def __call__(self) -> None:
        """The mailbox's miss hook while dormant: a message or a stop request arrived,
        so start the incarnation's task again (once)."""
        actor = self._leave_dormant()
        if actor is None:
            return
        home, link = self._home, self._link
        assert home is not None and link is not None
        limit = self._limit(actor)
        # The supervisor's nursery may be gone (cancelled from outside): then what is
        # queued waits for the next incarnation, or fails when the cell is closed.
        with contextlib.suppress(RuntimeError):
            home.start_soon(self.run_hosted, actor, link, limit, home, True, name=self._name)

    def _started(self, link: Link) -> None:
        self.state = State.RUNNING
        link.started()

    # -- serving ---------------------------------------------------------------

    async def _serve_serial(self, actor: Actor[M], link: Link, own_life: bool) -> None:
        """The serial receive loop; with ``own_life`` also start and finish.

        With ``own_life`` this is the task's root coroutine, which keeps an
        idle actor one frame deep (see the module doc on memory), and
        ``on_start`` runs inside the loop's first scope, the incarnation's
        kill switch from the start.
        """
        reason: BaseException | None = None
        try:
            self.task = current_task()
            expected = actor.expected_errors
            mailbox = self.mailbox
            while self.stop_deadline is None or self.state is State.STARTING:
                with trio.CancelScope() as scope:
                    self._loop_scope = scope
                    if own_life and self.state is State.STARTING:
                        await self._start_serial(actor, link)
                    burst = 0
                    while self.stop_deadline is None:
                        env = mailbox.get_nowait()
                        if env is None:
                            burst = 0
                            await wait_task_rescheduled(mailbox.park())
                            continue
                        env.state = RUNNING
                        self._current = env
                        # Inlined (a helper coroutine would cost a frame on every message).
                        try:
                            result = await actor.handle(env.msg)
                            if env.sink is not None:
                                await self.pump(env, result)
                                result = None
                        except BaseException as exc:
                            if env.state == DEFERRED:
                                self.undefer(env)  # the error answers it
                            self.fail(env, exc, expected)
                        else:
                            if env.state != DEFERRED:
                                self.reply(env, result)
                        # Hold nothing of this request while idle.
                        self._current = env = result = None
                        if scope.cancel_called:
                            break  # an asker cancelled its request: take a fresh scope
                        burst += 1
                        if burst >= _BURST:
                            burst = 0
                            await trio.lowlevel.cancel_shielded_checkpoint()
                if self.state is State.STARTING:  # the kill's Cancelled, absorbed
                    raise ActorStopped(self._name, "was killed while starting")
                self._current = None  # the scope caught an asker's cancellation
        except BaseException as exc:
            if not own_life:
                raise
            reason = exc if is_cancellation(exc) else unwrap_group(exc)
        if own_life:
            await self._finish(actor, link, reason)

    async def _start_serial(self, actor: Actor[M], link: Link) -> None:
        """Run ``on_start`` (in a frame of its own: the idle loop's stays small)."""
        await actor.on_start()
        self._started(link)

    # -- introspection ---------------------------------------------------------

    def snapshot(self, parent: str | None, into: list[ActorInfo]) -> None:
        pool = self.pool
        in_flight = pool.in_flight if pool is not None else int(self._current is not None)
        in_flight += len(self._deferred or ())
        into.append(
            ActorInfo(
                name=self._name,
                kind="actor",
                parent=parent,
                state=self.state,
                mailbox_depth=len(self.mailbox),
                mailbox_capacity=self.mailbox.capacity,
                restarts=self._restarts,
                in_flight=in_flight,
                degraded=self._degraded,
                dormant=self._dormant is not None,
            )
        )
