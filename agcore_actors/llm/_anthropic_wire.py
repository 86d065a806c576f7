"""The Anthropic Messages API's JSON shapes, and conversion to and from the common types.

Request (:func:`anthropic_request_body`): system and developer messages become the
``system`` prompt; tool results become ``tool_result`` blocks of a user message
(consecutive ones merged, as the API requires alternation); an assistant message
becomes its ``reasoning_blocks`` first (``thinking`` with its signature,
``redacted_thinking`` with its data, in order: the API rejects a tool-using turn
without them when thinking is on), then its text, then ``tool_use`` blocks;
``tool_choice`` maps to auto/any/tool/none (``parallel_tool_calls=False`` to its
``disable_parallel_tool_use``); ``stop`` to ``stop_sequences``; ``thinking_budget`` (or
else ``reasoning_effort``, by :data:`EFFORT_BUDGET`) to ``thinking`` with
``budget_tokens``, ``max_tokens`` raised above it; ``seed`` is not sent (no such field);
``max_tokens`` is required by the API; ``extra_body`` (e.g. ``{"thinking": {...}}``)
is merged into the body and ``extra_headers`` are sent as headers. Not sent: plain
``reasoning_content`` without blocks. Media parts (images, PDFs, text files, also inside
``tool_result`` content) as :mod:`~._media_wire` says.

Response (:func:`response_from_message`): text blocks are the content, ``thinking``
blocks the ``reasoning_content`` and, with ``redacted_thinking`` blocks, the
``reasoning_blocks``; ``tool_use`` blocks are the tool calls (``input`` re-encoded as
a JSON string); usage keeps cache reads and writes apart (Anthropic's
``input_tokens`` excludes them).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import msgspec

from ._media_wire import anthropic_blocks
from ._request import ChatRequest, NamedToolChoice
from ._types import (
    AssistantMessage,
    AssistantToolCall,
    Content,
    DeveloperMessage,
    FunctionCall,
    ReasoningBlock,
    RedactedThinkingBlock,
    SystemMessage,
    ThinkingBlock,
    ToolMessage,
    UserMessage,
    content_text,
    finish_reason,
)
from ._usage import Usage, usage_from_anthropic
from .messages import ChatResponse


class AnthropicUsage(msgspec.Struct, frozen=True):
    """``usage`` as Anthropic counts it; a field left out is None (message_delta
    events send only what changed)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None

    def canonical(self) -> Usage:
        """The same counts in the canonical :class:`Usage` convention."""
        return usage_from_anthropic(
            self.input_tokens or 0,
            self.output_tokens or 0,
            self.cache_read_input_tokens or 0,
            self.cache_creation_input_tokens or 0,
        )

    def updated(self, later: AnthropicUsage) -> AnthropicUsage:
        """These counts with every field ``later`` carries replaced (they are cumulative)."""
        return AnthropicUsage(
            *(
                old if new is None else new
                for old, new in zip(
                    msgspec.structs.astuple(self), msgspec.structs.astuple(later), strict=True
                )
            )
        )


class AnthropicBlock(msgspec.Struct, frozen=True):
    """A content block of a message (text, thinking, redacted_thinking, tool_use)."""

    type: str = ""
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None
    name: str | None = None
    input: Any = None


class AnthropicMessage(msgspec.Struct, frozen=True):
    """A non-streamed reply (and the ``message`` of ``message_start``)."""

    id: str = ""
    model: str = ""
    content: list[AnthropicBlock] = msgspec.field(default_factory=list)
    stop_reason: str | None = None
    usage: AnthropicUsage | None = None


class AnthropicDelta(msgspec.Struct, frozen=True):
    """The ``delta`` of content_block_delta and message_delta events."""

    type: str = ""
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None
    stop_reason: str | None = None


class AnthropicErrorDetail(msgspec.Struct, frozen=True):
    """The ``error`` of an error body or event."""

    type: str | None = None
    message: str = ""


class AnthropicEvent(msgspec.Struct, frozen=True):
    """One streamed event, any type."""

    type: str = ""
    index: int = 0
    message: AnthropicMessage | None = None
    content_block: AnthropicBlock | None = None
    delta: AnthropicDelta | None = None
    usage: AnthropicUsage | None = None
    error: AnthropicErrorDetail | str | None = None


#: The media kinds the Messages API takes (audio has no shape there).
ANTHROPIC_MEDIA: frozenset[str] = frozenset(("image", "file"))

message_decoder = msgspec.json.Decoder(AnthropicMessage)
event_decoder = msgspec.json.Decoder(AnthropicEvent)
_encoder = msgspec.json.Encoder()


def _blocks(
    content: Content | None, accepts: Collection[str] = ANTHROPIC_MEDIA, provider: str = "anthropic"
) -> list[dict[str, Any]]:
    return anthropic_blocks(content, accepts, provider)


def _arguments(text: str) -> Any:
    try:
        value = msgspec.json.decode(text) if text.strip() else {}
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        msgspec.to_builtins(block) for block in message.reasoning_blocks or ()
    ]
    blocks += _blocks(message.content)
    for call in message.tool_calls or ():
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.function.name,
                "input": _arguments(call.function.arguments),
            }
        )
    return blocks


def _tools(request: ChatRequest, body: dict[str, Any]) -> None:
    if not request.tools:
        return
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
    if request.parallel_tool_calls is False:
        body.setdefault("tool_choice", {"type": "auto"})
        if body["tool_choice"]["type"] != "none":
            body["tool_choice"]["disable_parallel_tool_use"] = True


#: Thinking tokens for a ``reasoning_effort`` when no ``thinking_budget`` is given
#: (1024 is the API's least).
EFFORT_BUDGET: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}


def _thinking(request: ChatRequest, body: dict[str, Any]) -> None:
    budget = request.thinking_budget
    if budget is None and request.reasoning_effort is not None:
        budget = EFFORT_BUDGET.get(request.reasoning_effort)
    if budget is None:
        return
    budget = max(budget, 1024)
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    # The API wants room for the answer beyond the thinking.
    if body["max_tokens"] <= budget:
        body["max_tokens"] = budget + body["max_tokens"]


def anthropic_request_body(
    request: ChatRequest,
    *,
    model: str,
    max_tokens: int,
    headers: Mapping[str, str],
    extra_body: Mapping[str, Any],
    stream: bool,
    provider: str = "anthropic",
    accepts: Collection[str] = ANTHROPIC_MEDIA,
) -> tuple[bytes, dict[str, str]]:
    """The exact JSON body and the extra HTTP headers of ``request`` (``model``,
    ``max_tokens``, ``headers`` and ``extra_body`` are the config's defaults).

    Raises :class:`~agcore_actors.llm.UnsupportedContent` for a part of a kind not in
    ``accepts`` (see :mod:`~._media_wire`)."""
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
            add("user", _blocks(message.content, accepts, provider))
        elif isinstance(message, ToolMessage):
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": content_text(message.content)
                if isinstance(message.content, str)
                else _blocks(message.content, accepts, provider),
            }
            add("user", [result])
        elif isinstance(message, AssistantMessage):
            add("assistant", _assistant_blocks(message))
        else:  # a deprecated function message: its result as user text
            add("user", _blocks(message.content))
    body: dict[str, Any] = {
        "model": request.model or model,
        "max_tokens": request.max_tokens or request.max_completion_tokens or max_tokens,
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
    _tools(request, body)
    _thinking(request, body)
    if stream:
        body["stream"] = True
    body.update(extra_body)
    if request.extra_body:
        body.update(request.extra_body)
    sent = dict(headers)
    if request.extra_headers:
        sent.update(request.extra_headers)
    return _encoder.encode(body), sent


def reasoning_block(block: AnthropicBlock) -> ReasoningBlock | None:
    """A thinking or redacted_thinking block in provider-neutral form, else None."""
    if block.type == "thinking":
        return ThinkingBlock(block.thinking or "", block.signature or None)
    if block.type == "redacted_thinking":
        return RedactedThinkingBlock(block.data or "")
    return None


def response_from_message(message: AnthropicMessage, provider: str) -> ChatResponse:
    """A non-streamed reply as a :class:`ChatResponse`."""
    texts: list[str] = []
    thinking: list[str] = []
    reasoning: list[ReasoningBlock] = []
    calls: list[AssistantToolCall] = []
    for block in message.content:
        if block.type == "text" and block.text is not None:
            texts.append(block.text)
        elif (kept := reasoning_block(block)) is not None:
            reasoning.append(kept)
            if isinstance(kept, ThinkingBlock):
                thinking.append(kept.thinking)
        elif block.type == "tool_use":
            arguments = _encoder.encode(block.input if block.input is not None else {}).decode()
            calls.append(
                AssistantToolCall(block.id or "", FunctionCall(block.name or "", arguments))
            )
    reply = AssistantMessage(
        content="".join(texts) if texts else None,
        reasoning_content="".join(thinking) if thinking else None,
        tool_calls=calls or None,
        reasoning_blocks=reasoning or None,
    )
    usage = Usage() if message.usage is None else message.usage.canonical()
    return ChatResponse(
        message=reply,
        finish_reason=finish_reason(message.stop_reason),
        usage=usage,
        model=message.model,
        id=message.id,
        provider=provider,
    )
