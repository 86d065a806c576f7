"""The events a Session's turn streams (:data:`TurnEvent`) and what a turn ends with.

Defined here, used from :mod:`agcore_actors.agent.messages` (their public home,
with the protocol's overview): plain immutable msgspec structs, tagged by class name
on the wire. Nothing here runs or awaits.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..llm import Usage

__all__ = [
    "ApprovalRequested",
    "AwaitingCall",
    "Compacted",
    "ContentStarted",
    "ElicitationRequested",
    "LimitReached",
    "ModelCall",
    "ModelFallback",
    "RetryingModel",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
    "ToolCallStatus",
    "ToolHookChanged",
    "TurnCancelled",
    "TurnCompleted",
    "TurnEvent",
    "TurnFailed",
    "TurnResult",
    "TurnStarted",
    "TurnStatus",
    "TurnSuspended",
    "UsageReported",
]

TurnStatus = Literal["completed", "cancelled", "failed", "blocked", "suspended"]
ToolCallStatus = Literal[
    "ok", "error", "timeout", "denied", "cancelled", "invalid_arguments", "unknown_tool"
]

# -- events ------------------------------------------------------------------------------


class TurnStarted(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """The turn began: the user's message is durable in the store."""

    session: str
    turn: str
    agent: str


class TextDelta(msgspec.Struct, frozen=True, tag=True):
    """A piece of the answer's text."""

    text: str


class ThinkingDelta(msgspec.Struct, frozen=True, tag=True):
    """A piece of the model's reasoning."""

    text: str


class ContentStarted(msgspec.Struct, frozen=True, tag=True):
    """The first piece of the answer after reasoning (thinking → answer)."""

    text: str


class RetryingModel(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A model call failed before any output and will be tried again after ``delay`` s."""

    attempt: int
    delay: float
    error: str


class Compacted(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """The history was compacted before a model call (``reactive`` after an overflow)."""

    tokens_before: int
    tokens_after: int
    steps: list[str]
    reactive: bool = False


class ToolCallStarted(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """The model asked for a tool call; it runs now (or waits for approval)."""

    call_id: str
    name: str
    arguments: str


class ApprovalRequested(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A tool call waits for :class:`Approve`; no answer within ``timeout`` s denies it
    (``suspends``: the turn suspends instead; answer it with :class:`AnswerTurn`)."""

    call_id: str
    name: str
    arguments: str
    timeout: float
    suspends: bool = False


class AwaitingCall(msgspec.Struct, frozen=True, kw_only=True):
    """A call of a suspended turn that waits for an answer (its arguments: JSON text):
    an approval of call ``call_id``, or (``kind`` ``elicitation``) the question an MCP
    ``server`` asked during tool call ``tool_call`` — then ``call_id`` names the question
    (``<tool_call>.e<n>``, the call's n-th) and is what :class:`AnswerTurn` answers."""

    call_id: str
    name: str
    arguments: str = ""
    #: ``deferred``: the tool raised ``CallDeferred`` (``message``: its note); answer
    #: it with its ``result``.
    kind: Literal["approval", "elicitation", "deferred"] = "approval"
    #: Elicitations: the tool call that asked, the server, its question and the JSON
    #: schema of the answer's ``content`` (JSON text).
    tool_call: str = ""
    server: str = ""
    message: str = ""
    schema: str = ""


class ElicitationRequested(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """An MCP server asks the person something during a tool call: answer with
    :class:`AnswerElicitation`; no answer within ``timeout`` s declines it."""

    elicitation_id: str
    server: str
    message: str
    #: The JSON schema of the answer's ``content`` (JSON text; "{}" when none).
    schema: str
    timeout: float
    #: The turn suspends instead of waiting: answer with :class:`AnswerTurn`
    #: (``call_id`` = ``elicitation_id``, ``action``, ``content``).
    suspends: bool = False
    #: The tool call the question came from ("" when it could not be told).
    call_id: str = ""


class ToolCallProgress(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A running tool call's progress, as its MCP server reported it."""

    call_id: str
    server: str
    progress: float
    total: float | None = None
    message: str | None = None


class ToolCallFinished(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, tag=True):
    """A tool call ended; ``content`` is the text the model is shown, ``media`` a
    placeholder per image, audio or file part it is shown too (never their data)."""

    call_id: str
    name: str
    status: ToolCallStatus
    content: str
    media: list[str] = msgspec.field(default_factory=list)


class UsageReported(msgspec.Struct, frozen=True, tag=True):
    """Usage of one model response (also of a failed attempt that reported some), and
    the provider and model that answered it."""

    usage: Usage
    provider: str = ""
    #: The model that answered (as the response named it, else the one asked for).
    model: str = ""
    #: What it cost at the agent's price table (0 without a price).
    cost: float = 0.0
    #: The model asked for (the agent's settings; may differ from ``model``).
    request_model: str = ""
    #: The response's id, as the provider gave it ("" when it gave none).
    response_id: str = ""
    #: Why the response ended (``stop``, ``tool_calls``, ``length``...; "" if not said).
    finish_reason: str = ""


class ModelFallback(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A model call failed before any output with an error the agent falls back on; the
    next model of its chain (``to_provider``/``to_model``) is tried now."""

    from_provider: str
    from_model: str
    to_provider: str
    to_model: str
    error_kind: str
    error: str


class LimitReached(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A budget limit was exceeded (``limit`` its name, ``value`` its setting, ``used``
    what was spent); the turn fails with ``limit_exceeded`` right after."""

    limit: str
    value: float
    used: float


class ToolHookChanged(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """A tool hook denied a call, changed its arguments (``arguments``: the new ones),
    or changed its result (``what``: ``denied``, ``arguments`` or ``result``)."""

    call_id: str
    name: str
    what: Literal["denied", "arguments", "result"]
    arguments: str = ""
    reason: str = ""


class ModelCall(msgspec.Struct, frozen=True, kw_only=True):
    """One model call of a turn: who answered, what it used and cost."""

    provider: str
    model: str
    usage: Usage = msgspec.field(default_factory=Usage)
    cost: float = 0.0
    #: The call answered after this many models of the chain had failed (0: the first).
    fallback: int = 0


class TurnResult(msgspec.Struct, frozen=True, kw_only=True):
    """How a turn ended, and what it produced."""

    session: str
    turn: str
    status: TurnStatus
    #: The final answer's text ("" when the turn did not get one).
    text: str = ""
    #: The final answer decoded as the agent's output type, as JSON-able data.
    output: object = None
    usage: Usage = msgspec.field(default_factory=Usage)
    #: Model calls made in this turn.
    model_calls: int = 0
    tool_calls: int = 0
    #: ``kind`` and message of the error, for failed turns (and the reason of a
    #: ``blocked`` one).
    error_kind: str = ""
    error: str = ""
    #: Every model call of the turn, in order: the provider and model that answered.
    calls: list[ModelCall] = msgspec.field(default_factory=list)
    #: What the turn cost at the agent's price table.
    cost: float = 0.0
    #: The calls a ``suspended`` turn waits for answers to.
    awaiting: list[AwaitingCall] = msgspec.field(default_factory=list)


class TurnCompleted(msgspec.Struct, frozen=True, tag=True):
    """The last event of a turn that ended with an answer."""

    result: TurnResult


class TurnCancelled(msgspec.Struct, frozen=True, tag=True):
    """The last event of a cancelled turn (committed, every tool call answered)."""

    result: TurnResult


class TurnFailed(msgspec.Struct, frozen=True, tag=True):
    """The last event of a turn that failed with a typed error (committed as far as it got)."""

    result: TurnResult


class TurnSuspended(msgspec.Struct, frozen=True, tag=True):
    """The last event of a turn that waits for answers (``result.awaiting``); stored
    as far as it got, resumed by :class:`AnswerTurn`."""

    result: TurnResult


TurnEvent = (
    TurnStarted
    | TextDelta
    | ThinkingDelta
    | ContentStarted
    | RetryingModel
    | Compacted
    | ToolCallStarted
    | ApprovalRequested
    | ElicitationRequested
    | ToolCallProgress
    | ToolCallFinished
    | ToolHookChanged
    | UsageReported
    | ModelFallback
    | LimitReached
    | TurnCompleted
    | TurnCancelled
    | TurnFailed
    | TurnSuspended
)
