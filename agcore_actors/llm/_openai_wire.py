"""What an OpenAI-compatible server sends back: responses, stream chunks, usage, errors.

Decoding is lenient: every field has a default, unknown fields are ignored,
``content: null``, ``"choices": null`` (DeepSeek and Groq usage chunks),
``"delta": null`` (Azure), a missing ``usage`` and a tool call without an ``id`` (then
``""``) are fine. Streamed tool-call deltas carry an ``index`` and optional
``id``/``type``/``name`` (OpenAI sends those once per call, llama.cpp repeats them in
every piece). A chunk may instead be an
error: a top-level ``error`` (OpenAI, OpenRouter, which also ends the choice with
``finish_reason: "error"``) or vLLM's ``{"object": "error", "message": ...}``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._types import AssistantMessage, AssistantToolCall, FunctionCall, finish_reason
from ._usage import Usage, usage_from_openai
from .messages import ChatResponse


class PromptTokensDetails(msgspec.Struct, frozen=True):
    """``usage.prompt_tokens_details``."""

    cached_tokens: int | None = None
    audio_tokens: int | None = None


class CompletionTokensDetails(msgspec.Struct, frozen=True):
    """``usage.completion_tokens_details``."""

    reasoning_tokens: int | None = None
    audio_tokens: int | None = None
    accepted_prediction_tokens: int | None = None
    rejected_prediction_tokens: int | None = None


class WireUsage(msgspec.Struct, frozen=True):
    """``usage`` as OpenAI-compatible servers count it (cached tokens inside the prompt)."""

    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    total_tokens: int | None = 0
    prompt_tokens_details: PromptTokensDetails | None = None
    completion_tokens_details: CompletionTokensDetails | None = None
    # DeepSeek's names for the cached part of prompt_tokens.
    prompt_cache_hit_tokens: int | None = None

    def canonical(self) -> Usage:
        """The same counts in the canonical :class:`Usage` convention."""
        cached = 0
        if self.prompt_tokens_details is not None:
            cached = self.prompt_tokens_details.cached_tokens or 0
        if not cached and self.prompt_cache_hit_tokens:
            cached = self.prompt_cache_hit_tokens
        reasoning = 0
        if self.completion_tokens_details is not None:
            reasoning = self.completion_tokens_details.reasoning_tokens or 0
        return usage_from_openai(
            self.prompt_tokens or 0, self.completion_tokens or 0, cached, reasoning
        )


class ResponseToolCall(msgspec.Struct, frozen=True):
    """A tool call of a completion; some servers leave ``id`` out (or send ``""``) on
    parallel calls: it is then ``""``, and the agent layer gives it a fresh one."""

    function: FunctionCall = FunctionCall("")
    id: str = ""
    type: str = "function"


class ResponseMessage(msgspec.Struct, frozen=True):
    """``choices[].message`` of a completion."""

    role: str = "assistant"
    content: str | list[Any] | None = None
    reasoning_content: str | None = None
    # Some servers (vLLM, OpenRouter) call it ``reasoning``.
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[ResponseToolCall] | None = None


class Choice(msgspec.Struct, frozen=True):
    """One choice of a completion."""

    index: int = 0
    message: ResponseMessage = msgspec.field(default_factory=ResponseMessage)
    finish_reason: str | None = None
    logprobs: Any = None


class ChatCompletion(msgspec.Struct, frozen=True):
    """A non-streamed reply (``chat.completion``)."""

    id: str = ""
    object: str = ""
    created: int = 0
    model: str = ""
    choices: list[Choice] | None = None
    usage: WireUsage | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None


class FunctionCallDelta(msgspec.Struct, frozen=True):
    """A piece of a streamed tool call's function."""

    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct, frozen=True):
    """A piece of a streamed tool call."""

    index: int = 0
    id: str | None = None
    type: str | None = None
    function: FunctionCallDelta | None = None


class Delta(msgspec.Struct, frozen=True):
    """``choices[].delta`` of a stream chunk."""

    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(msgspec.Struct, frozen=True):
    """One choice of a stream chunk."""

    index: int = 0
    delta: Delta | None = None
    finish_reason: str | None = None
    logprobs: Any = None


class ErrorDetail(msgspec.Struct, frozen=True):
    """The ``error`` object of an error body or an in-stream error."""

    message: str = ""
    type: str | None = None
    code: str | int | None = None
    param: str | None = None


class ChatCompletionChunk(msgspec.Struct, frozen=True):
    """One event of a stream (``chat.completion.chunk``), or an in-stream error."""

    id: str = ""
    object: str = ""
    created: int = 0
    model: str = ""
    choices: list[ChunkChoice] | None = None
    usage: WireUsage | None = None
    system_fingerprint: str | None = None
    error: ErrorDetail | str | None = None
    # vLLM's in-stream error: {"object": "error", "message": ..., "type": ..., "code": ...}
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class ErrorBody(msgspec.Struct, frozen=True):
    """``{"error": {...}}`` (OpenAI, llama.cpp), ``{"detail": ...}`` (FastAPI) or
    ``{"object": "error", "message": ...}`` (vLLM)."""

    error: ErrorDetail | str | None = None
    detail: Any = None
    message: str | None = None


completion_decoder = msgspec.json.Decoder(ChatCompletion)
chunk_decoder = msgspec.json.Decoder(ChatCompletionChunk)
error_decoder = msgspec.json.Decoder(ErrorBody)


def response_from_completion(completion: ChatCompletion, provider: str) -> ChatResponse:
    """Choice 0 of a completion as a :class:`ChatResponse`."""
    usage = Usage() if completion.usage is None else completion.usage.canonical()
    if not completion.choices:
        return ChatResponse(
            message=AssistantMessage(""),
            usage=usage,
            model=completion.model,
            id=completion.id,
            provider=provider,
        )
    choice = completion.choices[0]
    wire = choice.message
    content = wire.content if wire.content is None or isinstance(wire.content, str) else None
    if isinstance(wire.content, list):
        texts = (part.get("text") for part in wire.content if isinstance(part, dict))
        content = "".join(text for text in texts if isinstance(text, str))
    message = AssistantMessage(
        content=content,
        reasoning_content=wire.reasoning_content
        if wire.reasoning_content is not None
        else wire.reasoning,
        refusal=wire.refusal,
        tool_calls=[AssistantToolCall(c.id, c.function) for c in wire.tool_calls]
        if wire.tool_calls
        else None,
    )
    return ChatResponse(
        message=message,
        finish_reason=finish_reason(choice.finish_reason),
        usage=usage,
        model=completion.model,
        id=completion.id,
        provider=provider,
    )
