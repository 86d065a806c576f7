"""Stream assembly: provider deltas → stream events and one final message.

Each provider turns its wire format into :class:`ChatDelta` s (one per
chunk/event). A :class:`StreamAssembler` classifies them into the stream events of
:mod:`agcore_actors.llm.messages` and accumulates the final :class:`ChatResponse`:

- a tool-call piece comes first (``ToolCalls``), then reasoning
  (``Thinking``), then content: the first content piece after reasoning is
  ``ContentFirst``, every other one ``Content``; then refusal (``Refusal``); empty
  strings are not emitted; usage becomes ``UsageUpdate``;
- tool-call pieces are merged by ``index``: the first non-empty ``id`` and
  ``name`` win (llama.cpp repeats them in every piece, OpenAI sends them
  once) and ``arguments`` are concatenated; a piece whose ``id`` differs
  from the one already at its index starts a new call (servers that put
  every call at index 0);
- reasoning pieces that carry a ``reasoning_index`` (Anthropic's content block
  index) are also kept as signed blocks, in order: text and signature pieces of one
  index are concatenated, a redacted block is kept whole;
- the final message has ``content`` None when no content piece came (only
  tool calls), else the concatenation, so it equals the non-streamed reply.
"""

from __future__ import annotations

import msgspec

from ._types import (
    AssistantMessage,
    AssistantToolCall,
    FunctionCall,
    ReasoningBlock,
    RedactedThinkingBlock,
    ThinkingBlock,
    finish_reason,
)
from ._usage import Usage
from .messages import (
    ChatResponse,
    Content,
    ContentFirst,
    Refusal,
    StreamEvent,
    Thinking,
    ToolCallChunk,
    ToolCalls,
    UsageUpdate,
)


class DeltaToolCall(msgspec.Struct, frozen=True):
    """A piece of tool call ``index``: ``id`` and ``name`` with its first piece."""

    index: int = 0
    id: str | None = None
    name: str | None = None
    arguments: str | None = None


class ChatDelta(msgspec.Struct, frozen=True):
    """One provider chunk in common terms. ``usage`` is cumulative.

    ``reasoning_index`` names the signed reasoning block a ``reasoning`` or
    ``signature`` piece belongs to (None: plain reasoning text, kept only as
    ``reasoning_content``); ``redacted_reasoning`` is a whole redacted block.
    """

    content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[DeltaToolCall] | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    id: str | None = None
    reasoning_index: int | None = None
    signature: str | None = None
    redacted_reasoning: str | None = None


class _Call:
    __slots__ = ("arguments", "id", "name")

    def __init__(self) -> None:
        self.id = ""
        self.name = ""
        self.arguments: list[str] = []


class _Block:
    __slots__ = ("redacted", "signature", "text")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.signature: list[str] = []
        self.redacted: str | None = None

    def value(self) -> ReasoningBlock:
        if self.redacted is not None:
            return RedactedThinkingBlock(self.redacted)
        return ThinkingBlock("".join(self.text), "".join(self.signature) or None)


class StreamAssembler:
    """Feed deltas in order; read events from :meth:`feed`, the reply from :meth:`response`."""

    __slots__ = (
        "_blocks",
        "_calls",
        "_content",
        "_finish",
        "_id",
        "_model",
        "_reasoning",
        "_refusal",
        "_saw_thinking",
        "_slots",
        "_usage",
        "has_data",
    )

    def __init__(self) -> None:
        self._content: list[str] | None = None
        self._reasoning: list[str] | None = None
        self._refusal: list[str] | None = None
        self._calls: list[_Call] = []
        self._blocks: dict[int, _Block] = {}
        # stream index -> position in _calls of the call now at that index
        self._slots: dict[int, int] = {}
        self._saw_thinking = False
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._model = ""
        self._id = ""
        #: True once any content, reasoning, tool call or finish reason arrived.
        self.has_data = False

    def feed(self, delta: ChatDelta) -> list[StreamEvent]:
        """The events of one delta (possibly none), in order."""
        events: list[StreamEvent] = []
        if delta.model:
            self._model = delta.model
        if delta.id:
            self._id = delta.id
        if delta.tool_calls:
            chunks = [self._merge(piece) for piece in delta.tool_calls]
            events.append(ToolCalls(chunks))
            self.has_data = True
        if delta.reasoning is not None:
            if self._reasoning is None:
                self._reasoning = []
            self._reasoning.append(delta.reasoning)
            self.has_data = True
            if delta.reasoning:
                events.append(Thinking(delta.reasoning))
                self._saw_thinking = True
        if delta.content is not None:
            if self._content is None:
                self._content = []
            self._content.append(delta.content)
            self.has_data = True
            if delta.content:
                if self._saw_thinking:
                    self._saw_thinking = False
                    events.append(ContentFirst(delta.content))
                else:
                    events.append(Content(delta.content))
        if delta.refusal is not None:
            if self._refusal is None:
                self._refusal = []
            self._refusal.append(delta.refusal)
            self.has_data = True
            if delta.refusal:
                events.append(Refusal(delta.refusal))
        if delta.reasoning_index is not None:
            self._block(delta)
        if delta.finish_reason is not None:
            self._finish = delta.finish_reason
            self.has_data = True
        if delta.usage is not None:
            self._usage = delta.usage
            events.append(UsageUpdate(delta.usage))
        return events

    def _block(self, delta: ChatDelta) -> None:
        assert delta.reasoning_index is not None
        block = self._blocks.get(delta.reasoning_index)
        if block is None:
            block = self._blocks[delta.reasoning_index] = _Block()
        if delta.redacted_reasoning is not None:
            block.redacted = delta.redacted_reasoning
            self.has_data = True
        if delta.reasoning:
            block.text.append(delta.reasoning)
        if delta.signature:
            block.signature.append(delta.signature)

    def _merge(self, piece: DeltaToolCall) -> ToolCallChunk:
        slot = self._slots.get(piece.index)
        call = None if slot is None else self._calls[slot]
        if call is not None and piece.id and call.id and piece.id != call.id:
            call = None  # a new call reusing the index
        new_id = new_name = None
        if call is None:
            call = _Call()
            self._slots[piece.index] = len(self._calls)
            self._calls.append(call)
        if piece.id and not call.id:
            call.id = new_id = piece.id
        if piece.name and not call.name:
            call.name = new_name = piece.name
        if piece.arguments:
            call.arguments.append(piece.arguments)
        return ToolCallChunk(
            index=piece.index, id=new_id, name=new_name, arguments=piece.arguments or ""
        )

    @property
    def finish_reason(self) -> str | None:
        """The raw finish reason, once one came."""
        return self._finish

    @property
    def usage(self) -> Usage | None:
        """The latest (cumulative) usage, once one came."""
        return self._usage

    def message(self) -> AssistantMessage:
        """The assistant message assembled so far."""
        tool_calls = [
            AssistantToolCall(c.id, FunctionCall(c.name, "".join(c.arguments))) for c in self._calls
        ]
        blocks = [block.value() for block in self._blocks.values()]
        return AssistantMessage(
            content=None if self._content is None else "".join(self._content),
            reasoning_content=None if self._reasoning is None else "".join(self._reasoning),
            refusal=None if self._refusal is None else "".join(self._refusal),
            tool_calls=tool_calls or None,
            reasoning_blocks=blocks or None,
        )

    def response(self, provider: str = "", attempts: int = 1) -> ChatResponse:
        """The whole reply, as a non-streamed call returns it."""
        return ChatResponse(
            message=self.message(),
            finish_reason=finish_reason(self._finish),
            usage=self._usage or Usage(),
            model=self._model,
            id=self._id,
            provider=provider,
            attempts=attempts,
        )


def merge_chunks(deltas: list[ChatDelta]) -> AssistantMessage | None:
    """The assistant message of ``deltas``, or None when they carry no data."""
    assembler = StreamAssembler()
    for delta in deltas:
        assembler.feed(delta)
    return assembler.message() if assembler.has_data else None
