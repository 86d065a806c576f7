"""Completing requests: replies, stream events, and what a failed handler leaves.

The rules (the error table in ``docs/architecture.md``):

- a reply goes to its asker, copied and checked against the request's reply
  type in strict mode; a reply after the asker gave up is a dead letter;
- an error in ``expected_errors`` (or an event or reply strict mode cannot
  encode) goes to the asker and the actor carries on;
- a KeyboardInterrupt or SystemExit ends the system, not the actor: the asker
  gets :class:`ActorStopped` and the runtime starts the ordered shutdown;
- anything else goes to the asker and crashes the incarnation;
- a handler cut short by a cancellation answers its asker with the asker's own
  Cancelled, or with what its supervisor said (``interrupt``); when neither
  is known yet, the answer waits for the incarnation's end, which knows why.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import outcome
import trio

from ._cancel import interrupt_in, is_cancellation
from ._codec import declared_type, roundtrip
from ._errors import ActorCrashed, ActorStopped, UnencodableMessage
from ._message import Request, StreamRequest
from ._runtime import log

if TYPE_CHECKING:
    from ._envelope import Envelope
    from ._runtime import Runtime


class Completion:
    """Mixin of :class:`Cell`: how a request's outcome reaches its asker."""

    # What requests cut short by the supervisor receive (see Cell.interrupt_with).
    __slots__ = ("interrupt",)

    _name: str
    runtime: Runtime
    interrupt: BaseException | None

    def _stopped_error(self) -> BaseException:
        return self.interrupt or ActorStopped(self._name)

    async def pump(self, env: Envelope, events: Any) -> None:
        """Forward a stream handler's events to the reader, with back-pressure.

        Runs inside the request, so cancelling the request (the reader left)
        cancels the iterator, which is always closed before this returns.
        """
        if not isinstance(events, AsyncIterator):
            raise TypeError(
                f"the handler of stream request {type(env.msg).__name__} returned "
                f"{type(events).__name__}, not an async iterator"
            )
        sink = env.sink
        assert sink is not None
        strict = self.runtime.strict
        event_type = declared_type(type(env.msg), StreamRequest) if strict else None
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                if strict:
                    event = roundtrip(event, self._name, event_type)
                try:
                    # A cancellation point always; a schedule point only when the
                    # buffer is full (the reader takes what is queued in one go).
                    await trio.lowlevel.checkpoint_if_cancelled()
                    try:
                        sink.send_nowait(event)
                    except trio.WouldBlock:
                        await sink.send(event)
                except trio.BrokenResourceError:
                    return  # the reader left; it cancels us, or already has

    def reply(self, env: Envelope, result: Any) -> None:
        if not env.awaited:
            return  # a tell
        if self.runtime.strict:
            try:
                result = roundtrip(result, self._name, declared_type(type(env.msg), Request))
            except UnencodableMessage as exc:
                env.complete(outcome.Error(exc))
                return
        if not env.complete(outcome.Value(result)) and env.sink is None:
            self.runtime.dead_letters.publish(self._name, result, "late_reply")

    def fail(
        self,
        env: Envelope,
        exc: BaseException,
        expected: tuple[type[Exception], ...],
        orphans: list[Envelope] | None = None,
    ) -> None:
        """Complete ``env`` after its handler raised; re-raise unless the actor goes on.

        An asker that was cancelled gets its own Cancelled whatever happened
        (``Envelope.complete`` sees to that). ``orphans`` collects requests cut
        short for a reason not known yet (None: the serial loop's current
        request, which the incarnation's end answers).
        """
        if is_cancellation(exc):
            if env.raise_cancel is not None or self.interrupt is not None:
                # Cut short by the asker, or by the supervisor (a stop, a
                # restart, a sibling's crash), which said why.
                env.complete(outcome.Error(self._stopped_error()))
            elif orphans is not None:
                orphans.append(env)  # a background task's crash, or an outer cancellation
            raise exc
        fatal = interrupt_in(exc)
        if fatal is not None:
            env.complete(
                outcome.Error(ActorStopped(self._name, f"was interrupted ({type(fatal).__name__})"))
            )
            self.runtime.interrupt(fatal)
            return
        if isinstance(exc, (*expected, UnencodableMessage)):
            # An event of a stream that cannot cross the boundary ends that
            # stream, like an unencodable reply ends its ask: not a crash.
            if not env.awaited:
                log.warning("actor %r: told message %s failed: %s", self._name, env.msg, repr(exc))
            env.complete(outcome.Error(exc))
            return
        exc.add_note(f"raised in actor {self._name!r} handling {type(env.msg).__name__}")
        if self.interrupt is None:
            self.interrupt = ActorCrashed(self._name, exc)
        env.complete(outcome.Error(exc))
        raise exc
