"""Pure policy for tool calls and their results: timeouts, argument decoding,
rendering, truncation, error mapping, results for cancelled calls.

No event loop here; hypothesis tests check these functions directly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import msgspec

from .._decode import DECODE_ERRORS
from ..llm import (
    AudioPart,
    ContentPart,
    ContentTooLarge,
    FilePart,
    ImagePart,
    InvalidContent,
    MediaLimits,
    TextPart,
    check_parts,
)
from ._errors import (
    CallDeferred,
    ExecutionFailed,
    InvalidArguments,
    PermissionDenied,
    ToolError,
    ToolNotFound,
    ToolTimeout,
)
from .messages import ToolCall, ToolResult, ToolStatus

#: The cap on a tool message's UTF-8 size.
DEFAULT_MAX_RESULT_BYTES = 65_536
#: Limits on the images, audio and files one tool result may carry.
DEFAULT_MEDIA_LIMITS = MediaLimits()
_PARTS = (TextPart, ImagePart, AudioPart, FilePart)
#: Seconds a call may run when neither the tool nor the executor says otherwise.
DEFAULT_TOOL_TIMEOUT = 60.0

_json = msgspec.json.Encoder()


def effective_timeout(tool_timeout: float | None, default: float | None) -> float:
    """Seconds a call may run (``inf``: unbounded); a tool's own value wins, 0 or None
    means no timeout."""
    value = tool_timeout if tool_timeout is not None else default
    if value is None or value <= 0:
        return math.inf
    return value


def truncate_tool_result(text: str, max_bytes: int) -> str:
    """``text`` if its UTF-8 form fits ``max_bytes``, else its longest prefix that fits,
    cut on a character boundary, plus a marker naming the original size."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    cut = data[: max(max_bytes, 0)].decode("utf-8", errors="ignore")
    return f"{cut}\n\n[... truncated, original size: {len(data)} bytes ...]"


def render_value(value: Any) -> str:
    """A tool's value as message text: a string as is, anything else compact JSON.

    Raises ``TypeError`` (or ``msgspec.EncodeError``) for a value JSON cannot carry.
    """
    if isinstance(value, str):
        return value
    return _json.encode(value).decode("utf-8")


def parse_arguments(call: ToolCall) -> Any:
    """The call's arguments as a JSON value; raise :class:`InvalidArguments`.

    Invalid JSON is an ``invalid_arguments`` result the model can correct; empty text
    is ``{}``.
    """
    if not isinstance(call.arguments, str):
        return call.arguments
    if not call.arguments.strip():
        return {}
    try:
        return msgspec.json.decode(call.arguments)
    except DECODE_ERRORS as exc:
        raise InvalidArguments(call.name, f"arguments are not valid JSON: {exc}") from None


def status_of(error: ToolError) -> ToolStatus:
    """The status a call that failed with ``error`` reports."""
    if isinstance(error, ToolNotFound):
        return ToolStatus.UNKNOWN_TOOL
    if isinstance(error, InvalidArguments):
        return ToolStatus.INVALID_ARGUMENTS
    if isinstance(error, PermissionDenied):
        return ToolStatus.DENIED
    if isinstance(error, ToolTimeout):
        return ToolStatus.TIMEOUT
    if isinstance(error, CallDeferred):
        return ToolStatus.DEFERRED
    return ToolStatus.ERROR


def carries_parts(value: Any) -> bool:
    """True if ``value`` is a content part, or a list of parts and strings with a part."""
    items = value if isinstance(value, list) else [value]
    return (
        bool(items)
        and all(isinstance(v, (*_PARTS, str)) for v in items)
        and any(isinstance(v, _PARTS) for v in items)
    )


def _media_result(call: ToolCall, value: Any, max_bytes: int) -> ToolResult | None:
    """The result of a tool that returned content parts (one, or a list of parts and
    strings): text parts joined into ``content``, the others kept as ``parts``."""
    if not carries_parts(value):
        return None
    items = value if isinstance(value, list) else [value]
    texts = [v if isinstance(v, str) else v.text for v in items if isinstance(v, str | TextPart)]
    media: list[ContentPart] = [
        v for v in items if isinstance(v, _PARTS) and not isinstance(v, TextPart)
    ]
    try:
        check_parts(media, DEFAULT_MEDIA_LIMITS)
    except (ContentTooLarge, InvalidContent) as exc:
        return error_result(call, ExecutionFailed(call.name, f"returned {exc}"), max_bytes)
    text = "\n".join(texts)
    cut = truncate_tool_result(text, max_bytes)
    return ToolResult(
        call_id=call.id,
        name=call.name,
        status=ToolStatus.OK,
        content=cut,
        truncated=cut is not text,
        parts=media or None,
    )


def ok_result(call: ToolCall, value: Any, max_bytes: int) -> ToolResult:
    """The result of a call that returned ``value`` (``value`` kept unless it was cut).

    A value JSON cannot carry makes it that call's error (recoverable), never a
    success with made-up content. Content parts (an image, a file, or a list of parts
    and strings) become the result's ``parts``, checked against
    :data:`DEFAULT_MEDIA_LIMITS` (over them: the call's error).
    """
    media = _media_result(call, value, max_bytes)
    if media is not None:
        return media
    try:
        text = render_value(value)
    except (TypeError, ValueError, OverflowError, msgspec.EncodeError) as exc:
        detail = f"returned a value that is not JSON ({type(exc).__name__}: {exc})"
        return error_result(call, ExecutionFailed(call.name, detail), max_bytes)
    cut = truncate_tool_result(text, max_bytes)
    return ToolResult(
        call_id=call.id,
        name=call.name,
        status=ToolStatus.OK,
        content=cut,
        value=value if cut is text else None,
        truncated=cut is not text,
    )


def error_result(call: ToolCall, error: ToolError, max_bytes: int) -> ToolResult:
    """The result of a call that failed with ``error``: ``"Error: ..."`` for the model."""
    text = f"Error: {error.message}"
    cut = truncate_tool_result(text, max_bytes)
    return ToolResult(
        call_id=call.id,
        name=call.name,
        status=status_of(error),
        content=cut,
        recoverable=error.is_recoverable(),
        truncated=cut is not text,
    )


def cancelled_result(call: ToolCall, reason: str = "the request was cancelled") -> ToolResult:
    """The result of a call that was cancelled before it finished (not recoverable)."""
    return ToolResult(
        call_id=call.id,
        name=call.name,
        status=ToolStatus.CANCELLED,
        content=f"Error: tool execution cancelled: {reason}",
        recoverable=False,
    )


def cancelled_results(
    calls: Sequence[ToolCall], done: Sequence[ToolResult | None] = ()
) -> list[ToolResult]:
    """One result per call, in call order: ``done[i]`` for ``calls[i]`` where it is
    there and not None, else a ``cancelled`` one.

    Matched by position, so calls with empty or repeated ids keep their own results.
    ``done`` may be shorter than ``calls``; a result whose ``call_id`` is not its
    call's id raises ``ValueError``. What a session sends the model for a batch whose
    ``ExecuteTools`` it could not wait for.
    """
    if len(done) > len(calls):
        raise ValueError(f"{len(done)} results for {len(calls)} calls")
    out: list[ToolResult] = []
    for index, call in enumerate(calls):
        result = done[index] if index < len(done) else None
        if result is None:
            out.append(cancelled_result(call))
        elif result.call_id != call.id:
            raise ValueError(f"result {index} answers call {result.call_id!r}, not {call.id!r}")
        else:
            out.append(result)
    return out
