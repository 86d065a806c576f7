"""The workers of a concurrent actor: serial loops sharing one mailbox.

A concurrent actor (``max_concurrency`` N > 1) runs each request in one of at
most N worker tasks. A worker is the serial loop again: it takes a message,
handles it inside its cancel scope (which an asker's cancellation cancels, as
for a serial actor), and takes the next. No task is made per request, and a
cancel scope only per busy spell: a worker enters one when it finds work and
leaves it when the mailbox is empty, so a parked worker holds none. The
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

from typing import TYPE_CHECKING, Any

import trio
from trio.lowlevel import Task, current_task, reschedule, wait_task_rescheduled

from ._mailbox import RUNNING

if TYPE_CHECKING:
    from ._actor import Actor
    from ._cell import Cell
    from ._mailbox import Envelope


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
        # Idle with nothing left in the nursery: end the task, dormant (see _dormant).
        self.may_sleep = False

    def __call__(self) -> None:
        """A message arrived and every worker is busy: start another, if the limit allows.

        The pool is itself the mailbox's miss hook (no closure per actor).
        """
        if self.workers < self.limit and not self.nursery.cancel_scope.cancel_called:
            self.workers += 1
            self.nursery.start_soon(work, self.cell, self, False, name=self.cell.name)

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


async def work(cell: Cell[Any], pool: Pool, host: bool) -> bool:
    """One worker's loop; ``host`` for the incarnation's own task (it never ends idle,
    unless the actor may go dormant: then it returns True, see _dormant)."""
    task = current_task()
    pool.tasks.append(task)
    mailbox = cell.mailbox
    actor = pool.actor
    expected = pool.expected
    dying = pool.nursery.cancel_scope
    try:
        while cell.stop_deadline is None:
            if dying.cancel_called:
                # A crash (or a kill) is ending the incarnation: leave what is queued
                # to the next one.
                await trio.lowlevel.checkpoint()
            if mailbox.empty:
                # While other requests run, an idle worker lingers, parked: the next
                # message of a burst wakes it instead of starting a new task. Once
                # none runs, the extra workers end and only the first one listens.
                idle = not pool.in_flight
                if not host:
                    if idle and pool.host_idle:
                        mailbox.wake()  # the other lingering workers end too
                        return False
                    await wait_task_rescheduled(mailbox.park_worker())
                    continue
                if idle and mailbox.parked:
                    mailbox.wake()  # the lingering extra workers: let them end
                if idle and pool.may_sleep and not pool.nursery.child_tasks:
                    return True  # dormant: no checkpoint since the mailbox was empty
                pool.host_idle = True
                # Parked outside any scope of ours: an idle worker holds no cancel scope.
                try:
                    await wait_task_rescheduled(mailbox.park_worker())
                finally:
                    pool.host_idle = False
                continue
            with trio.CancelScope() as scope:
                while cell.stop_deadline is None:
                    if dying.cancel_called:
                        await trio.lowlevel.checkpoint()
                    env = mailbox.get_nowait()
                    if env is None:
                        break  # idle: park without the scope
                    env.state = RUNNING
                    env.scope = scope
                    pool.in_flight += 1
                    try:
                        result = await actor.handle(env.msg)
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
        if not pool.in_flight:
            pool.wake_host()
    finally:
        pool.tasks.remove(task)
        if not host:
            pool.workers -= 1
    return False
