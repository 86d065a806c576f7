"""The workers of a concurrent actor: serial loops sharing one mailbox.

A concurrent actor (``max_concurrency`` N > 1) runs each request in one of at
most N worker tasks. A worker is the serial loop again: it takes a message,
handles it inside its own long-lived cancel scope (which an asker's
cancellation cancels, as for a serial actor), and takes the next. No task and
no cancel scope is made per request. The incarnation's own task is the first
worker; another is started when a worker takes a message and none is left
listening, up to N; a worker that finds the mailbox empty while two others
listen ends. So an idle concurrent actor is two parked tasks, a busy one at
most N, and the mailbox is not read while N requests run (back-pressure).

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
        "draining",
        "expected",
        "in_flight",
        "limit",
        "nursery",
        "orphans",
        "tasks",
        "workers",
    )

    def __init__(
        self, actor: Actor[Any], nursery: trio.Nursery, limit: int, orphans: list[Envelope]
    ) -> None:
        self.actor = actor
        self.expected = actor.expected_errors
        self.nursery = nursery
        self.limit = limit
        self.orphans = orphans
        self.tasks: set[Task] = set()
        self.workers = 1  # the incarnation's own task
        self.in_flight = 0  # requests running now
        # The incarnation's task, waiting for the running requests of a stop.
        self.draining: Task | None = None

    def wake_host(self) -> None:
        task, self.draining = self.draining, None
        if task is not None:
            reschedule(task)


async def serve_concurrent(
    cell: Cell[Any], actor: Actor[Any], nursery: trio.Nursery, limit: int, orphans: list[Envelope]
) -> None:
    """Serve until a stop is requested, then wait for the running requests."""
    pool = cell.pool = Pool(actor, nursery, limit, orphans)
    await _work(cell, pool, True)
    while pool.in_flight:  # a graceful stop lets running requests finish
        pool.draining = current_task()
        await wait_task_rescheduled(_drain_abort(pool))


def _drain_abort(pool: Pool) -> Any:
    def abort(_: Any) -> trio.lowlevel.Abort:
        pool.draining = None
        return trio.lowlevel.Abort.SUCCEEDED

    return abort


async def _work(cell: Cell[Any], pool: Pool, host: bool) -> None:
    task = current_task()
    pool.tasks.add(task)
    mailbox = cell.mailbox
    actor = pool.actor
    expected = pool.expected
    dying = pool.nursery.cancel_scope
    try:
        while cell.stop_deadline is None:
            with trio.CancelScope() as scope:
                while cell.stop_deadline is None:
                    if dying.cancel_called:
                        # A crash (or a kill) is ending the incarnation: leave
                        # what is queued to the next one.
                        await trio.lowlevel.checkpoint()
                    env = mailbox.get_nowait()
                    if env is None:
                        if not host and mailbox.parked >= 2:
                            return  # enough others listen: end this worker
                        await wait_task_rescheduled(mailbox.park_worker())
                        continue
                    env.state = RUNNING
                    env.scope = scope
                    pool.in_flight += 1
                    if mailbox.parked == 0 and pool.workers < pool.limit:
                        pool.workers += 1
                        pool.nursery.start_soon(_work, cell, pool, False, name=cell.name)
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
        pool.tasks.discard(task)
        if not host:
            pool.workers -= 1
