"""The OpenAI-compatible provider (OpenAI, DeepSeek, Qwen/DashScope, llama.cpp, vLLM ...).

``POST {base_url}/chat/completions`` with a Bearer key. The body is the request as
the real API wants it (see :func:`openai_request_body`): ``model`` filled in from the
config when empty, ``tool_choice`` dropped without ``tools``, ``reasoning_content``
sent back only as ``send_reasoning`` says, ``reasoning_blocks`` never sent, an
assistant message with tool calls and no content sent with ``""`` (llama.cpp rejects
``null``), ``extra_body`` (config, then request) merged into the top level and
``extra_headers`` sent as headers.

Streaming reads Server-Sent Events (``_sse``), only choice 0. How a stream ends:

- ``data: [DONE]`` after a ``finish_reason``: complete; the rest of the body is
  drained so the connection is reused;
- ``[DONE]`` without any ``finish_reason`` (an interrupted llama.cpp stream), or the
  body ending without ``[DONE]`` and without a ``finish_reason``: a truncated
  :class:`StreamError` (retryable while nothing was delivered);
- the body ending cleanly without ``[DONE]`` after a ``finish_reason``: complete;
- an error chunk (top-level ``error``, vLLM's ``"object": "error"``, an ``error``
  event, or ``finish_reason: "error"``): the typed error of :mod:`._stream_errors`.

A server that ignores ``stream`` and answers with JSON is accepted (one delta).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal

import attrs
import msgspec

from .._decode import DECODE_ERRORS
from .._validators import positive
from ._checks import check_api_key, check_base_url, check_headers, headers_repr, secrets_of
from ._errors import InvalidResponseError, LlmError, RequestError, StreamError, redact
from ._http import open_stream, post, sse_chunks
from ._media_wire import ALL_MEDIA, openai_messages
from ._openai_wire import ChatCompletionChunk, ErrorDetail, chunk_decoder, completion_decoder
from ._openai_wire import response_from_completion as _response
from ._provider import OutputMode, ReadLimits
from ._request import ChatRequest
from ._sse import DEFAULT_MAX_EVENT_BYTES, SseEvent
from ._stream import ChatDelta, DeltaToolCall
from ._stream_errors import stream_error
from ._types import content_text
from .messages import ChatResponse

if TYPE_CHECKING:
    import httpx2

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEEPSEEK_BASE_URL = "https://api.deepseek.com/v1"
DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"

SendReasoning = bool | Literal["tool_calls"]


@attrs.frozen
class OpenAIConfig:
    """Where and how to reach one OpenAI-compatible endpoint."""

    #: The provider's name (in errors, usage and the registry).
    name: str = "openai"
    #: The API root, usually ending in ``/v1``.
    base_url: str = attrs.field(default=OPENAI_BASE_URL, validator=check_base_url)
    #: The Bearer key; checked up front, never shown in errors.
    api_key: str = attrs.field(default="", repr=False, validator=check_api_key)
    #: The model of requests that name none.
    model: str = ""
    #: Extra HTTP headers of every request (sensitive-looking values are redacted).
    headers: Mapping[str, str] = attrs.field(
        factory=dict, validator=check_headers, repr=headers_repr
    )
    #: Extra top-level body fields of every request.
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: Ask for usage in streams (``stream_options.include_usage``).
    include_usage: bool = True
    #: Send ``reasoning_content`` back: never, always, or only on tool-call turns.
    send_reasoning: SendReasoning = False
    #: The largest SSE line or event accepted, in bytes.
    max_event_bytes: int = attrs.field(default=DEFAULT_MAX_EVENT_BYTES, validator=positive)
    #: How the agent layer asks this server for structured output (``auto``): its
    #: ``response_format`` json_schema, a forced ``final_result`` tool, or the prompt.
    structured_output: OutputMode = "json_schema"
    #: Media kinds the model takes (``image``, ``audio``, ``file``); a part of another
    #: kind is :class:`~agcore_actors.llm.UnsupportedContent` before the request is
    #: sent (the local llama.cpp server without a vision projector takes none).
    input_media: frozenset[str] = attrs.field(default=ALL_MEDIA, converter=frozenset)


def openai_preset(api_key: str, model: str = "gpt-4o-mini", **kw: Any) -> OpenAIConfig:
    """OpenAI's API."""
    return OpenAIConfig(name="openai", base_url=OPENAI_BASE_URL, api_key=api_key, model=model, **kw)


def deepseek_preset(api_key: str, model: str = "deepseek-chat", **kw: Any) -> OpenAIConfig:
    """DeepSeek's API. Its thinking mode requires the ``reasoning_content`` of turns
    that called tools to be sent back (400 otherwise), so that is the default."""
    kw.setdefault("send_reasoning", "tool_calls")
    return OpenAIConfig(
        name="deepseek", base_url=DEEPSEEK_BASE_URL, api_key=api_key, model=model, **kw
    )


def qwen_preset(api_key: str, model: str = "qwen-plus", **kw: Any) -> OpenAIConfig:
    """Alibaba DashScope's compatible mode (Qwen)."""
    return OpenAIConfig(
        name="qwen", base_url=DASHSCOPE_BASE_URL, api_key=api_key, model=model, **kw
    )


_PRESETS = {
    "openai": openai_preset,
    "deepseek": deepseek_preset,
    "qwen": qwen_preset,
    "dashscope": qwen_preset,
    "tongyi": qwen_preset,
}


def preset(kind: str, api_key: str, model: str | None = None, **kw: Any) -> OpenAIConfig:
    """A preset by (case-insensitive) name: openai, deepseek, qwen/dashscope/tongyi."""
    factory = _PRESETS.get(kind.lower())
    if factory is None:
        raise ValueError(f"unknown provider type {kind!r}; known: {', '.join(_PRESETS)}")
    return factory(api_key, model, **kw) if model else factory(api_key, **kw)


_encoder = msgspec.json.Encoder()


def _keeps_reasoning(send: SendReasoning, message: dict[str, Any]) -> bool:
    return send is True or (send == "tool_calls" and bool(message.get("tool_calls")))


def openai_request_body(
    request: ChatRequest, config: OpenAIConfig, *, stream: bool
) -> tuple[bytes, dict[str, str]]:
    """The exact JSON body and the extra HTTP headers of ``request``; raises
    :class:`~agcore_actors.llm.UnsupportedContent` for a part the model does not take
    (see :mod:`~._media_wire`)."""
    body: dict[str, Any] = msgspec.to_builtins(request)
    extra_body = body.pop("extra_body", None)
    extra_headers = body.pop("extra_headers", None)
    body.pop("thinking_budget", None)  # not an OpenAI field (see ChatRequest)
    if not body.get("model"):
        body["model"] = config.model
    if not body.get("tools"):
        body.pop("tools", None)
        body.pop("tool_choice", None)
        body.pop("parallel_tool_calls", None)
    for message in body["messages"]:
        if message["role"] != "assistant":
            continue
        message.pop("reasoning_blocks", None)
        if not _keeps_reasoning(config.send_reasoning, message):
            message.pop("reasoning_content", None)
        if message.get("tool_calls") and message.get("content") is None:
            message["content"] = ""
    body["messages"] = openai_messages(body["messages"], config.input_media, config.name)
    if stream:
        body["stream"] = True
        if config.include_usage:
            body["stream_options"] = {"include_usage": True}
    else:
        body.pop("stream", None)
        body.pop("stream_options", None)
    body.update(config.extra_body)
    if extra_body:
        body.update(extra_body)
    headers = dict(config.headers)
    if extra_headers:
        headers.update(extra_headers)
    return _encoder.encode(body), headers


def delta_from_chunk(chunk: ChatCompletionChunk) -> ChatDelta:
    """Choice 0 of a stream chunk (and its usage) as one delta."""
    usage = None if chunk.usage is None else chunk.usage.canonical()
    for choice in chunk.choices or ():
        if choice.index != 0:
            continue
        d = choice.delta
        if d is None:
            return ChatDelta(finish_reason=choice.finish_reason, usage=usage)
        calls = None
        if d.tool_calls:
            calls = [
                DeltaToolCall(
                    t.index,
                    t.id,
                    None if t.function is None else t.function.name,
                    None if t.function is None else t.function.arguments,
                )
                for t in d.tool_calls
            ]
        return ChatDelta(
            content=d.content,
            reasoning=d.reasoning_content if d.reasoning_content is not None else d.reasoning,
            refusal=d.refusal,
            tool_calls=calls,
            finish_reason=choice.finish_reason,
            usage=usage,
            model=chunk.model or None,
            id=chunk.id or None,
        )
    return ChatDelta(usage=usage, model=chunk.model or None, id=chunk.id or None)


def delta_from_response(response: ChatResponse) -> ChatDelta:
    """A whole reply as one delta (for servers that answer a stream request with JSON)."""
    message = response.message
    calls = None
    if message.tool_calls:
        calls = [
            DeltaToolCall(i, c.id, c.function.name, c.function.arguments)
            for i, c in enumerate(message.tool_calls)
        ]
    return ChatDelta(
        content=None if message.content is None else content_text(message.content),
        reasoning=message.reasoning_content,
        refusal=message.refusal,
        tool_calls=calls,
        finish_reason=response.finish_reason,
        usage=None if response.usage.is_empty else response.usage,
        model=response.model or None,
        id=response.id or None,
    )


_VERSIONED = re.compile(r"/v\d")


def _is_done(event: SseEvent) -> bool:
    return event.data == b"[DONE]"


class OpenAICompatibleProvider:
    """An OpenAI-compatible endpoint; see the module doc for the wire rules."""

    __slots__ = ("_secrets", "_url", "config")

    def __init__(self, config: OpenAIConfig) -> None:
        self.config = config
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._secrets = secrets_of(config.api_key, config.headers)

    @property
    def name(self) -> str:
        """The config's name."""
        return self.config.name

    @property
    def structured_output(self) -> OutputMode:
        """The config's structured-output mode."""
        return self.config.structured_output

    def _headers(self, extra: dict[str, str], stream: bool) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.config.api_key:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        if stream:
            headers["accept"] = "text/event-stream"
            headers["cache-control"] = "no-store"
        headers.update(extra)
        return headers

    def _hinted(self, error: LlmError) -> LlmError:
        """A 404 from a base URL without a version path: say what is likely missing."""
        url = self.config.base_url
        if isinstance(error, RequestError) and error.status == 404 and not _VERSIONED.search(url):
            hint = f" (hint: base_url {url!r} has no version path such as /v1)"
            return RequestError(self.name, 404, error.body + hint, error.retry_after)
        return error

    async def chat(self, client: httpx2.AsyncClient, request: ChatRequest) -> ChatResponse:
        """One non-streamed attempt."""
        body, extra = openai_request_body(request, self.config, stream=False)
        headers = self._headers(extra, False)
        try:
            response = await post(client, self._url, body, headers, self.name, self._secrets)
        except LlmError as error:
            raise self._hinted(error) from None
        return self._parse(response.content, request)

    def _parse(self, content: bytes, request: ChatRequest) -> ChatResponse:
        try:
            completion = completion_decoder.decode(content)
        except DECODE_ERRORS as exc:
            text = redact(content.decode("utf-8", "replace"), self._secrets)
            raise InvalidResponseError(self.name, str(exc), text) from None
        response = _response(completion, self.name)
        if not response.model:  # llama-cpp-python echoes an empty model name
            response = msgspec.structs.replace(response, model=self._model(request))
        return response

    def _model(self, request: ChatRequest) -> str:
        """The model asked for, for servers that do not name the one that answered."""
        return request.model or self.config.model

    async def stream(
        self, client: httpx2.AsyncClient, request: ChatRequest, limits: ReadLimits
    ) -> AsyncGenerator[ChatDelta, None]:
        """One streamed attempt; see the module doc for how it ends."""
        body, extra = openai_request_body(request, self.config, stream=True)
        headers = self._headers(extra, True)
        try:
            async with open_stream(
                client, self._url, body, headers, self.name, self._secrets
            ) as response:
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    content = await response.aread()
                    if not content.strip():
                        raise StreamError(self.name, "the server sent an empty body, no events")
                    yield delta_from_response(self._parse(content, request))
                    return
                done = seen = finished = seen_model = False
                chunks = sse_chunks(
                    response, self.name, limits, self.config.max_event_bytes, _is_done
                )
                async with aclosing(chunks):
                    async for events in chunks:
                        for sse in events:
                            seen = True
                            if sse.data == b"[DONE]":
                                done = True
                            elif sse.data:  # an event without data carries nothing
                                delta = self._delta(sse)
                                finished = finished or delta.finish_reason is not None
                                if not seen_model and delta.model is None:
                                    delta = msgspec.structs.replace(
                                        delta, model=self._model(request) or None
                                    )
                                seen_model = True
                                yield delta
        except LlmError as error:
            raise self._hinted(error) from None
        if not seen:
            # llama.cpp answers some requests it cannot stream with an empty 200:
            # deterministic, so not worth a retry.
            raise StreamError(self.name, "the server sent no events")
        if not finished:
            what = "[DONE] came without a finish_reason" if done else "the stream ended early"
            raise StreamError(self.name, f"{what}: the answer is incomplete", truncated=True)

    def _delta(self, sse: SseEvent) -> ChatDelta:
        try:
            chunk = chunk_decoder.decode(sse.data)
        except DECODE_ERRORS as exc:
            if sse.event == "error":
                raise self._error(sse, None) from None
            raw = redact(sse.data.decode("utf-8", "replace"), self._secrets)[:200]
            raise StreamError(self.name, f"chunk parse failed: {exc} | raw: {raw}") from None
        if chunk.error is not None or chunk.object == "error" or sse.event == "error":
            raise self._error(sse, chunk)
        delta = delta_from_chunk(chunk)
        if delta.finish_reason == "error":
            raise self._error(sse, chunk)
        return delta

    def _error(self, sse: SseEvent, chunk: ChatCompletionChunk | None) -> LlmError:
        raw = sse.data.decode("utf-8", "replace")
        error = None if chunk is None else chunk.error
        if isinstance(error, ErrorDetail):
            kind, code, message = error.type, error.code, error.message or raw
        elif isinstance(error, str):
            kind, code, message = None, None, error
        elif chunk is not None and chunk.object == "error":
            kind, code, message = chunk.type, chunk.code, chunk.message or raw
        else:
            kind, code, message = None, None, raw
        return stream_error(
            self.name, message=message, kind=kind, code=code, raw=raw, secrets=self._secrets
        )
