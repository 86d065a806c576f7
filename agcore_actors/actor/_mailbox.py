"""The bounded mailbox of an actor (the envelope a message travels in: :mod:`._envelope`).

The mailbox is built directly on ``trio.lowlevel`` (a deque plus parked
tasks) rather than on memory channels: an ask then costs two task switches
and no channel allocation, which is what keeps the runtime near the floor
measured in DESIGN.md §3.

One mailbox has one receiver (the actor's loop) and any number of senders.
It belongs to the actor's *cell*, not to an actor instance, so it survives
restarts: queued messages wait for the next incarnation.

A mailbox can be *parked* until a time (its actor keeps crashing, see
:mod:`._isolation`): it then refuses every message with :class:`ActorParked` until
that time, and accepts them again from then on by itself, with no event needed.
It costs the send path and an idle actor nothing: a parked mailbox refuses through
the same slot and test as a closed one.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from typing import Any

import trio
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from ._envelope import Envelope as Envelope  # re-exported: where tests take it from
from ._errors import ActorParked, ActorStopped, MailboxFull


class _Waiters:
    """What a mailbox needs only once senders block or several receivers park.

    Kept out of the mailbox itself so that an idle serial actor, the common
    case, pays one empty slot for all of it.
    """

    __slots__ = ("receivers", "reserved", "senders")

    def __init__(self) -> None:
        # Blocked senders, first come first served (made on first block).
        self.senders: deque[Task] | None = None
        # Slots freed for woken senders that have not run yet: nobody else may take them.
        self.reserved = 0
        # Receivers parked besides ``Mailbox._receiver`` (workers of a concurrent actor;
        # made when a second one parks: a dormant or one-worker actor never needs it).
        self.receivers: list[Task] | None = None


class Mailbox:
    """Bounded FIFO of envelopes with back-pressured senders.

    A serial actor has one receiver; the workers of a concurrent actor park
    here side by side, each woken by one message.
    """

    # The queue is a list read from ``_head``, and no list at all while the
    # mailbox is empty: an empty deque keeps a 64-slot block and even an empty
    # list costs 56 bytes, and idle actors are the common case in a session
    # host. Allocating a short list per busy spell costs far less than a hop.
    __slots__ = (
        "_closed",
        "_head",
        "_items",
        "_on_miss",
        "_receiver",
        "_waiters",
        "capacity",
        "owner",
    )

    def __init__(self, owner: str, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"mailbox capacity must be at least 1, not {capacity}")
        self.owner = owner
        self.capacity = capacity
        self._items: list[Envelope | None] | None = None
        self._head = 0
        self._receiver: Task | None = None
        self._waiters: _Waiters | None = None  # created on first need
        # Called when a message arrives and no receiver is parked (a concurrent actor
        # starts a worker there, a dormant one its task): its own slot, so that neither
        # needs a _Waiters.
        self._on_miss: Callable[[], None] | None = None
        # False while open; True once stopped for good; while parked, until when and
        # why (the crash that parked it). One slot for both, tested as a truth value:
        # an open mailbox pays nothing for parking (see _refuse).
        self._closed: bool | tuple[float, str] = False

    @property
    def empty(self) -> bool:
        """No message waits (what :meth:`get_nowait` would answer None to)."""
        return self._items is None

    def __len__(self) -> int:
        """Messages waiting (withdrawn ones do not count)."""
        items = self._items
        return 0 if items is None else len(items) - self._head

    @property
    def closed(self) -> bool:
        """Stopped for good (a parked mailbox is not)."""
        return self._closed is True

    def _refuse(self) -> None:
        """A closed or parked mailbox refuses a message: raise why, unless the park
        is over (then it is lifted and the caller goes on)."""
        parked = self._closed
        if parked is True or parked is False:
            raise ActorStopped(self.owner)
        until, cause = parked
        now = trio.current_time()
        if now >= until:
            self.resume()
            return
        raise ActorParked(self.owner, until - now, cause)

    # -- sending ---------------------------------------------------------------

    def offer(self, env: Envelope) -> bool:
        """Enqueue ``env`` if there is room; False if the mailbox is full.

        Raises :class:`ActorStopped` once the mailbox is closed, and
        :class:`ActorParked` while it is parked. A slot freed for a blocked
        sender is that sender's: ``offer`` does not take it.
        """
        if self._closed:
            self._refuse()
        items = self._items
        waiters = self._waiters
        if (
            waiters is not None
            and waiters.reserved
            and len(self) + waiters.reserved >= self.capacity
        ):
            return False
        if items is None:
            self._items = [env]
        elif len(items) - self._head >= self.capacity:
            return False
        else:
            items.append(env)
        receiver = self._receiver
        if receiver is not None:
            if waiters is None:  # inlined _wake_receiver: this is every ask's path
                self._receiver = None
                reschedule(receiver)
            else:
                self._wake_receiver(receiver)
        elif self._on_miss is not None:
            self._on_miss()
        return True

    def put_nowait(self, env: Envelope) -> None:
        """Enqueue or raise :class:`MailboxFull` / :class:`ActorStopped`."""
        if not self.offer(env):
            raise MailboxFull(self.owner, self.capacity)

    async def put(self, env: Envelope) -> None:
        """Enqueue, waiting while the mailbox is full (back-pressure).

        Blocked senders get freed slots in the order they blocked.
        Cancellation while waiting leaves nothing enqueued.
        """
        if self.offer(env):
            return
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = _Waiters()
        task = current_task()
        senders = waiters.senders
        if senders is None:
            senders = waiters.senders = deque()
        senders.append(task)

        def abort(_: Any) -> Abort:
            with contextlib.suppress(ValueError):  # already woken: nothing to undo
                senders.remove(task)
            return Abort.SUCCEEDED

        await wait_task_rescheduled(abort)
        if self._closed:
            self._refuse()
            await self.put(env)  # the park ended before this sender ran: try again
            return
        waiters.reserved -= 1  # the slot kept for us (see _free_slot)
        self._append(env)

    def _append(self, env: Envelope) -> None:
        items = self._items
        if items is None:
            self._items = [env]
        else:
            items.append(env)
        receiver = self._receiver
        if receiver is not None:
            self._wake_receiver(receiver)
        elif self._on_miss is not None:
            self._on_miss()

    def on_miss(self, hook: Callable[[], None] | None) -> None:
        """Call ``hook`` whenever a message arrives while no receiver is parked."""
        self._on_miss = hook

    def wake_one(self) -> None:
        """Wake one parked receiver without a message (it finds the mailbox empty)."""
        if self._receiver is not None:
            self._wake_receiver(self._receiver)

    def _free_slot(self) -> None:
        """A slot was freed: hand it to the first blocked sender, if any."""
        waiters = self._waiters
        if waiters is not None and waiters.senders:
            waiters.reserved += 1
            reschedule(waiters.senders.popleft())

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
        if self._waiters is not None:
            self._free_slot()
        return env

    def withdraw(self, env: Envelope) -> None:
        """Take a queued ``env`` out (its asker gave up); its slot is free at once."""
        items = self._items
        if items is None:
            return
        try:
            index = items.index(env, self._head)
        except ValueError:
            return
        del items[index]
        if self._head == len(items):
            self._items = None
            self._head = 0
        self._free_slot()

    def park(self) -> Callable[[Any], Abort]:
        """Register the current task as the parked receiver; return its abort.

        Use as ``await wait_task_rescheduled(mailbox.park())`` when
        :meth:`get_nowait` found nothing. The mailbox is itself the abort
        callback, so parking allocates no frame and no bound method: every
        idle serial actor sits here.
        """
        self._receiver = current_task()
        return self

    def __call__(self, _raise_cancel: Any) -> Abort:
        """Abort callback of the parked receiver (see :meth:`park`)."""
        self._receiver = None
        return Abort.SUCCEEDED

    def park_worker(self) -> Callable[[Any], Abort]:
        """Park the current task as one of several receivers; return its abort.

        Each message wakes one parked worker; :meth:`wake` wakes them all.
        """
        task = current_task()
        if self._receiver is None:
            self._receiver = task
        else:
            waiters = self._waiters
            if waiters is None:
                waiters = self._waiters = _Waiters()
            if waiters.receivers is None:
                waiters.receivers = [task]
            else:
                waiters.receivers.append(task)

        def abort(_: Any) -> Abort:
            if self._receiver is task:
                self._next_receiver()
            elif self._waiters is not None and self._waiters.receivers:
                with contextlib.suppress(ValueError):
                    self._waiters.receivers.remove(task)
            return Abort.SUCCEEDED

        return abort

    @property
    def parked(self) -> int:
        """How many receivers are parked."""
        if self._receiver is None:
            return 0
        waiters = self._waiters
        return 1 + (0 if waiters is None or waiters.receivers is None else len(waiters.receivers))

    def _next_receiver(self) -> None:
        waiters = self._waiters
        self._receiver = (
            waiters.receivers.pop() if waiters is not None and waiters.receivers else None
        )

    def _wake_receiver(self, receiver: Task) -> None:
        if self._waiters is None:
            self._receiver = None
        else:
            self._next_receiver()
        reschedule(receiver)

    def wake(self) -> None:
        """Wake every parked receiver without a message (e.g. a stop was requested)."""
        while self._receiver is not None:
            self._wake_receiver(self._receiver)

    # -- closing ---------------------------------------------------------------

    def close(self) -> list[Envelope]:
        """Refuse further messages; return what was still queued, in order.

        Blocked senders wake and raise :class:`ActorStopped`.
        """
        return self._shut(True)

    def suspend(self, until: float, cause: str) -> list[Envelope]:
        """Refuse messages with :class:`ActorParked` until ``until`` (trio time);
        return what was still queued, in order. Blocked senders wake and raise it."""
        return self._shut((until, cause))

    def resume(self) -> None:
        """Accept messages again (a closed mailbox stays closed)."""
        if self._closed is not True:
            self._closed = False

    def _shut(self, why: bool | tuple[float, str]) -> list[Envelope]:
        self._closed = why
        items = self._items or []
        queued = [env for env in items[self._head :] if env is not None]
        self._items = None
        self._head = 0
        waiters = self._waiters
        if waiters is not None:
            senders = list(waiters.senders or ())
            waiters.senders = None
            waiters.reserved = 0
            for task in senders:
                reschedule(task)
        self.wake()
        return queued
