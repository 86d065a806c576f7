"""ActorRef: the handle through which everything talks to an actor.

Every check on a message happens here, in the sender, before anything is
enqueued: a bad message is the sender's error, never the actor's crash.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import trio
from trio.lowlevel import Abort, current_task, wait_task_rescheduled

from ._codec import roundtrip
from ._envelope import QUEUED, RUNNING, Envelope
from ._errors import (
    ActorStopped,
    AskTimeout,
    ForeignThread,
    UnknownMessage,
    WouldDeadlock,
    WrongRequestKind,
)
from ._message import Request, StreamRequest

if TYPE_CHECKING:
    from ._cell import Cell

#: Which thread a call comes from (bound once: it is on every send's path).
_get_ident = threading.get_ident

M = TypeVar("M")
R = TypeVar("R")
E = TypeVar("E")


def _no_cancel() -> None:
    """Stands in for an asker's Cancelled when a reader closes its stream."""


class ActorRef(Generic[M]):
    """Address of one actor; stays valid across the actor's restarts.

    Semantics:

    - ``await tell(msg)`` enqueues and returns; it waits while the mailbox is
      full (back-pressure).
    - ``tell_nowait(msg)`` enqueues or raises :class:`MailboxFull`.
    - ``await ask(msg, timeout=...)`` returns the handler's reply, or raises
      the handler's exception.
    - ``async with stream(msg) as events`` sends a :class:`StreamRequest` and
      iterates the events its handler yields.

    Messages are checked at the sender, before anything is enqueued: a message
    that is not an instance of the actor's declared message type (the ``M`` of
    its ``Actor[M]`` base) raises :class:`UnknownMessage`, and in strict mode one
    that cannot cross a process boundary raises :class:`UnencodableMessage`.
    Every call raises :class:`ActorStopped` once the actor has stopped for good.

    Messages from one sender are handled in the order sent. Cancelling an
    ``ask`` cancels the handler of that request if it has started (the
    cancellation completes once the handler has unwound), or withdraws the
    request if it has not. A reply that arrives after the asker gave up is
    dropped and published as a dead letter.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: Cell[M]) -> None:
        self._cell = cell

    @property
    def name(self) -> str:
        """The actor's name, unique in its system."""
        return self._cell.name

    def __repr__(self) -> str:
        return f"<ActorRef {self._cell.name!r}>"

    async def tell(self, msg: M) -> None:
        """Enqueue ``msg`` for the actor; return once it is in the mailbox.

        Mailbox full: waits for room; senders waiting for room get it in the
        order they started waiting.

        Cancellation: if the caller is cancelled while waiting for room,
        nothing was enqueued. Once enqueued the message is handled even if
        the caller is cancelled afterwards (``tell`` is always a checkpoint).

        Raises:
            UnknownMessage: ``msg`` is not of the actor's message type.
            UnencodableMessage: strict mode, and ``msg`` cannot be encoded.
            ActorStopped: the actor has stopped for good (also while waiting).
            ActorParked: the actor keeps crashing and is parked (also while waiting).
            WouldDeadlock: a serial actor told itself with its mailbox full
                (it would wait for itself); use :meth:`tell_nowait`.
            ForeignThread: awaited outside the system's trio run.
        """
        cell = self._cell
        accepts = cell.accepts
        if accepts is not None and not isinstance(msg, accepts.all):
            raise UnknownMessage(cell.name, msg, accepts.all)
        if _get_ident() != cell.runtime.thread:
            raise ForeignThread(cell.name, "tell")
        if cell.runtime.strict:
            msg = roundtrip(msg, cell.name)
        await trio.lowlevel.checkpoint_if_cancelled()
        env = Envelope(msg, None)
        mailbox = cell.mailbox
        if mailbox.offer(env):
            await trio.lowlevel.cancel_shielded_checkpoint()
        else:
            if current_task() is cell.task and cell.pool is None:
                raise WouldDeadlock(cell.name, "told itself with its mailbox full; use tell_nowait")
            await mailbox.put(env)

    def tell_nowait(self, msg: M) -> None:
        """Enqueue ``msg`` now, or raise; never waits for room.

        Mailbox full: raises :class:`MailboxFull` and enqueues nothing.

        Threads: callable from any thread. From a thread other than the
        system's (a sync tool run with ``trio.to_thread.run_sync``), the call
        is carried out in the system's trio run and returns once it is done
        there, with the same result or error.

        Raises:
            MailboxFull: the mailbox is at capacity.
            UnknownMessage: ``msg`` is not of the actor's message type.
            UnencodableMessage: strict mode, and ``msg`` cannot be encoded.
            ActorStopped: the actor has stopped for good (or the system's run
                has ended).
            ActorParked: the actor keeps crashing and is parked.
        """
        cell = self._cell
        accepts = cell.accepts
        if accepts is not None and not isinstance(msg, accepts.all):
            raise UnknownMessage(cell.name, msg, accepts.all)
        if _get_ident() != cell.runtime.thread:
            self._tell_from_thread(msg)
            return
        if cell.runtime.strict:
            msg = roundtrip(msg, cell.name)
        cell.mailbox.put_nowait(Envelope(msg, None))

    def _tell_from_thread(self, msg: M) -> None:
        token = self._cell.runtime.token
        if token is None:
            raise ActorStopped(self._cell.name, "is not running (its system was never entered)")
        try:
            trio.from_thread.run_sync(self.tell_nowait, msg, trio_token=token)
        except trio.RunFinishedError:
            raise ActorStopped(self._cell.name, "has stopped (its system's run ended)") from None

    async def ask(self, msg: Request[R], *, timeout: float | None = None) -> R:
        """Send the request ``msg`` and return the handler's reply.

        The reply is what the handler returns; in strict mode it is a copy
        decoded into the ``R`` the request declares. ``timeout`` bounds the
        whole ask (waiting for room, for the queue, and for the handler).

        Mailbox full: waits for room, like :meth:`tell`.

        Cancellation: if the request has not started, it is withdrawn and
        never handled; if it is running, its handler is cancelled and the
        cancellation completes once the handler has unwound (a handler that
        shields itself delays it). The same happens on a timeout.

        Raises:
            AskTimeout: no reply within ``timeout`` seconds.
            ActorStopped: the actor stopped for good before or while handling it.
            ActorCrashed: the actor crashed, because of another request, while
                this one ran.
            ActorParked: the actor keeps crashing and is parked: sent then, or
                queued when it was parked (``retry_in`` says when to try again).
            UnknownMessage: ``msg`` is not of the actor's message type.
            UnencodableMessage: strict mode, and ``msg`` or the reply cannot be
                encoded (or the reply is not of the declared type).
            WrongRequestKind: ``msg`` is a :class:`StreamRequest` (use :meth:`stream`).
            WouldDeadlock: a serial actor asked itself.
            ForeignThread: awaited outside the system's trio run.
            Exception: whatever the handler raised, with a note naming the actor.
        """
        if timeout is None:
            return await self._ask(msg)
        with trio.move_on_after(timeout):
            return await self._ask(msg)
        raise AskTimeout(self._cell.name, timeout)

    async def _ask(self, msg: Request[R]) -> R:
        cell = self._cell
        accepts = cell.accepts
        if accepts is None or not isinstance(msg, accepts.asks):
            _check_kind(cell, msg, stream=False)  # the slow path: which error, if any
        if _get_ident() != cell.runtime.thread:
            raise ForeignThread(cell.name, "ask")
        task = current_task()
        if task is cell.task and cell.pool is None:
            raise WouldDeadlock(cell.name, "a serial actor asked itself (it would wait for itself)")
        if cell.runtime.strict:
            msg = roundtrip(msg, cell.name)
        env = Envelope(msg, task, cell)
        mailbox = cell.mailbox
        if not mailbox.offer(env):
            await mailbox.put(env)
        reply: R = await wait_task_rescheduled(env)
        return reply

    @asynccontextmanager
    async def stream(
        self, msg: StreamRequest[E], *, buffer: int = 16
    ) -> AsyncIterator[EventStream[E]]:
        """Send a stream request and read the events its handler yields.

        ``async with ref.stream(msg) as events: async for event in events``.
        At most ``buffer`` events wait unread; then the handler waits too
        (back-pressure). An error that ends the stream (the handler's own, or
        :class:`ActorStopped` / :class:`ActorCrashed`) is raised from the
        iteration.

        Mailbox full: entering the block waits for room, like :meth:`tell`.

        Cancellation: leaving the block before the stream ended, or being
        cancelled, cancels the handler (or withdraws the request if it has not
        started); the exit completes once the handler has unwound, so nothing
        keeps running on the reader's behalf.

        Raises:
            UnknownMessage: ``msg`` is not of the actor's message type.
            UnencodableMessage: strict mode, and ``msg`` or an event cannot be
                encoded.
            ActorStopped: the actor has stopped for good.
            WrongRequestKind: ``msg`` is not a :class:`StreamRequest` (use :meth:`ask`).
            WouldDeadlock: a serial actor streamed from itself.
            ForeignThread: entered outside the system's trio run.
        """
        cell = self._cell
        accepts = cell.accepts
        if accepts is None or not isinstance(msg, accepts.streams):
            _check_kind(cell, msg, stream=True)
        if _get_ident() != cell.runtime.thread:
            raise ForeignThread(cell.name, "stream")
        if current_task() is cell.task and cell.pool is None:
            raise WouldDeadlock(cell.name, "a serial actor streamed from itself")
        if cell.runtime.strict:
            msg = roundtrip(msg, cell.name)
        send, receive = trio.open_memory_channel[E](buffer)
        env = Envelope(msg, None, cell)
        env.sink = send
        mailbox = cell.mailbox
        if not mailbox.offer(env):
            await mailbox.put(env)
        try:
            yield EventStream(receive, env)
        finally:
            receive.close()
            if env.state == QUEUED:
                cell.abort_ask(env, _no_cancel)
            elif env.state == RUNNING and cell.abort_ask(env, _no_cancel) is Abort.FAILED:
                env.asker = current_task()
                await wait_task_rescheduled(env)


def _check_kind(cell: Cell[Any], msg: object, *, stream: bool) -> None:
    """Raise why ``msg`` may not be asked (``stream`` False) or streamed, if it may not."""
    accepts = cell.accepts
    if accepts is not None and not isinstance(msg, accepts.all):
        raise UnknownMessage(cell.name, msg, accepts.all)
    if isinstance(msg, StreamRequest) != stream:
        if stream:
            raise WrongRequestKind(cell.name, msg, "stream", "ask")
        raise WrongRequestKind(cell.name, msg, "ask", "stream")


class EventStream(Generic[E]):
    """The events of one stream request, as an async iterator."""

    __slots__ = ("_env", "_receive")

    def __init__(self, receive: trio.MemoryReceiveChannel[E], env: Envelope) -> None:
        self._receive = receive
        self._env = env

    def __aiter__(self) -> EventStream[E]:
        return self

    async def __anext__(self) -> E:
        # A cancellation point always; a schedule point only when it waits: events the
        # handler already queued are read one after another, without a task switch each.
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                return self._receive.receive_nowait()
            except trio.WouldBlock:
                return await self._receive.receive()
        except trio.EndOfChannel:
            if self._env.error is not None:
                raise self._env.error from None
            raise StopAsyncIteration from None
