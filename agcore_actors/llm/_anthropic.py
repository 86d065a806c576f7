"""The Anthropic Messages API provider, converting to and from the common types.

Request: system and developer messages become the ``system`` prompt; tool
results become ``tool_result`` blocks of a user message (consecutive ones
merged into one message, as the API requires alternation); assistant tool
calls become ``tool_use`` blocks; ``tool_choice`` maps to auto/any/tool/none;
``stop`` to ``stop_sequences``; ``max_tokens`` is required by the API
(config default 4096); ``extra_body`` (e.g. ``{"thinking": {...}}``) is
merged into the body and ``extra_headers`` sent as headers.

Response: text blocks are the content, ``thinking`` blocks the
``reasoning_content``, ``tool_use`` blocks the tool calls (``input``
re-encoded as a JSON string); usage keeps cache reads and writes apart
(Anthropic's ``input_tokens`` excludes them). Streaming maps the event
stream (message_start, content_block_*, message_delta, message_stop) to
deltas; a stream without ``message_stop`` is a :class:`StreamError`.

Not sent back: earlier ``reasoning_content`` (thinking blocks need their
signatures, which the common types do not keep), and non-image parts of user
content (audio, files).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import attrs
import httpx
import msgspec
from httpx_sse import EventSource, SSEError

from ._errors import InvalidResponseError, StreamError, redact
from ._provider import open_stream, post, status_error
from ._stream import ChatDelta, DeltaToolCall
from ._types import (
    AssistantMessage,
    ChatRequest,
    Content,
    DeveloperMessage,
    FunctionCall,
    ImagePart,
    NamedToolChoice,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    content_text,
    finish_reason,
)
from ._usage import Usage, usage_from_anthropic
from .messages import ChatResponse

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


@attrs.frozen
class AnthropicConfig:
    name: str = "anthropic"
    base_url: str = ANTHROPIC_BASE_URL
    api_key: str = attrs.field(default="", repr=False)
    model: str = "claude-sonnet-4-5"
    max_tokens: int = 4096
    version: str = ANTHROPIC_VERSION
    headers: Mapping[str, str] = attrs.field(factory=dict)
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)


class _Usage(msgspec.Struct, frozen=True):
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cache_read_input_tokens: int | None = 0
    cache_creation_input_tokens: int | None = 0

    def canonical(self) -> Usage:
        return usage_from_anthropic(
            self.input_tokens or 0,
            self.output_tokens or 0,
            self.cache_read_input_tokens or 0,
            self.cache_creation_input_tokens or 0,
        )


class _Block(msgspec.Struct, frozen=True):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None


class _Message(msgspec.Struct, frozen=True):
    id: str = ""
    model: str = ""
    content: list[_Block] = msgspec.field(default_factory=list)
    stop_reason: str | None = None
    usage: _Usage | None = None


class _BlockDelta(msgspec.Struct, frozen=True):
    type: str = ""
    text: str | None = None
    thinking: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class _Event(msgspec.Struct, frozen=True):
    type: str = ""
    index: int = 0
    message: _Message | None = None
    content_block: _Block | None = None
    delta: _BlockDelta | None = None
    usage: _Usage | None = None
    error: Any = None


_message_decoder = msgspec.json.Decoder(_Message)
_event_decoder = msgspec.json.Decoder(_Event)
_encoder = msgspec.json.Encoder()


def _blocks(content: Content | None) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            url = part.image_url.url
            if url.startswith("data:") and ";base64," in url:
                media, data = url[5:].split(";base64,", 1)
                source = {"type": "base64", "media_type": media, "data": data}
            else:
                source = {"type": "url", "url": url}
            blocks.append({"type": "image", "source": source})
    return blocks


def _arguments(text: str) -> Any:
    try:
        value = msgspec.json.decode(text) if text.strip() else {}
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def anthropic_body(
    request: ChatRequest, config: AnthropicConfig, *, stream: bool
) -> tuple[bytes, dict[str, str]]:
    system_parts: list[str] = []
    turns: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in request.messages:
        if isinstance(message, SystemMessage | DeveloperMessage):
            system_parts.append(content_text(message.content))
        elif isinstance(message, UserMessage):
            add("user", _blocks(message.content))
        elif isinstance(message, ToolMessage):
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": message.tool_call_id,
                        "content": content_text(message.content),
                    }
                ],
            )
        elif isinstance(message, AssistantMessage):
            blocks = _blocks(message.content)
            for call in message.tool_calls or ():
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.id,
                        "name": call.function.name,
                        "input": _arguments(call.function.arguments),
                    }
                )
            add("assistant", blocks)
        else:  # a deprecated function message: its result as user text
            add("user", _blocks(message.content))
    body: dict[str, Any] = {
        "model": request.model or config.model,
        "max_tokens": request.max_tokens or request.max_completion_tokens or config.max_tokens,
        "messages": turns,
    }
    if system_parts:
        body["system"] = "\n\n".join(system_parts)
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if request.top_p is not None:
        body["top_p"] = request.top_p
    if request.stop is not None:
        body["stop_sequences"] = [request.stop] if isinstance(request.stop, str) else request.stop
    if request.user is not None:
        body["metadata"] = {"user_id": request.user}
    if request.tools:
        body["tools"] = [
            {
                "name": t.function.name,
                "description": t.function.description or "",
                "input_schema": t.function.parameters or {"type": "object", "properties": {}},
            }
            for t in request.tools
        ]
        choice = request.tool_choice
        if isinstance(choice, NamedToolChoice):
            body["tool_choice"] = {"type": "tool", "name": choice.function.name}
        elif choice == "required":
            body["tool_choice"] = {"type": "any"}
        elif choice in ("auto", "none"):
            body["tool_choice"] = {"type": choice}
        if request.parallel_tool_calls is False and "tool_choice" in body:
            body["tool_choice"]["disable_parallel_tool_use"] = True
    if stream:
        body["stream"] = True
    body.update(config.extra_body)
    if request.extra_body:
        body.update(request.extra_body)
    headers = dict(config.headers)
    if request.extra_headers:
        headers.update(request.extra_headers)
    return _encoder.encode(body), headers


def response_from_message(message: _Message, provider: str) -> ChatResponse:
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text" and block.text is not None:
            texts.append(block.text)
        elif block.type == "thinking" and block.thinking is not None:
            thinking.append(block.thinking)
        elif block.type == "tool_use":
            arguments = _encoder.encode(block.input if block.input is not None else {}).decode()
            calls.append(ToolCall(block.id or "", FunctionCall(block.name or "", arguments)))
    reply = AssistantMessage(
        content="".join(texts) if texts else None,
        reasoning_content="".join(thinking) if thinking else None,
        tool_calls=calls or None,
    )
    usage = Usage() if message.usage is None else message.usage.canonical()
    return ChatResponse(
        reply, finish_reason(message.stop_reason), usage, message.model, message.id, provider
    )


class AnthropicProvider:
    __slots__ = ("_secrets", "_url", "config")

    def __init__(self, config: AnthropicConfig) -> None:
        self.config = config
        self._url = config.base_url.rstrip("/") + "/v1/messages"
        self._secrets = (config.api_key,) if config.api_key else ()

    @property
    def name(self) -> str:
        return self.config.name

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

    async def chat(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatResponse:
        body, extra = anthropic_body(request, self.config, stream=False)
        headers = self._headers(extra, False)
        response = await post(client, self._url, body, headers, self.name, self._secrets)
        try:
            message = _message_decoder.decode(response.content)
        except msgspec.DecodeError as exc:
            text = redact(response.text, self._secrets)
            raise InvalidResponseError(self.name, str(exc), text) from None
        return response_from_message(message, self.name)

    async def stream(
        self, client: httpx.AsyncClient, request: ChatRequest
    ) -> AsyncGenerator[ChatDelta, None]:
        body, extra = anthropic_body(request, self.config, stream=True)
        headers = self._headers(extra, True)
        async with open_stream(
            client, self._url, body, headers, self.name, self._secrets
        ) as response:
            async for delta in self._events(response):
                yield delta

    async def _events(self, response: httpx.Response) -> AsyncGenerator[ChatDelta, None]:
        events = EventSource(response).aiter_sse()
        tool_slot: dict[int, int] = {}  # content block index -> tool call ordinal
        usage = _Usage()
        done = False
        async with contextlib.aclosing(events):
            try:
                async for sse in events:
                    if not sse.data:
                        continue
                    try:
                        event = _event_decoder.decode(sse.data)
                    except msgspec.DecodeError as exc:
                        raw = redact(sse.data, self._secrets)[:200]
                        raise StreamError(
                            self.name, f"event parse failed: {exc} | raw: {raw}"
                        ) from None
                    kind = event.type or sse.event
                    if kind == "message_start" and event.message is not None:
                        if event.message.usage is not None:
                            usage = event.message.usage
                        yield ChatDelta(
                            usage=usage.canonical(),
                            model=event.message.model or None,
                            id=event.message.id or None,
                        )
                    elif kind == "content_block_start" and event.content_block is not None:
                        block = event.content_block
                        if block.type == "tool_use":
                            slot = tool_slot[event.index] = len(tool_slot)
                            call = DeltaToolCall(slot, block.id, block.name, "")
                            yield ChatDelta(tool_calls=[call])
                        elif block.type == "text" and block.text:
                            yield ChatDelta(content=block.text)
                    elif kind == "content_block_delta" and event.delta is not None:
                        d = event.delta
                        if d.type == "text_delta":
                            yield ChatDelta(content=d.text or "")
                        elif d.type == "thinking_delta":
                            yield ChatDelta(reasoning=d.thinking or "")
                        elif d.type == "input_json_delta" and event.index in tool_slot:
                            call = DeltaToolCall(tool_slot[event.index], arguments=d.partial_json)
                            yield ChatDelta(tool_calls=[call])
                    elif kind == "message_delta":
                        if event.usage is not None:
                            # output_tokens here is cumulative; input counts come once.
                            usage = msgspec.structs.replace(
                                usage, output_tokens=event.usage.output_tokens
                            )
                        reason = None if event.delta is None else event.delta.stop_reason
                        yield ChatDelta(finish_reason=reason, usage=usage.canonical())
                    elif kind == "message_stop":
                        done = True
                        break
                    elif kind == "error":
                        raise self._error_event(sse.data)
            except SSEError as exc:
                raise StreamError(self.name, str(exc)) from None
        if not done:
            raise StreamError(self.name, "the stream ended without message_stop", truncated=True)

    def _error_event(self, data: str) -> Exception:
        lowered = data.lower()
        if "overloaded" in lowered:
            return status_error(self.name, 529, httpx.Headers(), data, self._secrets)
        if "rate_limit" in lowered:
            return status_error(self.name, 429, httpx.Headers(), data, self._secrets)
        return StreamError(self.name, f"the server reported: {redact(data, self._secrets)[:300]}")
