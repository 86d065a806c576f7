"""Calls into a supervisor from other tasks: posted to its task, refused if they would deadlock.

A supervisor decides in its own task only (see :mod:`._supervisor`). Another task's start
or stop of a child is a :class:`~._child.Call` posted to that task's event channel, as
the children's exits and handed-off starts are; the supervisor carries a call out even if
its caller is cancelled meanwhile (a child started that way is supervised as usual).

Guarantees:

- a call the supervisor could never finish fails at once with :class:`WouldDeadlock`
  instead of hanging: one made from inside the child the supervisor (or a supervisor it
  waits on, down the chain: :func:`blocking_chain`) is waiting on, such as a spawn from
  that child's ``on_start``; and a stop of the caller's own actor from its handler;
- a call to a closed supervisor fails with :class:`ActorStopped`, and so does a call
  posted but not yet handled when it closes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import trio

from ._child import Call, Child, Event
from ._errors import ActorStopped, WouldDeadlock
from ._node import Node

__all__ = ["SupervisorCalls", "blocking_chain"]


def blocking_chain(node: Node | None) -> Node | None:
    """Follow supervisors waiting on a child's start or stop down to the node at the end."""
    while node is not None:
        below = node.blocked_on()
        if below is None:
            return node
        node = below
    return None


class SupervisorCalls:
    """Mixin of :class:`~._supervisor.Supervisor`: its event channel's sending side."""

    # The supervisor's state this part uses (set by Supervisor.__init__).
    _closed: bool
    _events_in: trio.MemorySendChannel[Event]
    _events: trio.MemoryReceiveChannel[Event]
    _children: dict[str, Child]

    if TYPE_CHECKING:
        # Provided by Supervisor; declared here so the mixin type-checks on its own.
        @property
        def name(self) -> str: ...

    def post(self, event: Event) -> None:
        self._events_in.send_nowait(event)

    async def _call(self, action: str, arg: Any) -> Any:
        # The supervisor's task carries the call out even if this caller is
        # cancelled meanwhile: a child started that way is supervised as usual.
        if self._closed:
            raise ActorStopped(self.name)
        self._refuse_deadlock(action, arg)
        call = Call(action, arg)
        self.post(call)
        await call.done.wait()
        if call.error is not None:
            raise call.error
        return call.result

    def _refuse_deadlock(self, action: str, arg: Any) -> None:
        """Raise WouldDeadlock for a call that this supervisor could never finish.

        The supervisor does one thing at a time. A call made from inside the
        child it is waiting on (from that child's ``on_start``, say) would wait
        for the supervisor, which waits for the caller. Stopping the caller's
        own actor (or a supervisor above it) from its handler would wait for
        the handler to end, which waits for the stop.
        """
        task = trio.lowlevel.current_task()
        this = cast("Node", self)  # the Supervisor this is mixed into
        end = blocking_chain(this)
        if end is not None and end is not this and end.runs_in(task):
            raise WouldDeadlock(
                end.name,
                f"a {'spawn' if action == 'start' else 'stop'} from inside its own start "
                "(on_start) or stop waits for the supervisor that waits for it",
            )
        if action == "stop" and isinstance(arg, str):
            child = self._children.get(arg)
            if child is not None and child.node.runs_in(task):
                raise WouldDeadlock(
                    arg,
                    "stopping its own actor from its handler would wait for the handler; "
                    "call ctx.stop() instead",
                )

    def _answer_unhandled_calls(self) -> None:
        """Fail the calls that were posted but will never be handled (on close)."""
        while True:
            try:
                event = self._events.receive_nowait()
            except (trio.WouldBlock, trio.EndOfChannel):
                break
            if isinstance(event, Call):
                event.error = ActorStopped(self.name)
                event.done.set()
