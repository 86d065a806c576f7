"""Turn hooks: code of yours that runs when a turn starts and when it ends.

``on_turn_start(context)`` runs before anything is stored or sent: returning a string
refuses the turn with :class:`HookBlocked` (the reason), None lets it run.
``on_turn_end(result)`` runs after the turn is committed, with its result (write it to
your own memory, count it, notify someone). A hook that raises fails that turn (start)
or is logged and ignored (end): a turn already committed stays committed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

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
    """``on_turn_start(context, user_text) -> reason | None`` and ``on_turn_end(result)``."""

    on_turn_start: TurnStartHook = _allow
    on_turn_end: TurnEndHook = _nothing
