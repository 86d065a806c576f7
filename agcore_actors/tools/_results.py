"""Pure policy for tool results: rendering, truncation, error mapping.

No event loop here; hypothesis tests check these functions directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ._errors import InvalidArguments, PermissionDenied, ToolError, ToolNotFound, ToolTimeout
from .messages import ToolCall, ToolResult, ToolStatus

#: The seed's cap on a tool message (``max_tool_result_bytes``).
DEFAULT_MAX_RESULT_BYTES = 65_536
#: The seed's default per-call timeout (``tool_timeout_secs``); 0/None = none.
DEFAULT_TOOL_TIMEOUT = 60.0

_json = msgspec.json.Encoder()


def truncate_tool_result(text: str, max_bytes: int) -> str:
    """``text`` if its UTF-8 form fits ``max_bytes``, else its longest prefix
    that fits, cut on a character boundary, plus the seed's marker."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    cut = data[: max(max_bytes, 0)].decode("utf-8", errors="ignore")
    return f"{cut}\n\n[... truncated, original size: {len(data)} bytes ...]"


def render_value(value: Any) -> str:
    """A tool's value as message text: a string as is, anything else compact JSON.

    (The seed JSON-encoded strings too, so the model saw them quoted.)
    """
    if isinstance(value, str):
        return value
    try:
        return _json.encode(value).decode("utf-8")
    except (TypeError, msgspec.EncodeError):
        return "{}"


def parse_arguments(call: ToolCall) -> Any:
    """The call's arguments as a JSON value; raise :class:`InvalidArguments`.

    Δ seed: invalid JSON became ``null`` there; here it is an
    ``invalid_arguments`` result the model can correct. Empty text is ``{}``.
    """
    if not isinstance(call.arguments, str):
        return call.arguments
    if not call.arguments.strip():
        return {}
    try:
        return msgspec.json.decode(call.arguments)
    except msgspec.DecodeError as exc:
        raise InvalidArguments(call.name, f"arguments are not valid JSON: {exc}") from None


def status_of(error: ToolError) -> ToolStatus:
    if isinstance(error, ToolNotFound):
        return ToolStatus.UNKNOWN_TOOL
    if isinstance(error, InvalidArguments):
        return ToolStatus.INVALID_ARGUMENTS
    if isinstance(error, PermissionDenied):
        return ToolStatus.DENIED
    if isinstance(error, ToolTimeout):
        return ToolStatus.TIMEOUT
    return ToolStatus.ERROR


def ok_result(call: ToolCall, value: Any, max_bytes: int) -> ToolResult:
    text = render_value(value)
    cut = truncate_tool_result(text, max_bytes)
    return ToolResult(
        call.id,
        call.name,
        ToolStatus.OK,
        cut,
        True,
        value if cut is text else None,
        cut is not text,
    )


def error_result(call: ToolCall, error: ToolError, max_bytes: int) -> ToolResult:
    text = f"Error: {error.message}"
    cut = truncate_tool_result(text, max_bytes)
    return ToolResult(
        call.id,
        call.name,
        status_of(error),
        cut,
        error.is_recoverable(),
        None,
        cut is not text,
    )


def cancelled_result(call: ToolCall, reason: str = "the request was cancelled") -> ToolResult:
    return ToolResult(
        call.id,
        call.name,
        ToolStatus.CANCELLED,
        f"Error: tool execution cancelled: {reason}",
        False,
    )


def cancelled_results(
    calls: Sequence[ToolCall], done: Sequence[ToolResult] = ()
) -> list[ToolResult]:
    """One result per call, in call order: ``done``'s result where it has one
    (matched by call id), else a ``cancelled`` one. What a session sends the
    model for a batch whose ``ExecuteTools`` it could not wait for."""
    by_id = {r.call_id: r for r in done}
    return [by_id.get(c.id) or cancelled_result(c) for c in calls]
