"""Server-sent events over httpx2 for the serve tests: ``connect_sse`` and ``aiter_sse``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2


class EventStream:
    """One streamed response and its events, read with httpx2's own SSE parser."""

    def __init__(self, response: httpx2.Response) -> None:
        self.response = response

    def aiter_sse(self) -> AsyncIterator[httpx2.ServerSentEvent]:
        return aiter(httpx2.EventSource(self.response))


@asynccontextmanager
async def connect_sse(
    client: httpx2.AsyncClient, method: str, url: str, **kwargs: Any
) -> AsyncIterator[EventStream]:
    async with client.stream(method, url, **kwargs) as response:
        yield EventStream(response)
