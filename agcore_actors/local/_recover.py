"""A provider wrapper that recovers from a small model's malformed tool call.

llama.cpp builds a parser from the chat template; when the model writes a call that does
not parse — typically a tool it was not offered — the server answers HTTP 500 ("does not
match the expected peg-native format"), in the status line or, streamed, as an error
event after the 200. Sent again unchanged at temperature 0, the request fails the same
way, so the retry loop's ordinary retries are useless. :class:`ToolCallRecovery` instead
asks once more *without tools*, so the model answers in plain text; if that fails too the
call ends with a final (not retryable) :class:`~agcore_actors.llm.InvalidResponseError`,
which ends the turn with a typed error, and the session goes on with the next turn.

Streamed, the error may come after the model has already shown text or complete tool
calls (a reply of several calls whose last one does not parse): then that reply is
ended there, as a plain answer (``finish_reason`` ``stop``) or with the calls it
delivered (``tool_calls``), instead of failing the turn.

Guarantees: the second attempt is made only if the first delivered no text and no tool
call (nothing the turn has shown can be contradicted); a reply that delivered some is
ended, never sent again; any other error passes through untouched. Cancellation: as the
wrapped provider's (the inner stream is closed first).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING

import attrs
import msgspec

from ..llm import (
    ChatRequest,
    ChatResponse,
    InvalidResponseError,
    OutputMode,
    Provider,
    RequestError,
)
from ..llm.wire import ChatDelta, ReadLimits, output_mode_of

if TYPE_CHECKING:
    import httpx2

_MARKERS = ("peg-native", "does not match the expected", "failed to parse")


def is_malformed_tool_call(error: BaseException) -> bool:
    """A server's report that the model's output did not parse as its tool-call format."""
    if not isinstance(error, RequestError) or error.status != 500:
        return False
    body = error.body.lower()
    return any(marker in body for marker in _MARKERS)


@attrs.frozen
class ToolCallRecovery:
    """Wraps ``inner``; see the module docstring."""

    inner: Provider

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def structured_output(self) -> OutputMode:
        return output_mode_of(self.inner)

    def _final(self, error: RequestError) -> InvalidResponseError:
        return InvalidResponseError(
            self.inner.name,
            "the model wrote a tool call that does not parse, also when asked without tools",
            error.body,
        )

    async def chat(self, client: httpx2.AsyncClient, request: ChatRequest) -> ChatResponse:
        try:
            return await self.inner.chat(client, request)
        except RequestError as error:
            if not is_malformed_tool_call(error) or not request.tools:
                raise
        try:
            return await self.inner.chat(client, _without_tools(request))
        except RequestError as error:
            if is_malformed_tool_call(error):
                raise self._final(error) from error
            raise

    async def stream(
        self, client: httpx2.AsyncClient, request: ChatRequest, limits: ReadLimits
    ) -> AsyncGenerator[ChatDelta, None]:
        text = calls = False
        try:
            async with aclosing(self.inner.stream(client, request, limits)) as deltas:
                async for delta in deltas:
                    text = text or bool(delta.content)
                    calls = calls or bool(delta.tool_calls)
                    yield delta
            return
        except RequestError as error:
            if not is_malformed_tool_call(error) or not request.tools:
                raise
        if text or calls:  # shown already: end the reply with what it delivered
            yield ChatDelta(finish_reason="tool_calls" if calls else "stop")
            return
        try:
            async with aclosing(self.inner.stream(client, _without_tools(request), limits)) as d:
                async for delta in d:
                    yield delta
        except RequestError as error:
            if is_malformed_tool_call(error):
                raise self._final(error) from error
            raise


def _without_tools(request: ChatRequest) -> ChatRequest:
    return msgspec.structs.replace(request, tools=None, tool_choice=None, parallel_tool_calls=None)
