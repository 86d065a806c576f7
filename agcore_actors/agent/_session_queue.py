"""The way in to a :class:`~._session.Session`'s turns: the checks a turn request passes
before anything, the queue to the turn lock, and the ``SubmitTurn`` event stream
(functions of the session, which hands ``RunTurn`` and ``SubmitTurn`` to them).

Guarantees:

- a turn request changes nothing until it is admitted: its content is checked first
  (``ContentTooLarge``, ``InvalidContent``), then the queue's bound
  (:class:`~._errors.SessionBusy` when ``max_queued`` turns already wait behind the
  running one); a ``SubmitTurn`` is checked when its stream is first read;
- turns take the turn lock one at a time, in arrival order (a FIFO lock; a free one is
  taken with no schedule point, the turn has many);
- a ``SubmitTurn``'s turn runs in a task of the actor's nursery that sends its events to
  the stream. The reader leaving (or the stream closed early) cancels that turn, and the
  stream's end waits, shielded, until the turn has ended (so it is committed, see the
  session's Cancellation). A store refusing the turn's begin or commit ends the stream
  with :class:`~.messages.TurnFailed`; anything else escaping the turn (a bug) crashes
  the actor, and the reader gets :class:`~agcore_actors.actor.ActorCrashed` after the
  stream, never a stream that just ends with no final event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import trio

from .._errors import AgcoreError
from .._ids import new_id
from ..actor import ActorCrashed
from ..llm import TextPart, UserMessage, check_parts
from . import messages as am
from ._child import drop_events
from ._errors import SessionBusy
from ._session_control import Emit
from ._turn_setup import failed_result

if TYPE_CHECKING:
    from ._session import Session


def _admitted(session: Session, msg: am.RunTurn | am.SubmitTurn) -> UserMessage:
    """The turn's user message; ContentTooLarge, InvalidContent or SessionBusy before
    anything."""
    if not msg.parts:
        user = UserMessage(msg.text)
    else:
        check_parts(msg.parts, session.settings.config.media_limits)
        user = UserMessage([TextPart(msg.text), *msg.parts] if msg.text else list(msg.parts))
    busy = session._busy
    if busy is not None and busy.queued + (busy.running is not None) > session.settings.max_queued:
        raise SessionBusy(session.session, busy.queued)
    return user


async def run_turn(session: Session, msg: am.RunTurn) -> am.TurnResult:
    """Answer a ``RunTurn``: the turn's result (nobody reads its events)."""
    user = _admitted(session, msg)
    return await _queued_turn(session, user, msg.turn or new_id(), drop_events, msg.settings)


async def submit_turn(session: Session, msg: am.SubmitTurn) -> AsyncIterator[am.TurnEvent]:
    """Answer a ``SubmitTurn``: the turn's events (see the module doc)."""
    user = _admitted(session, msg)
    turn_id = msg.turn or new_id()
    send, receive = trio.open_memory_channel[am.TurnEvent](0)
    done = trio.Event()
    holder = trio.CancelScope()

    async def emit(event: am.TurnEvent) -> None:
        try:
            await send.send(event)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            holder.cancel()  # the reader left: cancel the turn
            await trio.lowlevel.checkpoint()

    crash: list[BaseException] = []

    async def runner() -> None:
        try:
            with holder:
                try:
                    await _queued_turn(session, user, turn_id, emit, msg.settings)
                except AgcoreError as exc:
                    # The store refused the turn's begin or commit: the reader's
                    # answer, not a crash of this task (of the whole actor).
                    await emit(am.TurnFailed(failed_result(session.session, turn_id, exc)))
        except BaseException as exc:
            if not isinstance(exc, trio.Cancelled):
                crash.append(exc)  # a bug: it crashes the actor; the reader is told
            raise
        finally:
            # Closed without a checkpoint: in a cancelled ``holder`` (the reader left)
            # an ``aclose`` would raise Cancelled over a crash and lose it.
            send.close()
            done.set()

    session.ctx.nursery.start_soon(runner)
    try:
        async with receive:
            async for event in receive:
                yield event
    finally:
        if not done.is_set():
            holder.cancel()
            with trio.CancelScope(shield=True):
                await done.wait()
    if crash:
        # The stream ended with no final event: the turn's task crashed the actor.
        raise ActorCrashed(session.ctx.name, crash[0])


async def _queued_turn(
    session: Session,
    user: UserMessage,
    turn_id: str,
    emit: Emit,
    overrides: am.ModelOverrides | None,
) -> am.TurnResult:
    """Run the turn once it holds the turn lock (FIFO), then let the lock go."""
    busy = session._busy_now()
    try:
        busy.lock.acquire_nowait()  # free: no schedule point here (the turn has many)
    except trio.WouldBlock:
        busy.queued += 1
        try:
            await busy.lock.acquire()
        finally:
            busy.queued -= 1
    try:
        return await session._turn(user, turn_id, emit, overrides)
    finally:
        session._release()
