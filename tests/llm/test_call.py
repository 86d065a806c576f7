"""The retry loop (Caller) with providers written against the older two-argument
``stream(client, request)``: they keep working, their timeouts enforced per event."""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx2
import pytest
import trio
import trio.testing

from agcore_actors.llm import (
    ChatRequest,
    ChatResponse,
    Content,
    LlmTimeoutError,
    Provider,
    Timeouts,
    user,
)
from agcore_actors.llm.wire import Caller, ChatDelta
from agcore_actors.testing import elapsed


class TwoArgumentProvider:
    """Sends one piece, then stalls (no ReadLimits parameter)."""

    name = "old"

    async def chat(self, client: httpx2.AsyncClient, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError

    async def stream(
        self, client: httpx2.AsyncClient, request: ChatRequest
    ) -> AsyncGenerator[ChatDelta, None]:
        yield ChatDelta(content="a")
        await trio.sleep_forever()


async def test_a_provider_without_read_limits_still_gets_its_idle_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    caller = Caller(timeouts=Timeouts(attempt=10, idle=2, call=100))
    got: list[object] = []
    old: Provider = TwoArgumentProvider()  # type: ignore[assignment]
    async with httpx2.AsyncClient() as client:
        with elapsed() as took, pytest.raises(LlmTimeoutError) as info:
            async for event in caller.stream("old", old, client, ChatRequest([user("q")])):
                got.append(event)
    assert got == [Content("a")] and info.value.scope == "idle"
    assert took.seconds == pytest.approx(2.0)
