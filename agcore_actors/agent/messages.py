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

from .._exports import publish
from ..actor import Request, StreamRequest
from ..llm import ContentPart, Usage
from . import _events
from ._events import (
    ApprovalRequested,
    AwaitingCall,
    Compacted,
    ContentStarted,
    ElicitationRequested,
    LimitReached,
    ModelCall,
    ModelFallback,
    RetryingModel,
    TextDelta,
    ThinkingDelta,
    ToolCallFinished,
    ToolCallProgress,
    ToolCallStarted,
    ToolHookChanged,
    TurnCancelled,
    TurnCompleted,
    TurnEvent,
    TurnFailed,
    TurnResult,
    TurnStarted,
    TurnStatus,
    TurnSuspended,
    UsageReported,
)
from ._events import ToolCallStatus as ToolCallStatus

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

# The events keep this module as their public home (reprs, tracebacks).
publish(__name__, _events.__all__)
