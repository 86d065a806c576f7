"""ActorRef: the handle through which everything talks to an actor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Generic, TypeVar

import trio
from trio.lowlevel import Abort, current_task, wait_task_rescheduled

from ._codec import roundtrip
from ._errors import AskTimeout
from ._mailbox import QUEUED, RUNNING, Envelope
from ._message import Request, StreamRequest

if TYPE_CHECKING:
    from ._cell import Cell

M = TypeVar("M")
R = TypeVar("R")
E = TypeVar("E")


def _no_cancel() -> None:
    """Stands in for an asker's Cancelled when a reader closes its stream."""


class ActorRef(Generic[M]):
    """Address of one actor; stays valid across the actor's restarts.

    - ``await tell(msg)`` enqueues and returns; it waits while the mailbox
      is full (back-pressure).
    - ``tell_nowait(msg)`` raises :class:`MailboxFull` instead of waiting.
    - ``await ask(msg, timeout=...)`` returns the handler's reply, or raises
      the handler's exception, :class:`AskTimeout` or :class:`ActorStopped`.

    - ``async with stream(msg) as events`` sends a :class:`StreamRequest`
      and iterates the events its handler yields (see :meth:`stream`).

    All of them raise :class:`ActorStopped` once the actor has stopped for
    good, and :class:`UnencodableMessage` in strict mode for a message that
    cannot cross a process boundary.

    Cancelling an ``ask`` cancels the handler of that request if it has
    started (the cancellation completes once the handler has unwound), or
    withdraws the request if it has not. A reply that arrives after the
    asker gave up is dropped (and published as a dead letter).
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: Cell[M]) -> None:
        self._cell = cell

    @property
    def name(self) -> str:
        return self._cell.name

    def __repr__(self) -> str:
        return f"<ActorRef {self._cell.name!r}>"

    async def tell(self, msg: M) -> None:
        cell = self._cell
        if cell.runtime.strict:
            msg = roundtrip(msg, cell.name)
        await trio.lowlevel.checkpoint_if_cancelled()
        mailbox = cell.mailbox
        if len(mailbox) < mailbox.capacity:
            mailbox.put_nowait(Envelope(msg, None))
            await trio.lowlevel.cancel_shielded_checkpoint()
        else:
            await mailbox.put(Envelope(msg, None))

    def tell_nowait(self, msg: M) -> None:
        cell = self._cell
        if cell.runtime.strict:
            msg = roundtrip(msg, cell.name)
        cell.mailbox.put_nowait(Envelope(msg, None))

    async def ask(self, msg: Request[R], *, timeout: float | None = None) -> R:
        if timeout is None:
            return await self._ask(msg)
        with trio.move_on_after(timeout):
            return await self._ask(msg)
        raise AskTimeout(self._cell.name, timeout)

    async def _ask(self, msg: Request[R]) -> R:
        cell = self._cell
        if cell.runtime.strict:
            msg = roundtrip(msg, cell.name)
        env = Envelope(msg, current_task(), cell)
        mailbox = cell.mailbox
        if len(mailbox) < mailbox.capacity:
            mailbox.put_nowait(env)
        else:
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
        (back-pressure). An error that ends the stream is raised from the
        iteration. Leaving the block before the stream ended, or being
        cancelled, cancels the handler; the exit completes once it has
        unwound, so nothing keeps running on the reader's behalf.
        """
        cell = self._cell
        if cell.runtime.strict:
            msg = roundtrip(msg, cell.name)
        send, receive = trio.open_memory_channel[E](buffer)
        env = Envelope(msg, None, cell)
        env.sink = send
        mailbox = cell.mailbox
        if len(mailbox) < mailbox.capacity:
            mailbox.put_nowait(env)
        else:
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


class EventStream(Generic[E]):
    """The events of one stream request, as an async iterator."""

    __slots__ = ("_env", "_receive")

    def __init__(self, receive: trio.MemoryReceiveChannel[E], env: Envelope) -> None:
        self._receive = receive
        self._env = env

    def __aiter__(self) -> EventStream[E]:
        return self

    async def __anext__(self) -> E:
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            if self._env.error is not None:
                raise self._env.error from None
            raise StopAsyncIteration from None
