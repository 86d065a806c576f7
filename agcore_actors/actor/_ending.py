"""How an incarnation ends (a mixin of :class:`~._cell.Cell`).

An incarnation ends when it is asked to stop (its supervisor, or
``ctx.stop()``), when it crashes, or when it is cancelled. A request cut
short gets the reason its incarnation ended (:class:`ActorCrashed` for a
crash, :class:`ActorStopped` otherwise), never a guess. ``on_stop`` then
runs shielded, within what is left of the stop's grace (and never past the
system's shutdown deadline). KeyboardInterrupt and SystemExit are never a
crash: they end the whole system, through its ordered shutdown.
"""

from __future__ import annotations

from typing import Any

import outcome
import trio
from trio.lowlevel import Task

from ._actor import Actor
from ._cancel import interrupt_in, is_cancellation
from ._deferred import Deferrals
from ._envelope import DONE, Envelope
from ._errors import ActorCrashed, ActorStopped
from ._node import Link, State
from ._runtime import log


class Ending(Deferrals):
    """Mixin of :class:`Cell`: answer what an incarnation leaves, run ``on_stop``, report."""

    # The running request of a serial actor, the serial loop's scope, the life-cycle
    # state and the incarnation's task: set by Cell, cleared here at the end.
    __slots__ = ("_current", "_loop_scope", "state", "task")

    _current: Envelope | None
    _loop_scope: trio.CancelScope | None
    state: State
    task: Task | None
    _killed: bool
    shutdown: float
    stop_deadline: float | None

    async def _finish(
        self,
        actor: Actor[Any],
        link: Link,
        reason: BaseException | None,
        orphans: list[Envelope] | None = None,
    ) -> None:
        """Answer requests left unanswered, run ``on_stop``, report the exit,
        re-raise a cancellation."""
        runtime = self.runtime
        if reason is None and self._killed:
            # The kill's Cancelled was absorbed by our own scope; on_stop must
            # still learn that this was no graceful stop.
            reason = ActorStopped(self._name, "was killed when its shutdown grace ran out")
        cancelled = reason if reason is not None and is_cancellation(reason) else None
        fatal = interrupt_in(reason)
        if fatal is not None:
            runtime.interrupt(fatal)
            reason = fatal
        elif reason is None and self.stop_deadline is not None:
            reason = runtime.stop_reason  # None, unless the system is interrupted
        elif cancelled is not None and runtime.deadline <= trio.current_time():
            reason = ActorStopped(self._name, "was killed when its system's shutdown timed out")
        self._answer_cut_short(reason, orphans)
        self._loop_scope = None
        self.state = State.STOPPING
        deadline = self.stop_deadline
        if deadline is None:
            deadline = trio.current_time() + self.shutdown
        with trio.CancelScope(shield=True, deadline=min(deadline, runtime.deadline)) as scope:
            runtime.on_stops.add(scope)
            try:
                await actor.on_stop(reason)
            except Exception:
                log.exception("on_stop of actor %r failed", self._name)
            except BaseException as exc:
                fatal = interrupt_in(exc)
                if fatal is None:
                    raise
                runtime.interrupt(fatal)
            finally:
                runtime.on_stops.discard(scope)
        left = self.left_deferred()
        if left:
            self._answer_cut_short(reason, left)  # what on_stop left is cut short too
        self.task = None
        link.exited(reason)
        if cancelled is not None:
            raise cancelled

    def _answer_cut_short(
        self, reason: BaseException | None, orphans: list[Envelope] | None
    ) -> None:
        """Complete requests whose handlers were cut short with why the incarnation ended."""
        cut = [] if orphans is None else orphans
        env, self._current = self._current, None
        if env is not None:
            cut.append(env)
        if not cut:
            return
        crashed = (
            reason is not None
            and not is_cancellation(reason)
            and not isinstance(reason, ActorStopped)
            and interrupt_in(reason) is None
        )
        for env in cut:
            if env.state != DONE:
                error = ActorCrashed(self._name, reason) if crashed else self._stopped_error()
                env.complete(outcome.Error(error))
