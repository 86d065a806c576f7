"""The Anthropic Messages API provider (wire shapes and conversion: ``_anthropic_wire``).

Streaming maps the event stream to deltas: ``message_start`` (id, model, usage),
``content_block_start``/``_delta`` of text, thinking (text and ``signature_delta``
pieces, kept per block), ``redacted_thinking`` and tool_use blocks,
``message_delta`` (stop reason; every usage count it carries replaces the one
before, input and cache counts included) and ``message_stop``, after which the rest
of the body is drained so the connection is reused. A stream that ends without
``message_stop`` is complete if a stop reason came, else a truncated
:class:`StreamError`. An ``error`` event is classified like the same failure over
HTTP (:mod:`._stream_errors`): ``overloaded_error`` or ``api_error`` before any
output is retried like a 529 or 500.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import attrs

from .._decode import DECODE_ERRORS
from .._validators import positive
from ._anthropic_wire import (
    ANTHROPIC_MEDIA,
    AnthropicErrorDetail,
    AnthropicEvent,
    AnthropicUsage,
    anthropic_request_body,
    event_decoder,
    message_decoder,
    response_from_message,
)
from ._checks import check_api_key, check_base_url, check_headers, headers_repr, secrets_of
from ._errors import InvalidResponseError, LlmError, StreamError, redact
from ._http import open_stream, post, sse_chunks
from ._provider import OutputMode, ReadLimits
from ._request import ChatRequest
from ._sse import DEFAULT_MAX_EVENT_BYTES, SseEvent
from ._stream import ChatDelta, DeltaToolCall
from ._stream_errors import stream_error
from .messages import ChatResponse

if TYPE_CHECKING:
    import httpx2

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


@attrs.frozen
class AnthropicConfig:
    """Where and how to reach the Anthropic Messages API."""

    #: The provider's name (in errors, usage and the registry).
    name: str = "anthropic"
    #: The API root, without ``/v1``.
    base_url: str = attrs.field(default=ANTHROPIC_BASE_URL, validator=check_base_url)
    #: The ``x-api-key``; checked up front, never shown in errors.
    api_key: str = attrs.field(default="", repr=False, validator=check_api_key)
    #: The model of requests that name none.
    model: str = "claude-sonnet-4-5"
    #: ``max_tokens`` of requests that set none (the API requires it).
    max_tokens: int = attrs.field(default=4096, validator=positive)
    #: The ``anthropic-version`` header.
    version: str = ANTHROPIC_VERSION
    #: Extra HTTP headers of every request (sensitive-looking values are redacted).
    headers: Mapping[str, str] = attrs.field(
        factory=dict, validator=check_headers, repr=headers_repr
    )
    #: Extra top-level body fields of every request (e.g. ``{"thinking": {...}}``).
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: The largest SSE line or event accepted, in bytes.
    max_event_bytes: int = attrs.field(default=DEFAULT_MAX_EVENT_BYTES, validator=positive)
    #: Media kinds the model takes (``image``, ``file``); a part of another kind is
    #: :class:`~agcore_actors.llm.UnsupportedContent` before the request is sent.
    input_media: frozenset[str] = attrs.field(default=ANTHROPIC_MEDIA, converter=frozenset)


def _is_stop(event: SseEvent) -> bool:
    return event.event == "message_stop" or (
        event.event == "message" and b'"message_stop"' in event.data
    )


class _Decoder:
    """The state of one stream: tool call slots and the usage so far."""

    __slots__ = ("provider", "stopped", "tool_slot", "usage")

    def __init__(self, provider: AnthropicProvider) -> None:
        self.provider = provider
        self.tool_slot: dict[int, int] = {}  # content block index -> tool call ordinal
        self.usage = AnthropicUsage()
        self.stopped = False

    def delta(self, sse: SseEvent) -> ChatDelta | None:
        try:
            event = event_decoder.decode(sse.data)
        except DECODE_ERRORS as exc:
            raw = self.provider.redact(sse.data.decode("utf-8", "replace"))[:200]
            raise StreamError(
                self.provider.name, f"event parse failed: {exc} | raw: {raw}"
            ) from None
        kind = event.type or sse.event
        if kind == "content_block_delta":
            return self._block_delta(event)
        if kind == "content_block_start":
            return self._block_start(event)
        if kind == "message_start" and event.message is not None:
            if event.message.usage is not None:
                self.usage = event.message.usage
            return ChatDelta(
                usage=self.usage.canonical(),
                model=event.message.model or None,
                id=event.message.id or None,
            )
        if kind == "message_delta":
            if event.usage is not None:
                self.usage = self.usage.updated(event.usage)
            reason = None if event.delta is None else event.delta.stop_reason
            self.stopped = self.stopped or reason is not None
            return ChatDelta(finish_reason=reason, usage=self.usage.canonical())
        if kind == "error":
            raise self.provider.error_event(event, sse)
        return None

    def _block_start(self, event: AnthropicEvent) -> ChatDelta | None:
        block = event.content_block
        if block is None:
            return None
        if block.type == "tool_use":
            slot = self.tool_slot[event.index] = len(self.tool_slot)
            return ChatDelta(tool_calls=[DeltaToolCall(slot, block.id, block.name, "")])
        if block.type == "text" and block.text:
            return ChatDelta(content=block.text)
        if block.type == "thinking":
            return ChatDelta(
                reasoning=block.thinking or None,
                reasoning_index=event.index,
                signature=block.signature or None,
            )
        if block.type == "redacted_thinking":
            return ChatDelta(reasoning_index=event.index, redacted_reasoning=block.data or "")
        return None

    def _block_delta(self, event: AnthropicEvent) -> ChatDelta | None:
        d = event.delta
        if d is None:
            return None
        if d.type == "text_delta":
            return ChatDelta(content=d.text or "")
        if d.type == "thinking_delta":
            return ChatDelta(reasoning=d.thinking or "", reasoning_index=event.index)
        if d.type == "signature_delta":
            return ChatDelta(reasoning_index=event.index, signature=d.signature or "")
        if d.type == "input_json_delta" and event.index in self.tool_slot:
            call = DeltaToolCall(self.tool_slot[event.index], arguments=d.partial_json)
            return ChatDelta(tool_calls=[call])
        return None


class AnthropicProvider:
    """The Anthropic Messages API; see the module doc for the stream rules."""

    __slots__ = ("_secrets", "_url", "config")

    def __init__(self, config: AnthropicConfig) -> None:
        self.config = config
        self._url = config.base_url.rstrip("/") + "/v1/messages"
        self._secrets = secrets_of(config.api_key, config.headers)

    @property
    def name(self) -> str:
        """The config's name."""
        return self.config.name

    @property
    def structured_output(self) -> OutputMode:
        """The Messages API has no ``response_format``: a forced tool call."""
        return "tool"

    def redact(self, text: str) -> str:
        """``text`` without this provider's secrets."""
        return redact(text, self._secrets)

    def _headers(self, extra: dict[str, str], stream: bool) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "anthropic-version": self.config.version,
        }
        if self.config.api_key:
            headers["x-api-key"] = self.config.api_key
        if stream:
            headers["accept"] = "text/event-stream"
        headers.update(extra)
        return headers

    def _body(self, request: ChatRequest, stream: bool) -> tuple[bytes, dict[str, str]]:
        c = self.config
        body, extra = anthropic_request_body(
            request,
            model=c.model,
            max_tokens=c.max_tokens,
            headers=c.headers,
            extra_body=c.extra_body,
            stream=stream,
            provider=c.name,
            accepts=c.input_media,
        )
        return body, self._headers(extra, stream)

    async def chat(self, client: httpx2.AsyncClient, request: ChatRequest) -> ChatResponse:
        """One non-streamed attempt."""
        body, headers = self._body(request, False)
        response = await post(client, self._url, body, headers, self.name, self._secrets)
        try:
            message = message_decoder.decode(response.content)
        except DECODE_ERRORS as exc:
            raise InvalidResponseError(self.name, str(exc), self.redact(response.text)) from None
        return response_from_message(message, self.name)

    async def stream(
        self, client: httpx2.AsyncClient, request: ChatRequest, limits: ReadLimits
    ) -> AsyncGenerator[ChatDelta, None]:
        """One streamed attempt; see the module doc for how it ends."""
        body, headers = self._body(request, True)
        decoder = _Decoder(self)
        done = False
        async with open_stream(client, self._url, body, headers, self.name, self._secrets) as r:
            chunks = sse_chunks(r, self.name, limits, self.config.max_event_bytes, _is_stop)
            async with aclosing(chunks):
                async for events in chunks:
                    for sse in events:
                        if _is_stop(sse):
                            done = True
                        elif sse.data and (delta := decoder.delta(sse)) is not None:
                            yield delta
        if not done and not decoder.stopped:
            raise StreamError(
                self.name, "the stream ended without message_stop or a stop reason", truncated=True
            )

    def error_event(self, event: AnthropicEvent, sse: SseEvent) -> LlmError:
        """The typed error of an ``error`` event."""
        raw = sse.data.decode("utf-8", "replace")
        error = event.error
        if isinstance(error, AnthropicErrorDetail):
            return stream_error(
                self.name, message=error.message or raw, kind=error.type, raw=raw,
                secrets=self._secrets,
            )  # fmt: skip
        return stream_error(self.name, message=str(error or raw), raw=raw, secrets=self._secrets)
