"""The ProviderActor's protocol: what it accepts, what it answers, what it streams.

========================================  ============================================
request                                   reply
========================================  ============================================
``Chat(request, provider=None)``          :class:`ChatResponse`, or an :class:`LlmError`
``ChatStream(request, provider=None)``    a stream of :data:`StreamEvent`, ending with
                                          :class:`Finish`, or an :class:`LlmError`
                                          raised from the iteration
``GetUsage()``                            :class:`UsageReport`
``ResetUsage()``                          None
``ListProviders()``                       :class:`ProviderList`
========================================  ============================================

What cancelling the asker does:

- ``Chat``: cancels the attempt in progress (its HTTP response is closed before the
  cancellation completes) or the backoff sleep; no hook fires.
- ``ChatStream``: the same when the asker is cancelled or leaves the stream early;
  events already delivered stay delivered.
- ``GetUsage``, ``ResetUsage``, ``ListProviders``: answered at once, without waiting;
  cancelling the asker changes nothing.

``provider`` names a registered provider; None means the default one. A stream is
retried only before its first output event, and a :class:`Retrying` event says so;
its :class:`Finish` carries the same response ``Chat`` would have returned. Importers
use this module qualified: ``from agcore_actors.llm import messages as lm``.
"""

from __future__ import annotations

import msgspec

from .._exports import publish
from ..actor import Request, StreamRequest
from ._request import ChatRequest
from ._types import AssistantMessage, FinishReason
from ._usage import Usage

__all__ = [
    "Chat",
    "ChatResponse",
    "ChatStream",
    "Content",
    "ContentFirst",
    "Finish",
    "GetUsage",
    "ListProviders",
    "ProviderList",
    "ProviderMsg",
    "Refusal",
    "ResetUsage",
    "Retrying",
    "StreamEvent",
    "Thinking",
    "ToolCallChunk",
    "ToolCalls",
    "UsageReport",
    "UsageUpdate",
]


# -- replies ----------------------------------------------------------------------------


class ChatResponse(msgspec.Struct, frozen=True, kw_only=True):
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
        """The reply's text content."""
        return self.message.text

    @property
    def reasoning(self) -> str | None:
        """The reply's reasoning text, if the model reasoned."""
        return self.message.reasoning_content


class UsageReport(msgspec.Struct, frozen=True, kw_only=True):
    """Usage since the last reset: in total, per provider, and of the last call."""

    total: Usage
    calls: int
    by_provider: dict[str, Usage]
    last: Usage | None = None
    cost: float = 0.0


class ProviderList(msgspec.Struct, frozen=True):
    """The registered providers and the default one (and how each takes structured
    output: ``json_schema``, ``tool`` or ``prompted``)."""

    names: list[str]
    default: str | None
    structured_output: dict[str, str] = msgspec.field(default_factory=dict)


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


class Refusal(msgspec.Struct, frozen=True, tag=True):
    """A piece of the model's refusal (OpenAI's ``refusal``), apart from the answer."""

    text: str


class ToolCallChunk(msgspec.Struct, frozen=True, kw_only=True):
    """A piece of tool call ``index``: ``id`` and ``name`` come with its first
    piece only, ``arguments`` is the next part of the JSON text."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class ToolCalls(msgspec.Struct, frozen=True, tag=True):
    """Pieces of one or more tool calls."""

    calls: list[ToolCallChunk]


class UsageUpdate(msgspec.Struct, frozen=True, tag=True):
    """Usage of the response so far (cumulative, not an increment)."""

    usage: Usage


class Retrying(msgspec.Struct, frozen=True, tag=True, kw_only=True):
    """An attempt failed before any output; the call retries after ``delay`` s."""

    attempt: int
    delay: float
    error_kind: str
    error: str


class Finish(msgspec.Struct, frozen=True, tag=True):
    """The last event: the whole reply, as ``Chat`` would have returned it."""

    response: ChatResponse


StreamEvent = (
    Thinking | ContentFirst | Content | Refusal | ToolCalls | UsageUpdate | Retrying | Finish
)


# -- requests ---------------------------------------------------------------------------


class Chat(Request[ChatResponse], frozen=True, tag=True):
    """One model call, retried per the actor's policy."""

    request: ChatRequest
    provider: str | None = None


class ChatStream(StreamRequest[StreamEvent], frozen=True, tag=True):
    """One streamed model call: events as they come, the whole reply last."""

    request: ChatRequest
    provider: str | None = None


class GetUsage(Request[UsageReport], frozen=True, tag=True):
    """Usage accounted since the start or the last reset."""


class ResetUsage(Request[None], frozen=True, tag=True):
    """Forget the usage accounted so far."""


class ListProviders(Request[ProviderList], frozen=True, tag=True):
    """The registered providers' names and the default."""


ProviderMsg = Chat | ChatStream | GetUsage | ResetUsage | ListProviders

publish(__name__, __all__)
