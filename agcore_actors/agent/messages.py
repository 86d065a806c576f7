"""The Session actor's protocol: what it accepts, what it answers, what it streams.

Requests, their replies, and what cancelling the asker does::

    SubmitTurn(text, turn, settings, parts)  (stream) -> TurnEvent...  cancels the turn,
                                                  which commits first
    RunTurn(text, turn, settings, parts)   -> TurnResult   cancels the turn, which
                                                  commits first
    CancelTurn(mode)                 -> bool           nothing (answered at once)
    Approve(call_id, allow, reason)  -> bool           nothing (answered at once)
    AnswerElicitation(elicitation_id, action, content)
                                     -> bool           nothing (answered at once)
    Elicit(server, message, schema)  -> ElicitationAnswer  withdraws the question (what
                                                       an MCP server asks during a
                                                       tool call; declined on timeout)
    SwitchAgent(agent)               -> str            nothing (the previous agent's name)
    SetFacts(set, remove)            -> None           nothing (durable when it replies,
                                                       or with the running turn)
    GetSessionInfo()                 -> SessionInfo    nothing
    AnswerTurn(turn, call_id, allow, reason, result, resume, action, content)
                                     -> AnswerResult   the resumed turn is cancelled
                                                       (and committed); the answer stays
    ResumeTurn()                     -> TurnResult     cancels the resumed turn, which
                                                       commits first
    ReportProgress(call_id, ...)     (told)            shown as ToolCallProgress by the
                                                       running turn, else dropped

One turn runs at a time; further ``SubmitTurn``/``RunTurn`` wait in order behind it, up
to the session's queue bound (then :class:`~agcore_actors.agent.SessionBusy`). Every
turn ends with exactly one of :class:`TurnCompleted`, :class:`TurnCancelled` or
:class:`TurnFailed` (also for a turn a guardrail blocked: its status is ``blocked``) as
its last event, and is committed to the session store before
that event is sent, with every tool call the model made answered exactly once.

Suspended turns (an agent with ``approvals="suspend"``): a turn whose tool call needs
approval ends with :class:`TurnSuspended` instead — the calls that completed are stored,
the turn stays open in the store, the session takes no new turn
(:class:`~agcore_actors.agent.SessionSuspended`) until an :class:`AnswerTurn` for each of
its :class:`AwaitingCall` s (from this process or another, after restarts) resumes it
and it ends as any turn does, or a ``CancelTurn`` commits it ``cancelled``. An answer
given twice is recorded once (``duplicate``); one for a turn that no longer waits raises
:class:`~agcore_actors.agent.StaleAnswer`. With ``elicitations="suspend"`` an MCP
server's question during a tool call suspends the turn the same way: its
:class:`AwaitingCall` is of ``kind`` ``elicitation`` and is answered with ``action`` and
``content``.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from ..actor import Request, StreamRequest
from ..llm import ContentPart, Usage

__all__ = [
    "AnswerElicitation",
    "AnswerResult",
    "AnswerStatus",
    "AnswerTurn",
    "ApprovalRequested",
    "Approve",
    "AwaitingCall",
    "CancelMode",
    "CancelTurn",
    "Compacted",
    "ContentStarted",
    "Elicit",
    "ElicitationAnswer",
    "ElicitationRequested",
    "GetSessionInfo",
    "LimitReached",
    "ModelCall",
    "ModelFallback",
    "ModelOverrides",
    "ReportProgress",
    "ResumeTurn",
    "RetryingModel",
    "RunTurn",
    "SessionInfo",
    "SessionMsg",
    "SetFacts",
    "SubmitTurn",
    "SwitchAgent",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallFinished",
    "ToolCallProgress",
    "ToolCallStarted",
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

CancelMode = Literal["immediate", "after_turn"]
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

# -- requests ----------------------------------------------------------------------------


class ModelOverrides(
    msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, forbid_unknown_fields=True
):
    """Model settings of one turn, over the agent's (None: the agent's own); applied to
    every model of its fallback chain."""

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    seed: int | None = None
    #: ``"auto"``, ``"none"``, ``"required"`` or a tool's name.
    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    thinking_budget: int | None = None


class SubmitTurn(StreamRequest[TurnEvent], frozen=True, kw_only=True, tag=True):
    """Run one turn for ``text`` (and ``parts``) and stream its events."""

    text: str
    #: An id for the turn (idempotency and logs); "" lets the session choose.
    turn: str = ""
    #: Model settings of this turn only.
    settings: ModelOverrides | None = None
    #: Content after ``text`` in the user's message: images, audio, files (see
    #: :func:`~agcore_actors.llm.image_part_of`); checked against the agent config's
    #: ``media_limits`` before the turn begins (ContentTooLarge, InvalidContent).
    parts: list[ContentPart] | None = None


class RunTurn(Request[TurnResult], frozen=True, kw_only=True, tag=True):
    """Run one turn for ``text`` (and ``parts``) and reply with its result."""

    text: str
    turn: str = ""
    settings: ModelOverrides | None = None
    parts: list[ContentPart] | None = None


class CancelTurn(Request[bool], frozen=True, tag=True):
    """Cancel the running turn now, or at its next model/tool boundary."""

    mode: CancelMode = "immediate"


class Approve(Request[bool], frozen=True, kw_only=True, tag=True):
    """Answer an :class:`ApprovalRequested`: run the call, or deny it with ``reason``."""

    call_id: str
    allow: bool
    reason: str = ""


ElicitationAction = Literal["accept", "decline", "cancel"]


class ElicitationAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """The person's answer to an elicitation (MCP's ``ElicitResult``)."""

    action: ElicitationAction
    content: dict[str, object] | None = None


class AnswerElicitation(Request[bool], frozen=True, kw_only=True, tag=True):
    """Answer an :class:`ElicitationRequested`; False when none of that id waits."""

    elicitation_id: str
    action: ElicitationAction
    content: dict[str, object] | None = None


class Elicit(Request[ElicitationAnswer], frozen=True, kw_only=True, tag=True):
    """Ask the person of the running turn (an :class:`ElicitationRequested` event);
    declined when no turn runs or nobody answers in time."""

    server: str
    message: str
    schema: dict[str, object] = msgspec.field(default_factory=dict)
    #: The turn's id of the tool call the server asked during ("" if not known).
    call_id: str = ""


class ReportProgress(msgspec.Struct, frozen=True, kw_only=True, tag=True):
    """Told by an MCP connection: show a tool call's progress in the running turn."""

    call_id: str
    server: str
    progress: float
    total: float | None = None
    message: str | None = None


class SwitchAgent(Request[str], frozen=True, tag=True):
    """Hand the session to another agent from the next turn on; history is kept."""

    agent: str


class SetFacts(Request[None], frozen=True, kw_only=True, tag=True):
    """Set and remove session facts (shown to the model in every later turn); stored
    with the running turn's commit, else before the reply."""

    set: dict[str, str] = msgspec.field(default_factory=dict)
    remove: list[str] = msgspec.field(default_factory=list)


AnswerStatus = Literal["recorded", "duplicate", "resumed"]


class AnswerResult(msgspec.Struct, frozen=True, kw_only=True):
    """What an :class:`AnswerTurn` did: ``recorded`` (more answers awaited),
    ``duplicate`` (this call was answered already: nothing changed; ``allow`` is the
    first answer's), ``resumed`` (``result``: how the resumed turn ended)."""

    turn: str
    call_id: str
    status: AnswerStatus
    allow: bool
    result: TurnResult | None = None


class AnswerTurn(Request[AnswerResult], frozen=True, kw_only=True, tag=True):
    """Answer call ``call_id`` of the suspended turn ``turn``: approve it, deny it with
    ``reason``, or give its ``result`` (the call then does not run). Stored before the
    reply; once every awaited call is answered the turn resumes (``resume``), and the
    reply waits for it to end. An awaited elicitation is answered with ``action`` and
    ``content`` (no ``action``: ``accept`` if ``allow``, else ``decline``)."""

    turn: str
    call_id: str
    allow: bool = True
    reason: str = ""
    result: str | None = None
    resume: bool = True
    action: ElicitationAction | None = None
    content: dict[str, object] | None = None


class ResumeTurn(Request[TurnResult], frozen=True, tag=True):
    """Run the session's open turn (left by a crash, or suspended with every call
    answered) from its last stored step to its end."""


class SessionInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A session's state as its actor sees it."""

    session: str
    agent: str
    running_turn: str | None
    queued_turns: int
    turns: int
    messages: int
    usage: Usage
    facts: dict[str, str]
    #: The turn that waits for answers (or, left by a crash, to be resumed), if any.
    suspended_turn: str | None = None
    #: The calls it waits for.
    awaiting: list[AwaitingCall] = msgspec.field(default_factory=list)


class GetSessionInfo(Request[SessionInfo], frozen=True, tag=True):
    """The session's current state."""


SessionMsg = (
    SubmitTurn
    | RunTurn
    | CancelTurn
    | Approve
    | AnswerElicitation
    | Elicit
    | ReportProgress
    | SwitchAgent
    | SetFacts
    | GetSessionInfo
    | AnswerTurn
    | ResumeTurn
)
