"""What an OpenAI-compatible server sends back: responses, stream chunks, usage.

Decoding is lenient: every field has a default, unknown fields are ignored,
``content: null`` and a missing ``usage`` are fine. Streamed tool-call deltas
carry an ``index`` and optional ``id``/``type``/``name`` (OpenAI sends those
once per call, llama.cpp repeats them in every piece).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ._types import ToolCall
from ._usage import Usage, usage_from_openai


class PromptTokensDetails(msgspec.Struct, frozen=True):
    cached_tokens: int | None = None
    audio_tokens: int | None = None


class CompletionTokensDetails(msgspec.Struct, frozen=True):
    reasoning_tokens: int | None = None
    audio_tokens: int | None = None
    accepted_prediction_tokens: int | None = None
    rejected_prediction_tokens: int | None = None


class WireUsage(msgspec.Struct, frozen=True):
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    total_tokens: int | None = 0
    prompt_tokens_details: PromptTokensDetails | None = None
    completion_tokens_details: CompletionTokensDetails | None = None
    # DeepSeek's names for the cached part of prompt_tokens.
    prompt_cache_hit_tokens: int | None = None

    def canonical(self) -> Usage:
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


class ResponseMessage(msgspec.Struct, frozen=True):
    role: str = "assistant"
    content: str | list[Any] | None = None
    reasoning_content: str | None = None
    # Some servers (vLLM, OpenRouter) call it ``reasoning``.
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCall] | None = None


class Choice(msgspec.Struct, frozen=True):
    index: int = 0
    message: ResponseMessage = msgspec.field(default_factory=ResponseMessage)
    finish_reason: str | None = None
    logprobs: Any = None


class ChatCompletion(msgspec.Struct, frozen=True):
    id: str = ""
    object: str = ""
    created: int = 0
    model: str = ""
    choices: list[Choice] = msgspec.field(default_factory=list)
    usage: WireUsage | None = None
    system_fingerprint: str | None = None
    service_tier: str | None = None


class FunctionCallDelta(msgspec.Struct, frozen=True):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct, frozen=True):
    index: int = 0
    id: str | None = None
    type: str | None = None
    function: FunctionCallDelta | None = None


class Delta(msgspec.Struct, frozen=True):
    role: str | None = None
    content: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallDelta] | None = None


class ChunkChoice(msgspec.Struct, frozen=True):
    index: int = 0
    delta: Delta = msgspec.field(default_factory=Delta)
    finish_reason: str | None = None
    logprobs: Any = None


class ChatCompletionChunk(msgspec.Struct, frozen=True):
    id: str = ""
    object: str = ""
    created: int = 0
    model: str = ""
    choices: list[ChunkChoice] = msgspec.field(default_factory=list)
    usage: WireUsage | None = None
    system_fingerprint: str | None = None


class ErrorDetail(msgspec.Struct, frozen=True):
    message: str = ""
    type: str | None = None
    code: str | int | None = None
    param: str | None = None


class ErrorBody(msgspec.Struct, frozen=True):
    """``{"error": {...}}`` (OpenAI, llama.cpp) or ``{"detail": ...}`` (FastAPI)."""

    error: ErrorDetail | str | None = None
    detail: Any = None


completion_decoder = msgspec.json.Decoder(ChatCompletion)
chunk_decoder = msgspec.json.Decoder(ChatCompletionChunk)
error_decoder = msgspec.json.Decoder(ErrorBody)
