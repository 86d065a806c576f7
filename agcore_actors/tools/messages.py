"""The ToolExecutor's protocol: the messages it accepts and the replies it gives.

- ``ExecuteTools(batch_id, calls, ...)`` -> ``ToolResults``: runs the calls in
  parallel; exactly one :class:`ToolResult` per call, in call order.
- ``CancelBatch(batch_id)`` (tell): cancels a running batch; its
  ``ExecuteTools`` still replies, the unfinished calls with status
  ``cancelled``.
- ``FetchResults(batch_id)`` -> ``ToolResults | None``: the recorded outcome of
  a recent batch. When the *asker* of ``ExecuteTools`` is cancelled it
  cannot receive a reply (trio cancellation unwinds it), so the executor
  records every batch's results — calls that finished keep their real
  result, the rest are ``cancelled`` — and a session fetches them here, or
  synthesises them with :func:`agcore_actors.tools.cancelled_results`.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec

from ..actor import Request


class ToolStatus(enum.Enum):
    OK = "ok"
    ERROR = "error"
    TIMEOUT = "timeout"
    DENIED = "denied"
    CANCELLED = "cancelled"
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"


class ToolCall(msgspec.Struct, frozen=True):
    """One call the model asked for. ``arguments`` is the model's raw JSON
    text (or an already decoded object)."""

    id: str
    name: str
    arguments: str | dict[str, Any] = "{}"


class ToolResult(msgspec.Struct, frozen=True):
    """The answer to one call.

    ``content`` is the tool message text for the model: the result (a
    string as is, anything else compact JSON) or ``"Error: ..."``, cut to
    the result cap. ``recoverable`` is False for outcomes that should end
    an automatic tool loop (the seed's non-recoverable errors).
    """

    call_id: str
    name: str
    status: ToolStatus
    content: str
    recoverable: bool = True
    value: Any = None
    truncated: bool = False


class ToolResults(msgspec.Struct, frozen=True):
    batch_id: str
    results: list[ToolResult]


class ExecuteTools(Request[ToolResults], frozen=True, tag=True):
    batch_id: str
    calls: list[ToolCall]
    session_id: str = ""
    trace_id: str = ""


class CancelBatch(msgspec.Struct, frozen=True, tag=True):
    batch_id: str


class FetchResults(Request[ToolResults | None], frozen=True, tag=True):
    batch_id: str


class ToolProgress(msgspec.Struct, frozen=True, tag=True):
    """Told to the executor's event sink while a call runs."""

    batch_id: str
    call_id: str
    name: str
    progress: float
    total: float | None = None
    message: str | None = None


ToolExecutorMsg = ExecuteTools | CancelBatch | FetchResults
