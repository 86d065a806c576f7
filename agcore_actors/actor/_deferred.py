"""Replies given after the handler returned: :func:`defer_reply`.

A serial actor whose handler only hands its request to some other machinery (a queue
served by a background task, a batch written by a thread) would otherwise wait in the
handler for the outcome, holding the actor, or be made concurrent, one waiting worker
task per request. With :func:`defer_reply` the handler takes its request's reply with
it and returns; the actor reads its next message at once, and whoever holds the
:class:`DeferredReply` completes the request later, from the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import outcome
from trio.lowlevel import Abort, Task, current_task

from ._complete import Completion
from ._envelope import ABANDONED, DEFERRED, RUNNING

if TYPE_CHECKING:
    from ._actor import ActorContext
    from ._cell import Cell
    from ._envelope import Envelope

__all__ = ["DeferredReply", "defer_reply"]


class DeferredReply:
    """The reply of one request whose handler returned without giving it.

    Complete it exactly once with :meth:`complete`, from the system's event loop
    (trio's thread, not a worker thread). What the handler returned is ignored.

    Cancellation: when the asker is cancelled (or its ask times out) before the reply,
    :attr:`on_cancel` is called, in the asker's cancellation, synchronously. If it
    returns True the request counts as withdrawn: the asker's cancellation completes
    at once and a later :meth:`complete` is ignored. Otherwise (or with no
    ``on_cancel``) the asker keeps waiting until :meth:`complete`, whose result is then
    dropped for the asker's Cancelled: so the asker's cancellation never completes
    while the work runs on its behalf.

    The incarnation's end: a request still deferred once the incarnation's
    ``on_stop`` has returned is answered as a request cut short by that end
    (:class:`ActorCrashed` after a crash, else :class:`ActorStopped` or what the
    supervisor said); a later :meth:`complete` is ignored. So ``on_stop`` may still
    complete what it can (e.g. finish queued work on a graceful stop), and no asker
    waits for ever.
    """

    __slots__ = ("_cell", "_env", "on_cancel")

    def __init__(self, cell: Cell[Any], env: Envelope) -> None:
        self._cell = cell
        self._env = env
        #: Called when the asker is cancelled first; True: withdrawn (see the class doc).
        self.on_cancel: Callable[[], bool] | None = None

    @property
    def pending(self) -> bool:
        """Not completed, withdrawn, nor answered by the incarnation's end yet."""
        return self._env.state == DEFERRED

    def complete(self, result: outcome.Outcome[Any]) -> None:
        """Give the request its outcome: a ``Value`` is the reply (checked and copied in
        strict mode, as a returned reply is), an ``Error`` goes to the asker only (it
        never crashes the actor). Ignored unless :attr:`pending`."""
        env = self._env
        if env.state != DEFERRED:
            return
        self._cell.undefer(env)
        if type(result) is outcome.Value:
            self._cell.reply(env, result.value)
        else:
            env.complete(result)


class Deferrals(Completion):
    """Base of :class:`Cell`: the requests of an incarnation whose replies are deferred."""

    # Requests whose handlers took their replies; None while there are none.
    __slots__ = ("_deferred",)

    _deferred: dict[Envelope, DeferredReply] | None
    _current: Envelope | None
    task: Task | None

    def defer_reply(self) -> DeferredReply:
        env = self._current
        if (
            env is None
            or env.state != RUNNING
            or env.sink is not None
            or current_task() is not self.task
        ):
            raise RuntimeError(
                "defer_reply() is for the handler of a serial actor's ask or tell, "
                "in the actor's own task"
            )
        env.state = DEFERRED
        reply = DeferredReply(self, env)  # type: ignore[arg-type]
        if self._deferred is None:
            self._deferred = {}
        self._deferred[env] = reply
        return reply

    def undefer(self, env: Envelope) -> None:
        """``env`` is no longer deferred (completed, withdrawn, or its handler failed)."""
        deferred = self._deferred
        if deferred is not None:
            deferred.pop(env, None)

    def abort_deferred(self, env: Envelope, raise_cancel: Any) -> Abort:
        """The asker of the deferred ``env`` was cancelled (see :class:`DeferredReply`)."""
        assert self._deferred is not None
        on_cancel = self._deferred[env].on_cancel
        if on_cancel is not None and on_cancel():
            self.undefer(env)
            env.state = ABANDONED
            env.asker = None
            return Abort.SUCCEEDED
        env.raise_cancel = raise_cancel  # the reply, when it comes, is dropped for this
        return Abort.FAILED

    def left_deferred(self) -> list[Envelope]:
        """At the incarnation's end: the requests still deferred (forgotten here)."""
        deferred, self._deferred = self._deferred, None
        return [] if not deferred else [e for e in deferred if e.state == DEFERRED]


def defer_reply(ctx: ActorContext[Any]) -> DeferredReply:
    """Take the reply of the request being handled, to give it after the handler returns.

    Call it from the handler of a *serial* actor (``max_concurrency`` 1), in the actor's
    own task; not for stream requests. From then on the asker's cancellation no longer
    cancels the handler: it goes to :attr:`DeferredReply.on_cancel`. See
    :class:`DeferredReply` for the guarantees.

    Raises:
        RuntimeError: not called from a serial actor's handler of an ask or a tell.
    """
    if not isinstance(ctx, Deferrals):  # a plain class: no ABC check on this hot path
        raise RuntimeError("defer_reply takes the context the runtime gave the actor")
    return ctx.defer_reply()
