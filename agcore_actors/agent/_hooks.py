"""Turn hooks: code of yours that runs when a turn starts and when it ends.

``on_turn_start(context)`` runs before anything is stored or sent: returning a string
refuses the turn with :class:`HookBlocked` (the reason), None lets it run.
``on_turn_end(result)`` runs after the turn is committed, with its result (write it to
your own memory, count it, notify someone). A hook that raises fails that turn (start)
or is logged and ignored (end): a turn already committed stays committed.

``events``, a :class:`~agcore_actors.llm.HookExecutor` (the provider's, or one of its
own), gets the same two moments as :class:`~agcore_actors.llm.HookEvent` s, once per turn
of the session and in order: ``ON_TURN_START`` right after ``on_turn_start`` let the turn
run, ``ON_TURN_END`` right after ``on_turn_end`` (so exactly when that one runs), each
with ``session`` and ``turn_index`` (the turn's 0-based number in the session), the end
also with the turn's ``usage``. They only observe: their results are ignored; one that
raises is treated as ``on_turn_start`` / ``on_turn_end`` raising. Turns of child sessions
(agents called as tools) fire nothing. ``ON_PLAN_STEP_COMPLETE`` is fired by
:func:`~agcore_actors.agent.execute_plan`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from ..llm import HookContext, HookEvent, HookExecutor
from . import messages as am
from ._config import PromptContext

__all__ = ["TurnHooks"]

TurnStartHook = Callable[[PromptContext, str], Awaitable[str | None]]
TurnEndHook = Callable[[am.TurnResult], Awaitable[None]]


async def _allow(context: PromptContext, text: str) -> str | None:
    return None


async def _nothing(result: am.TurnResult) -> None:
    return None


@attrs.frozen(kw_only=True)
class TurnHooks:
    """``on_turn_start(context, user_text) -> reason | None``, ``on_turn_end(result)``
    and the ``events`` they fire (see the module docstring)."""

    on_turn_start: TurnStartHook = _allow
    on_turn_end: TurnEndHook = _nothing
    #: Hooks of ``ON_TURN_START`` / ``ON_TURN_END``; None: none.
    events: HookExecutor | None = None

    async def start(self, context: PromptContext, text: str) -> str | None:
        """Run ``on_turn_start``; if it lets the turn run, fire ``ON_TURN_START``."""
        blocked = await self.on_turn_start(context, text)
        events = self.events
        if blocked is None and events:
            await events.execute(
                HookContext(
                    HookEvent.ON_TURN_START, session=context.session, turn_index=context.turn
                )
            )
        return blocked

    async def end(self, result: am.TurnResult, turn_index: int) -> None:
        """Run ``on_turn_end``, then fire ``ON_TURN_END``."""
        await self.on_turn_end(result)
        events = self.events
        if events:
            await events.execute(
                HookContext(
                    HookEvent.ON_TURN_END,
                    session=result.session,
                    turn_index=turn_index,
                    usage=result.usage,
                )
            )
