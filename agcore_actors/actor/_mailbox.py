"""The bounded mailbox and the envelope that carries one message through it.

The mailbox is built directly on ``trio.lowlevel`` (a deque plus parked
tasks) rather than on memory channels: an ask then costs two task switches
and no channel allocation, which is what keeps the runtime near the floor
measured in DESIGN.md §3.

One mailbox has one receiver (the actor's loop) and any number of senders.
It belongs to the actor's *cell*, not to an actor instance, so it survives
restarts: queued messages wait for the next incarnation.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any, Final, Protocol

import outcome
import trio
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from ._errors import ActorStopped, MailboxFull


class AbortHandler(Protocol):
    def abort_ask(self, env: Envelope, raise_cancel: Any) -> Abort: ...


# Envelope states. Plain ints: compared on the hot path.
QUEUED: Final = 0
RUNNING: Final = 1
DONE: Final = 2
ABANDONED: Final = 3  # the asker was cancelled before the request started


class Envelope:
    """One message in flight, and for an ask, the parked asker waiting on it.

    An envelope is also the trio abort callback of its asker (``__call__``),
    which saves allocating one per ask. For a stream request it carries the
    channel the events go to (``sink``) and, once done, the error that ended
    the stream (``error``).
    """

    __slots__ = ("asker", "cell", "error", "msg", "raise_cancel", "scope", "sink", "state")

    def __init__(self, msg: Any, asker: Task | None, cell: AbortHandler | None = None) -> None:
        self.msg = msg
        self.asker = asker
        self.cell = cell
        self.state = QUEUED
        # Set when the asker was cancelled while the request ran: the asker is
        # then woken with this (a Cancelled) instead of the reply.
        self.raise_cancel: Any = None
        # Per-request cancel scope, only for requests of concurrent actors.
        self.scope: trio.CancelScope | None = None
        self.sink: trio.MemorySendChannel[Any] | None = None
        self.error: BaseException | None = None

    @property
    def awaited(self) -> bool:
        """Someone waits for this request to complete (an asker or a stream)."""
        return self.asker is not None or self.sink is not None

    def __call__(self, raise_cancel: Any) -> Abort:
        assert self.cell is not None
        return self.cell.abort_ask(self, raise_cancel)

    def complete(self, result: outcome.Outcome[Any]) -> bool:
        """Wake the asker with ``result``; returns False if the reply was dropped.

        A reply is dropped (and the asker woken with its Cancelled) when the
        asker was cancelled while the request ran. A stream's channel is
        closed here; an error is kept for the reader to raise.
        """
        self.state = DONE
        sink = self.sink
        if sink is not None:
            if isinstance(result, outcome.Error):
                self.error = result.error
            sink.close()
        asker = self.asker
        if asker is None:
            return True
        self.asker = None
        if self.raise_cancel is not None:
            reschedule(asker, outcome.capture(self.raise_cancel))
            return False
        reschedule(asker, result)
        return True


class Mailbox:
    """Bounded FIFO of envelopes with one receiver and back-pressured senders."""

    # The queue is a list read from ``_head``, and no list at all while the
    # mailbox is empty: an empty deque keeps a 64-slot block and even an empty
    # list costs 56 bytes, and idle actors are the common case in a session
    # host. Allocating a short list per busy spell costs far less than a hop.
    __slots__ = ("_closed", "_head", "_items", "_receiver", "_senders", "capacity", "owner")

    def __init__(self, owner: str, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"mailbox capacity must be at least 1, not {capacity}")
        self.owner = owner
        self.capacity = capacity
        self._items: list[Envelope | None] | None = None
        self._head = 0
        self._receiver: Task | None = None
        self._senders: deque[Task] | None = None  # created on first block
        self._closed = False

    def __len__(self) -> int:
        items = self._items
        return 0 if items is None else len(items) - self._head

    @property
    def closed(self) -> bool:
        return self._closed

    # -- sending ---------------------------------------------------------------

    def put_nowait(self, env: Envelope) -> None:
        """Enqueue or raise :class:`MailboxFull` / :class:`ActorStopped`."""
        if self._closed:
            raise ActorStopped(self.owner)
        items = self._items
        if items is None:
            self._items = [env]
        elif len(items) - self._head >= self.capacity:
            raise MailboxFull(self.owner, self.capacity)
        else:
            items.append(env)
        receiver = self._receiver
        if receiver is not None:
            self._receiver = None
            reschedule(receiver)

    async def put(self, env: Envelope) -> None:
        """Enqueue, waiting while the mailbox is full (back-pressure).

        Cancellation while waiting leaves nothing enqueued.
        """
        while len(self) >= self.capacity and not self._closed:
            senders = self._senders
            if senders is None:
                senders = self._senders = deque()
            task = current_task()
            senders.append(task)

            def abort(_: Any, task: Task = task, senders: deque[Task] = senders) -> Abort:
                with contextlib.suppress(ValueError):  # already woken: nothing to undo
                    senders.remove(task)
                return Abort.SUCCEEDED

            await wait_task_rescheduled(abort)
        self.put_nowait(env)

    # -- receiving -------------------------------------------------------------

    def get_nowait(self) -> Envelope | None:
        """Pop the next envelope, or None if the mailbox is empty."""
        items = self._items
        if items is None:
            return None
        head = self._head
        env = items[head]
        assert env is not None
        head += 1
        if head == len(items):
            self._items = None
            head = 0
        elif head >= 32 and 2 * head >= len(items):
            del items[:head]
            head = 0
        else:
            items[head - 1] = None
        self._head = head
        if self._senders:
            reschedule(self._senders.popleft())
        return env

    def park(self) -> Callable[[Any], Abort]:
        """Register the current task as the parked receiver; return its abort.

        Use as ``await wait_task_rescheduled(mailbox.park())`` when
        :meth:`get_nowait` found nothing. The mailbox is itself the abort
        callback, so parking allocates no frame and no bound method: every
        idle actor sits here.
        """
        self._receiver = current_task()
        return self

    def __call__(self, _raise_cancel: Any) -> Abort:
        """Abort callback of the parked receiver (see :meth:`park`)."""
        self._receiver = None
        return Abort.SUCCEEDED

    async def wait_nonempty(self) -> None:
        """Park the receiver until something arrives, or :meth:`wake` is called.

        Cancel-safe: cancellation takes nothing out of the mailbox.
        """
        if self._items is not None or self._closed:
            await trio.lowlevel.checkpoint()
            return
        await wait_task_rescheduled(self.park())

    def wake(self) -> None:
        """Wake a parked receiver without a message (e.g. a stop was requested)."""
        receiver = self._receiver
        if receiver is not None:
            self._receiver = None
            reschedule(receiver)

    # -- closing ---------------------------------------------------------------

    def close(self) -> list[Envelope]:
        """Refuse further messages; return what was still queued, in order.

        Parked senders wake and raise :class:`ActorStopped`.
        """
        self._closed = True
        items = self._items or []
        queued = [env for env in items[self._head :] if env is not None]
        self._items = None
        self._head = 0
        senders, self._senders = self._senders, None
        for task in senders or ():
            reschedule(task)
        self.wake()
        return queued
