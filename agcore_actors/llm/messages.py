"""The ProviderActor's protocol: what it accepts, what it answers, what it streams.

- ``await provider.ask(Chat(request))`` → :class:`ChatResponse` (one call,
  retried per the actor's policy), or a typed :class:`LlmError`.
- ``async with provider.stream(ChatStream(request)) as events`` → the
  :data:`StreamEvent` s below, ending with :class:`Finish` (which carries the
  assembled response, identical to what ``Chat`` would have returned), or an
  :class:`LlmError` raised from the iteration. A stream is retried only
  before its first output event; a :class:`Retrying` event says so.
  Leaving the block early cancels the call and closes the HTTP response.
- ``GetUsage`` → :class:`UsageReport` (per provider and in total);
  ``ResetUsage`` clears it; ``ListProviders`` → names and the default.

``provider`` names a registered provider; None means the default one.
"""

from __future__ import annotations

import msgspec

from ..actor import Request, StreamRequest
from ._types import AssistantMessage, ChatRequest, FinishReason
from ._usage import Usage


class ChatResponse(msgspec.Struct, frozen=True):
    """One model reply: the message, why it ended, and what it cost."""

    message: AssistantMessage
    finish_reason: FinishReason | None = None
    usage: Usage = msgspec.field(default_factory=Usage)
    model: str = ""
    id: str = ""
    provider: str = ""
    #: Attempts made for this reply (1 when it was not retried).
    attempts: int = 1

    @property
    def text(self) -> str:
        return self.message.text

    @property
    def reasoning(self) -> str | None:
        return self.message.reasoning_content


# -- stream events ----------------------------------------------------------------------


class Thinking(msgspec.Struct, frozen=True, tag=True):
    """A piece of the model's reasoning."""

    text: str


class ContentFirst(msgspec.Struct, frozen=True, tag=True):
    """The first piece of the answer after reasoning (thinking → answer)."""

    text: str


class Content(msgspec.Struct, frozen=True, tag=True):
    """A piece of the answer (the first one too, when the model did not reason)."""

    text: str


class ToolCallChunk(msgspec.Struct, frozen=True):
    """A piece of tool call ``index``: ``id`` and ``name`` come with its first
    piece only, ``arguments`` is the next part of the JSON text."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class ToolCalls(msgspec.Struct, frozen=True, tag=True):
    calls: list[ToolCallChunk]


class UsageUpdate(msgspec.Struct, frozen=True, tag=True):
    """Usage of the response so far (cumulative, not an increment)."""

    usage: Usage


class Retrying(msgspec.Struct, frozen=True, tag=True):
    """An attempt failed before any output; the call retries after ``delay`` s."""

    attempt: int
    delay: float
    error_kind: str
    error: str


class Finish(msgspec.Struct, frozen=True, tag=True):
    """The last event: the whole reply, as ``Chat`` would have returned it."""

    response: ChatResponse


StreamEvent = Thinking | ContentFirst | Content | ToolCalls | UsageUpdate | Retrying | Finish


# -- requests ---------------------------------------------------------------------------


class Chat(Request[ChatResponse], frozen=True, tag=True):
    request: ChatRequest
    provider: str | None = None


class ChatStream(StreamRequest[StreamEvent], frozen=True, tag=True):
    request: ChatRequest
    provider: str | None = None


class UsageReport(msgspec.Struct, frozen=True):
    total: Usage
    calls: int
    by_provider: dict[str, Usage]
    last: Usage | None = None
    cost: float = 0.0


class GetUsage(Request[UsageReport], frozen=True, tag=True):
    pass


class ResetUsage(Request[None], frozen=True, tag=True):
    pass


class ProviderList(msgspec.Struct, frozen=True):
    names: list[str]
    default: str | None


class ListProviders(Request[ProviderList], frozen=True, tag=True):
    pass


ProviderMsg = Chat | ChatStream | GetUsage | ResetUsage | ListProviders
