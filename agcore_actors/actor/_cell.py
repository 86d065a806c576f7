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
same scope is the kill switch of the incarnation.

Memory design: an idle serial actor is one task parked in
:meth:`_serve_serial` (its root coroutine, one frame) plus this cell, its
mailbox, ref and one cancel scope.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Callable
from typing import Any, Generic, TypeVar

import outcome
import trio
from trio.lowlevel import Abort, wait_task_rescheduled

from ._accept import message_types
from ._actor import Actor, ActorContext
from ._cancel import is_cancellation, unwrap_group
from ._codec import declared_type, roundtrip
from ._errors import ActorCrashed, ActorStopped, UnencodableMessage
from ._mailbox import ABANDONED, DONE, QUEUED, RUNNING, Envelope, Mailbox
from ._message import Request, StreamRequest
from ._node import ActorInfo, Link, State
from ._ref import ActorRef
from ._runtime import Runtime, log

M = TypeVar("M")

#: Messages a serial actor handles back to back before it lets others run.
_BURST = 64


class Cell(ActorContext[M], Generic[M]):
    """Mailbox, ref and life cycle of one actor across its incarnations."""

    __slots__ = (
        "_background_tasks",
        "_current",
        "_interrupt",
        "_killed",
        "_loop_scope",
        "_max_concurrency",
        "_name",
        "_nursery",
        "_restarts",
        "_scope",
        "_slot_waiter",
        "_stop_requested",
        "accepts",
        "factory",
        "in_flight",
        "mailbox",
        "ref",
        "runtime",
        "shutdown",
        "state",
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
        # Spawn options; None: the actor class's own attribute decides.
        self._max_concurrency = max_concurrency
        self._background_tasks = background_tasks
        # The message classes a send must match (None: unchecked); set per
        # incarnation from the instance's class, see _accept.
        self.accepts: tuple[type, ...] | None = None
        self.ref: ActorRef[M] = ActorRef(self)
        self.state = State.STARTING
        self._restarts = 0
        self.in_flight = 0
        self._stop_requested = False
        self._killed = False
        self._interrupt: BaseException | None = None
        # The running request of a serial actor.
        self._current: Envelope | None = None
        # The incarnation's kill switch: the serial loop's scope, or the
        # nursery's scope for actors that have a nursery.
        self._scope: trio.CancelScope | None = None
        # The serial loop's scope, which askers cancel (see module doc).
        self._loop_scope: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        # Concurrent actors: the loop parks here while every slot is busy.
        self._slot_waiter: trio.lowlevel.Task | None = None

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

    def stop(self) -> None:
        self.request_stop()

    # -- requests from askers --------------------------------------------------

    def abort_ask(self, env: Envelope, raise_cancel: Any) -> Abort:
        """The asker of ``env`` was cancelled (trio abort callback)."""
        if env.state == QUEUED:
            env.state = ABANDONED
            env.asker = None
            return Abort.SUCCEEDED
        # Running: cancel the handler; the asker wakes once it has unwound.
        env.raise_cancel = raise_cancel
        if env.scope is not None:
            env.scope.cancel()
        elif self._current is env and self._loop_scope is not None:
            self._loop_scope.cancel()
        # else: a concurrent request not yet started; it checks raise_cancel.
        return Abort.FAILED

    # -- Node: life cycle, driven by the supervisor ----------------------------

    def request_stop(self) -> None:
        self._stop_requested = True
        self.mailbox.wake()
        self._wake_slot_waiter()

    def interrupt_with(self, error: BaseException) -> None:
        self._interrupt = error

    def kill(self) -> None:
        self._killed = True
        self.request_stop()
        if self._scope is not None:
            self._scope.cancel()

    def close(self) -> None:
        """Stop for good: queued asks fail, queued tells become dead letters."""
        self.state = State.STOPPED
        self.runtime.unregister(self)
        for env in self.mailbox.close():
            if env.state != QUEUED:
                continue
            self.runtime.dead_letters.publish(self._name, env.msg, "stopped")
            if env.awaited:
                env.complete(outcome.Error(ActorStopped(self._name)))

    def start(self, nursery: trio.Nursery, link: Link) -> None:
        """Start one incarnation as a task in ``nursery``; it reports to ``link``.

        The factory runs here, so its error is raised to the supervisor as a
        start failure.
        """
        self._stop_requested = self._killed = False
        self._interrupt = None
        self.state = State.STARTING
        actor = self.factory()
        actor.ctx = self
        self.accepts = message_types(type(actor))
        limit = self._max_concurrency
        if limit is None:
            limit = actor.max_concurrency
        background = self._background_tasks
        if background is None:
            background = actor.background_tasks
        if limit > 1 or background:
            nursery.start_soon(self._run_hosted, actor, link, limit, name=self._name)
        else:
            nursery.start_soon(self._serve_serial, actor, link, True, name=self._name)

    async def _run_hosted(self, actor: Actor[M], link: Link, limit: int) -> None:
        """An incarnation with its own nursery (concurrent or background tasks)."""
        reason: BaseException | None = None
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._scope = nursery.cancel_scope
                await actor.on_start()
                self._started(link)
                if limit > 1:
                    await self._serve_concurrent(actor, nursery, limit)
                else:
                    await self._serve_serial(actor, link, False)
                nursery.cancel_scope.cancel()  # background tasks end with us
        except BaseException as exc:
            reason = exc if is_cancellation(exc) else unwrap_group(exc)
        self._nursery = None
        await self._finish(actor, link, reason)

    def _started(self, link: Link) -> None:
        self.state = State.RUNNING
        link.started()

    async def _finish(self, actor: Actor[M], link: Link, reason: BaseException | None) -> None:
        """Answer a request left unanswered, run ``on_stop``, report the exit,
        re-raise a cancellation."""
        env, self._current = self._current, None
        if env is not None and env.state != DONE:  # a bug between handling and reply
            env.complete(outcome.Error(ActorCrashed(self._name, reason)))
        if reason is None and self._killed:
            # The kill's Cancelled was absorbed by our own scope; on_stop must
            # still learn that this was no graceful stop.
            reason = ActorStopped(self._name, "was killed when its shutdown grace ran out")
        self._scope = self._loop_scope = None
        self.state = State.STOPPING
        deadline = trio.current_time() + self.shutdown if math.isfinite(self.shutdown) else math.inf
        with trio.CancelScope(shield=True, deadline=deadline):
            try:
                await actor.on_stop(reason)
            except Exception:
                log.exception("on_stop of actor %r failed", self._name)
        link.exited(reason)
        if reason is not None and is_cancellation(reason):
            raise reason

    # -- serving ---------------------------------------------------------------

    async def _serve_serial(self, actor: Actor[M], link: Link, own_life: bool) -> None:
        """The serial receive loop; with ``own_life`` also start and finish.

        With ``own_life`` this is the task's root coroutine, which keeps an
        idle actor one frame deep (see the module doc on memory).
        """
        reason: BaseException | None = None
        try:
            if own_life:
                await actor.on_start()
                self._started(link)
            expected = actor.expected_errors
            mailbox = self.mailbox
            while not self._stop_requested:
                with trio.CancelScope() as scope:
                    self._loop_scope = scope
                    if own_life:
                        self._scope = scope
                    burst = 0
                    while not self._stop_requested:
                        env = mailbox.get_nowait()
                        if env is None:
                            burst = 0
                            await wait_task_rescheduled(mailbox.park())
                            continue
                        if env.state != QUEUED:
                            continue
                        env.state = RUNNING
                        self._current = env
                        # Inlined (``_run_request`` has the same steps): a helper
                        # coroutine would cost a frame on every message here.
                        try:
                            result = await actor.handle(env.msg)
                            if env.sink is not None:
                                await self._pump(env, result)
                                result = None
                        except BaseException as exc:
                            self._failed(env, exc, expected)
                        else:
                            self._reply(env, result)
                        self._current = None
                        if scope.cancel_called:
                            break  # an asker cancelled its request: take a fresh scope
                        burst += 1
                        if burst >= _BURST:
                            burst = 0
                            await trio.lowlevel.cancel_shielded_checkpoint()
                self._current = None  # the scope caught an asker's cancellation
        except BaseException as exc:
            if not own_life:
                raise
            reason = exc if is_cancellation(exc) else unwrap_group(exc)
        if own_life:
            await self._finish(actor, link, reason)

    async def _serve_concurrent(self, actor: Actor[M], nursery: trio.Nursery, limit: int) -> None:
        expected = actor.expected_errors
        mailbox = self.mailbox
        while not self._stop_requested:
            if self.in_flight >= limit:
                await self._wait_for_slot()
                continue
            env = mailbox.get_nowait()
            if env is None:
                await wait_task_rescheduled(mailbox.park())
                continue
            if env.state != QUEUED:
                continue
            env.state = RUNNING
            self.in_flight += 1
            nursery.start_soon(self._run_request, actor, env, expected)
        while self.in_flight:  # a graceful stop lets running requests finish
            await self._wait_for_slot()

    async def _run_request(
        self, actor: Actor[M], env: Envelope, expected: tuple[type[Exception], ...]
    ) -> None:
        try:
            with trio.CancelScope() as scope:
                env.scope = scope
                if env.raise_cancel is not None:
                    scope.cancel()
                try:
                    result = await actor.handle(env.msg)
                    if env.sink is not None:
                        await self._pump(env, result)
                        result = None
                except BaseException as exc:
                    self._failed(env, exc, expected)
                else:
                    self._reply(env, result)
        finally:
            if env.state != DONE:  # a bug between handling and reply
                env.complete(outcome.Error(ActorCrashed(self._name)))
            self.in_flight -= 1
            self._wake_slot_waiter()

    async def _wait_for_slot(self) -> None:
        self._slot_waiter = trio.lowlevel.current_task()

        def abort(_: Any) -> Abort:
            self._slot_waiter = None
            return Abort.SUCCEEDED

        await wait_task_rescheduled(abort)

    def _wake_slot_waiter(self) -> None:
        waiter = self._slot_waiter
        if waiter is not None:
            self._slot_waiter = None
            trio.lowlevel.reschedule(waiter)

    # -- completing requests ---------------------------------------------------

    async def _pump(self, env: Envelope, events: Any) -> None:
        """Forward a stream handler's events to the reader, with back-pressure.

        Runs inside the request, so cancelling the request (the reader left)
        cancels the iterator, which is always closed before this returns.
        """
        if not isinstance(events, AsyncIterator):
            raise TypeError(
                f"the handler of stream request {type(env.msg).__name__} returned "
                f"{type(events).__name__}, not an async iterator"
            )
        sink = env.sink
        assert sink is not None
        strict = self.runtime.strict
        event_type = declared_type(type(env.msg), StreamRequest) if strict else None
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                if strict:
                    event = roundtrip(event, self._name, event_type)
                try:
                    await sink.send(event)
                except trio.BrokenResourceError:
                    return  # the reader left; it cancels us, or already has

    def _reply(self, env: Envelope, result: Any) -> None:
        if not env.awaited:
            return  # a tell
        if self.runtime.strict:
            try:
                result = roundtrip(result, self._name, declared_type(type(env.msg), Request))
            except UnencodableMessage as exc:
                env.complete(outcome.Error(exc))
                return
        if not env.complete(outcome.Value(result)) and env.sink is None:
            self.runtime.dead_letters.publish(self._name, result, "late_reply")

    def _failed(
        self, env: Envelope, exc: BaseException, expected: tuple[type[Exception], ...]
    ) -> None:
        """Complete ``env`` after its handler raised; re-raise unless recoverable.

        An asker that was cancelled gets its own Cancelled whatever happened
        (``Envelope.complete`` sees to that).
        """
        if is_cancellation(exc):
            # Cut short by the asker, or from outside: a stop, a restart, or a
            # sibling's crash.
            env.complete(outcome.Error(self._interrupt or ActorStopped(self._name)))
            raise exc
        if isinstance(exc, (*expected, UnencodableMessage)):
            # An event of a stream that cannot cross the boundary ends that
            # stream, like an unencodable reply ends its ask: not a crash.
            if not env.awaited:
                log.warning("actor %r: told message %s failed: %r", self._name, env.msg, exc)
            env.complete(outcome.Error(exc))
            return
        exc.add_note(f"raised in actor {self._name!r} handling {type(env.msg).__name__}")
        if self._interrupt is None:
            self._interrupt = ActorCrashed(self._name, exc)
        env.complete(outcome.Error(exc))
        raise exc

    # -- introspection ---------------------------------------------------------

    def snapshot(self, parent: str | None, into: list[ActorInfo]) -> None:
        in_flight = self.in_flight if self._current is None else 1
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
            )
        )
