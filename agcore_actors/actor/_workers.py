"""The workers of a concurrent actor: serial loops sharing one mailbox.

A concurrent actor (``max_concurrency`` N > 1) runs each request in one of at
most N worker tasks. A worker is the serial loop again: it takes a message,
handles it inside its cancel scope (which an asker's cancellation cancels, as
for a serial actor), and takes the next. No task is made per request, and a
cancel scope only per busy spell: a worker enters one when it finds work and
leaves it when the mailbox is empty, so a parked worker holds none; except that
the first worker of an actor with ``idle_scope`` (the default) parks inside its
scope, as a serial actor does, and enters a fresh one only after an asker's
cancellation (a scope costs about a third of an ask; see ``Actor.idle_scope``). The
incarnation's own task is the first worker and always listens when idle;
another worker is started when a message arrives while no worker listens
(all are busy), up to N. An extra worker that finds the mailbox empty while
other requests still run lingers, parked, so the next message of a burst wakes
it instead of starting a task; once no request runs, the extra workers end
(the last one to go idle, or the first worker as it parks, wakes them to). So
an idle concurrent actor is one parked task, a busy one at most N, and the
mailbox is not read while N requests run (back-pressure).

A crash ends the incarnation: no worker takes another message once the
incarnation's nursery is cancelled, so queued requests stay queued for the
next incarnation, as for serial actors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio
from trio.lowlevel import Abort, Task, current_task, reschedule, wait_task_rescheduled

from ._envelope import RUNNING

if TYPE_CHECKING:
    from ._actor import Actor
    from ._cell import Cell
    from ._envelope import Envelope
    from ._mailbox import Mailbox


class Pool:
    """The workers of one concurrent incarnation."""

    __slots__ = (
        "actor",
        "cell",
        "draining",
        "expected",
        "host_idle",
        "in_flight",
        "limit",
        "may_sleep",
        "nursery",
        "orphans",
        "tasks",
        "workers",
    )

    def __init__(
        self,
        cell: Cell[Any],
        actor: Actor[Any],
        nursery: trio.Nursery,
        limit: int,
        orphans: list[Envelope],
    ) -> None:
        self.cell = cell
        self.actor = actor
        self.expected = actor.expected_errors
        self.nursery = nursery
        self.limit = limit
        self.orphans = orphans
        # The worker tasks (at most ``limit``: a list is small and fast enough).
        self.tasks: list[Task] = []
        self.workers = 1  # the incarnation's own task
        self.in_flight = 0  # requests running now
        # The incarnation's task is parked: an extra worker with nothing to do ends.
        self.host_idle = False
        # The incarnation's task, waiting for the running requests of a stop.
        self.draining: Task | None = None
        # Idle with nothing left in the nursery for this many seconds: end the task,
        # dormant (see _dormant); None: never.
        self.may_sleep: float | None = None

    def __call__(self) -> None:
        """A message arrived and every worker is busy: start another, if the limit allows.

        The pool is itself the mailbox's miss hook (no closure per actor).
        """
        if self.workers < self.limit and not self.nursery.cancel_scope.cancel_called:
            self.workers += 1
            self.nursery.start_soon(work, self.cell, self, False, name=self.cell.name)

    def catch_up(self) -> None:
        """Start a worker for each message that was queued before the pool listened (it
        arrived while the actor was dormant or starting, when no miss hook ran), beyond
        the one the first worker takes; up to the limit."""
        for _ in range(len(self.cell.mailbox) - 1):
            self()

    async def drain(self) -> None:
        """After the first worker stops on a graceful stop: wait for the running requests."""
        while self.in_flight:
            self.draining = current_task()
            await wait_task_rescheduled(self.abort_drain)

    def abort_drain(self, _: Any) -> trio.lowlevel.Abort:
        self.draining = None
        return trio.lowlevel.Abort.SUCCEEDED

    def wake_host(self) -> None:
        task, self.draining = self.draining, None
        if task is not None:
            reschedule(task)


def _host_parks(pool: Pool, mailbox: Mailbox) -> Callable[[Any], Abort]:
    """Ready the first worker (it never ends idle) to wait for the next message; the
    wait's abort callback. (No coroutine of its own: an idle actor keeps no frame.)"""
    if not pool.in_flight and mailbox.parked:
        mailbox.wake()  # the lingering extra workers: let them end
    pool.host_idle = True
    return mailbox.park_worker()


async def _nap(pool: Pool, mailbox: Mailbox, seconds: float) -> bool:
    """Park the first worker of a hibernating actor for up to ``seconds``; whether
    the time ran out (nothing woke it: it may go dormant)."""
    with trio.CancelScope(deadline=trio.current_time() + seconds) as nap:
        try:
            await wait_task_rescheduled(_host_parks(pool, mailbox))
        finally:
            pool.host_idle = False
    return nap.cancelled_caught


async def work(cell: Cell[Any], pool: Pool, host: bool) -> bool:
    """One worker's loop; ``host`` for the incarnation's own task (it never ends idle,
    unless the actor may go dormant: then it returns True, see _dormant)."""
    task = current_task()
    pool.tasks.append(task)
    mailbox = cell.mailbox
    handle = pool.actor.handle
    expected = pool.expected
    dying = pool.nursery.cancel_scope
    # A hibernating actor parks in the outer loop, where it may go dormant instead.
    after = pool.may_sleep
    keep = host and pool.actor.idle_scope and after is None
    rested = False  # napped the whole while, idle: it may go dormant
    napping = False
    napper = host and after is not None and after > 0
    try:
        while cell.stop_deadline is None:
            if mailbox.empty:
                # While other requests run, an idle worker lingers, parked: the next
                # message of a burst wakes it instead of starting a new task. Once
                # none runs, the extra workers end and only the first one listens.
                if not host:
                    if not pool.in_flight and pool.host_idle:
                        mailbox.wake()  # the other lingering workers end too
                        return False
                    await wait_task_rescheduled(mailbox.park_worker())
                    continue
                if not pool.in_flight and after is not None and not pool.nursery.child_tasks:
                    if mailbox.parked:
                        mailbox.wake()  # the lingering extra workers: let them end
                    if rested or after <= 0:
                        return True  # dormant: no checkpoint since the mailbox was empty
                    # Stay awake a while: a burst of messages pays one wake-up.
                    rested = await _nap(pool, mailbox, after)
                    continue
                # Parked outside any scope of ours (see Actor.idle_scope).
                try:
                    await wait_task_rescheduled(_host_parks(pool, mailbox))
                finally:
                    pool.host_idle = False
                continue
            rested = False
            if dying.cancel_called:
                # A crash (or a kill) is ending the incarnation: leave what is queued
                # to the next one.
                await trio.lowlevel.checkpoint()
            with trio.CancelScope() as scope:
                env = mailbox.get_nowait()
                while env is not None:
                    env.state = RUNNING
                    env.scope = scope
                    pool.in_flight += 1
                    try:
                        result = await handle(env.msg)
                        if env.sink is not None:
                            await cell.pump(env, result)
                            result = None
                    except BaseException as exc:
                        cell.fail(env, exc, expected, pool.orphans)
                    else:
                        cell.reply(env, result)
                    finally:
                        pool.in_flight -= 1
                    env = result = None  # hold nothing of this request while idle
                    if scope.cancel_called:
                        break  # an asker cancelled its request: take a fresh scope
                    if cell.stop_deadline is not None:
                        break
                    if mailbox.empty:
                        if napper and not pool.in_flight and not pool.nursery.child_tasks:
                            # Nap in this scope, its deadline the nap's (a scope costs
                            # more than an ask): run out, it goes dormant (below).
                            napping = True
                            scope.deadline = trio.current_time() + after
                            try:
                                await wait_task_rescheduled(_host_parks(pool, mailbox))
                            finally:
                                pool.host_idle = False
                            napping = False
                            scope.deadline = math.inf
                            if scope.cancel_called or cell.stop_deadline is not None:
                                break
                            if mailbox.empty:
                                break
                        elif not keep:
                            break  # idle: park without the scope
                        else:
                            try:  # parked in the scope (see Actor.idle_scope)
                                await wait_task_rescheduled(_host_parks(pool, mailbox))
                            finally:
                                pool.host_idle = False
                            if cell.stop_deadline is not None or mailbox.empty:
                                break
                    if dying.cancel_called:
                        await trio.lowlevel.checkpoint()
                    env = mailbox.get_nowait()
            rested = napping and scope.cancelled_caught
        if not pool.in_flight:
            pool.wake_host()
    finally:
        pool.tasks.remove(task)
        if not host:
            pool.workers -= 1
    return False
