"""The OpenAI-compatible provider (OpenAI, DeepSeek, Qwen/DashScope, llama.cpp, vLLM ...).

``POST {base_url}/chat/completions`` with a Bearer key. The body is the
request as the real API wants it: ``model`` filled in from the config when
empty, ``tool_choice`` dropped without ``tools``, ``reasoning_content``
stripped from assistant messages unless ``send_reasoning`` (DeepSeek rejects
it), an assistant message with tool calls and no content sent with ``""``
(llama.cpp rejects ``null``), ``extra_body`` (config, then request) merged
into the top level and ``extra_headers`` sent as headers.

Streaming parses Server-Sent Events with httpx-sse (comments, ``event:``
lines, multi-line ``data``, CRLF and UTF-8 split across reads are handled
there), stops at ``data: [DONE]`` and reports a stream that ends without it
as a :class:`StreamError`. A server that ignores ``stream`` and answers with
JSON is accepted (one delta). Only choice 0 is streamed.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import attrs
import httpx
import msgspec
from httpx_sse import EventSource

from ._errors import InvalidResponseError, LlmError, StreamError, redact
from ._openai_wire import ChatCompletion, ChatCompletionChunk, chunk_decoder, completion_decoder
from ._provider import error_message, open_stream, post, status_error
from ._stream import ChatDelta, DeltaToolCall
from ._types import AssistantMessage, ChatRequest, content_text, finish_reason
from ._usage import Usage
from .messages import ChatResponse

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEEPSEEK_BASE_URL = "https://api.deepseek.com/v1"
DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"


@attrs.frozen
class OpenAIConfig:
    """Where and how to reach one OpenAI-compatible endpoint."""

    name: str = "openai"
    base_url: str = OPENAI_BASE_URL
    api_key: str = attrs.field(default="", repr=False)
    model: str = ""
    headers: Mapping[str, str] = attrs.field(factory=dict)
    extra_body: Mapping[str, Any] = attrs.field(factory=dict)
    #: Ask for usage in streams (``stream_options.include_usage``).
    include_usage: bool = True
    #: Send ``reasoning_content`` of earlier assistant messages back.
    send_reasoning: bool = False


def openai_preset(api_key: str, model: str = "gpt-4o-mini", **kw: Any) -> OpenAIConfig:
    return OpenAIConfig(name="openai", base_url=OPENAI_BASE_URL, api_key=api_key, model=model, **kw)


def deepseek_preset(api_key: str, model: str = "deepseek-chat", **kw: Any) -> OpenAIConfig:
    return OpenAIConfig(
        name="deepseek", base_url=DEEPSEEK_BASE_URL, api_key=api_key, model=model, **kw
    )


def qwen_preset(api_key: str, model: str = "qwen-plus", **kw: Any) -> OpenAIConfig:
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


def request_body(
    request: ChatRequest, config: OpenAIConfig, *, stream: bool
) -> tuple[bytes, dict[str, str]]:
    """The exact JSON body and the extra HTTP headers of ``request``."""
    body: dict[str, Any] = msgspec.to_builtins(request)
    extra_body = body.pop("extra_body", None)
    extra_headers = body.pop("extra_headers", None)
    if not body.get("model"):
        body["model"] = config.model
    if not body.get("tools"):
        body.pop("tools", None)
        body.pop("tool_choice", None)
        body.pop("parallel_tool_calls", None)
    for message in body["messages"]:
        if message["role"] != "assistant":
            continue
        if not config.send_reasoning:
            message.pop("reasoning_content", None)
        if message.get("tool_calls") and message.get("content") is None:
            message["content"] = ""
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


def response_from_completion(completion: ChatCompletion, provider: str) -> ChatResponse:
    usage = Usage() if completion.usage is None else completion.usage.canonical()
    if not completion.choices:
        return ChatResponse(
            AssistantMessage(""), None, usage, completion.model, completion.id, provider
        )
    choice = completion.choices[0]
    wire = choice.message
    content = wire.content if wire.content is None or isinstance(wire.content, str) else None
    if isinstance(wire.content, list):
        content = "".join(part.get("text", "") for part in wire.content if isinstance(part, dict))
    message = AssistantMessage(
        content=content,
        reasoning_content=wire.reasoning_content
        if wire.reasoning_content is not None
        else wire.reasoning,
        refusal=wire.refusal,
        tool_calls=wire.tool_calls or None,
    )
    return ChatResponse(
        message,
        finish_reason(choice.finish_reason),
        usage,
        completion.model,
        completion.id,
        provider,
    )


def delta_from_chunk(chunk: ChatCompletionChunk) -> ChatDelta:
    usage = None if chunk.usage is None else chunk.usage.canonical()
    for choice in chunk.choices:
        if choice.index != 0:
            continue
        d = choice.delta
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


class OpenAICompatibleProvider:
    """An OpenAI-compatible endpoint; see the module doc for the wire rules."""

    __slots__ = ("_secrets", "_url", "config")

    def __init__(self, config: OpenAIConfig) -> None:
        self.config = config
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._secrets = (config.api_key,) if config.api_key else ()

    @property
    def name(self) -> str:
        return self.config.name

    def _headers(self, extra: dict[str, str], stream: bool) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.config.api_key:
            headers["authorization"] = f"Bearer {self.config.api_key}"
        if stream:
            headers["accept"] = "text/event-stream"
            headers["cache-control"] = "no-store"
        headers.update(extra)
        return headers

    async def chat(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatResponse:
        body, extra = request_body(request, self.config, stream=False)
        headers = self._headers(extra, False)
        response = await post(client, self._url, body, headers, self.name, self._secrets)
        return self._parse(response.content)

    def _parse(self, content: bytes) -> ChatResponse:
        try:
            completion = completion_decoder.decode(content)
        except msgspec.DecodeError as exc:
            text = redact(content.decode("utf-8", "replace"), self._secrets)
            raise InvalidResponseError(self.name, str(exc), text) from None
        return response_from_completion(completion, self.name)

    async def stream(
        self, client: httpx.AsyncClient, request: ChatRequest
    ) -> AsyncGenerator[ChatDelta, None]:
        body, extra = request_body(request, self.config, stream=True)
        headers = self._headers(extra, True)
        async with open_stream(
            client, self._url, body, headers, self.name, self._secrets
        ) as response:
            ctype = response.headers.get("content-type", "")
            if "text/event-stream" not in ctype:
                content = await response.aread()
                if not content.strip():
                    raise StreamError(self.name, "the server sent an empty body, no events")
                yield delta_from_response(self._parse(content))
                return
            events = EventSource(response).aiter_sse()
            done = seen = False
            async with contextlib.aclosing(events):
                async for sse in events:
                    seen = True
                    data = sse.data
                    if data == "[DONE]":
                        done = True
                        break
                    if not data:
                        continue  # an event without data (only ``event:``/``id:``)
                    if sse.event == "error" or data.startswith('{"error"'):
                        raise self._stream_error_event(data)
                    try:
                        chunk = chunk_decoder.decode(data)
                    except msgspec.DecodeError as exc:
                        raw = redact(data, self._secrets)[:200]
                        raise StreamError(
                            self.name, f"chunk parse failed: {exc} | raw: {raw}"
                        ) from None
                    yield delta_from_chunk(chunk)
            if not seen:
                # llama.cpp answers some requests it cannot stream with an empty 200:
                # deterministic, so not worth a retry.
                raise StreamError(self.name, "the server sent no events")
            if not done:
                raise StreamError(self.name, "the stream ended without [DONE]", truncated=True)

    def _stream_error_event(self, data: str) -> LlmError:
        """An error the server reported inside the stream (OpenAI, vLLM, llama.cpp)."""
        lowered = data.lower()
        if "rate_limit" in lowered:
            return status_error(self.name, 429, httpx.Headers(), data, self._secrets)
        if "context_length" in lowered or "maximum context length" in lowered:
            return status_error(self.name, 400, httpx.Headers(), data, self._secrets)
        message = redact(error_message(data), self._secrets)
        return StreamError(self.name, f"the server reported: {message}")
