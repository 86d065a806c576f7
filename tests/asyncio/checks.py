"""What the AsyncioHost tests share: running a test's main under ``asyncio.run`` and the
check of a session's history after a cancelled turn."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agcore_actors.agent import transcript_errors
from agcore_actors.llm import UserMessage
from tests.asyncio.rig import Model


def in_asyncio(main: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``main`` under asyncio.run and check that it left no asyncio task behind."""

    async def checked() -> Any:
        result = await main()
        assert asyncio.all_tasks() == {asyncio.current_task()}
        return result

    return asyncio.run(checked())


def check_cancelled_turn_then_next(model: Model, session: str, text: str) -> None:
    """The history the next turn of ``session`` showed the model is valid (every call
    of the cancelled turn answered), and the cancelled turn is in it or never began."""
    messages = model.transcript_before(f"next {session}")
    assert transcript_errors(messages) == []
    users = [m.content for m in messages if isinstance(m, UserMessage)]
    assert users in ([text, f"next {session}"], [f"next {session}"])
