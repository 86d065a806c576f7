"""The ToolExecutor's protocol, and the approver's: every request and its reply.

::

    ExecuteTools(batch_id, calls, session_id, trace_id, default_timeout,
                 max_concurrency)                   -> ToolResults
    CancelBatch(batch_id)                                  (a tell: no reply)
    FetchResults(batch_id)                              -> ToolResults | None
    ApprovalRequest(call_id, tool, arguments, ...)      -> ApprovalDecision  (asked of an approver)

Cancelling the asker:

- ``ExecuteTools``: every running call of the batch is cancelled (a sync tool's worker
  thread is abandoned and its ``ctx.cancelled`` turns true; it runs on until its function
  returns) and no task of the batch is left when the cancellation has unwound; children
  started with ``run_process`` / ``run_process_sync`` are killed with their group. The
  results — finished calls keep their real result, the rest are ``cancelled`` — are
  recorded for ``FetchResults``.
- ``CancelBatch``: a tell; the batch's ``ExecuteTools`` still replies, its unfinished
  calls ``cancelled``.
- ``FetchResults``: a read; nothing changes.
- ``ApprovalRequest``: asked by the executor under its approval timeout; when the answer
  does not come in time the ask is cancelled and the call is denied.

Every call of an ``ExecuteTools`` gets exactly one :class:`ToolResult`, in call order,
matched by position (call ids need not be unique). :class:`ToolProgress` events go to
the executor's event sink. Import qualified: ``from agcore_actors.tools import messages
as tm``.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from .._exports import publish
from ..actor import Request
from ..llm import ContentPart

__all__ = [
    "ApprovalDecision",
    "ApprovalRequest",
    "CancelBatch",
    "ExecuteTools",
    "FetchResults",
    "ToolCall",
    "ToolExecutorMsg",
    "ToolExecutorReply",
    "ToolProgress",
    "ToolResult",
    "ToolResults",
    "ToolStatus",
]


class ToolStatus(enum.Enum):
    """How one call ended."""

    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    DENIED = "denied"
    CANCELLED = "cancelled"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    #: The tool raised :class:`~agcore_actors.tools.CallDeferred`: its result comes later.
    DEFERRED = "deferred"


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    """One call the model asked for; ``arguments`` is its raw JSON text or a decoded object."""

    id: str
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolResult(msgspec.Struct, frozen=True, kw_only=True):
    """The answer to one call.

    ``content`` is the tool message text for the model: the result (a string as is,
    anything else compact JSON) or ``"Error: ..."``, cut to the result cap. ``parts``
    are the images, audio and files the tool returned (a content part, or a list of
    parts and text); the model is shown them after ``content``.
    ``recoverable`` is False for outcomes that should end an automatic tool loop (the
    error's :meth:`~agcore_actors.AgcoreError.is_recoverable`).
    """

    call_id: str
    name: str
    status: ToolStatus
    content: str
    recoverable: bool = True
    value: Any = None
    truncated: bool = False
    parts: list[ContentPart] | None = None


class ToolResults(msgspec.Struct, frozen=True):
    """One result per call of a batch, in call order."""

    batch_id: str
    results: list[ToolResult]


class ApprovalDecision(msgspec.Struct, frozen=True):
    """An approver's answer: may the call run? ``reason`` is shown when it may not."""

    allow: bool
    reason: str = ""


# -- requests -------------------------------------------------------------------------


class ExecuteTools(Request[ToolResults], frozen=True, tag=True, kw_only=True):
    """Run ``calls`` in parallel; one result per call, in call order."""

    batch_id: str
    calls: list[ToolCall]
    session_id: str = ""
    trace_id: str = ""
    #: Seconds each call may take when its tool sets no ``timeout`` (0: none); None:
    #: the executor's ``default_timeout``. A session sends its agent's ``tool_timeout``.
    default_timeout: float | None = None
    #: Calls of the batch that run at the same time (the rest wait for one to end,
    #: in call order); None: all at once.
    max_concurrency: int | None = None


class CancelBatch(msgspec.Struct, frozen=True, tag=True):
    """Cancel the running calls of batch ``batch_id`` (a tell)."""

    batch_id: str


class FetchResults(Request[ToolResults | None], frozen=True, tag=True):
    """The recorded results of a recent batch, None when it is unknown or still running."""

    batch_id: str


class ApprovalRequest(Request[ApprovalDecision], frozen=True, tag=True, kw_only=True):
    """May ``tool`` run with ``arguments``? (asked of an approver actor)."""

    call_id: str
    tool: str
    arguments: Any
    session_id: str = ""
    description: str = ""


# -- events -----------------------------------------------------------------------------


class ToolProgress(msgspec.Struct, frozen=True, tag=True, kw_only=True):
    """Told to the executor's event sink while a call runs (dropped when the sink is full)."""

    batch_id: str
    call_id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None


ToolExecutorMsg = ExecuteTools | CancelBatch | FetchResults
ToolExecutorReply = ToolResults | None

publish(__name__, __all__)
