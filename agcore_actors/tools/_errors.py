"""The tools package's leaves of the error tree (root: :class:`ToolError`).

Whether a turn can go on after a tool error is :meth:`~agcore_actors.AgcoreError.is_recoverable`:
a recoverable error is shown to the model as its tool message (``"Error: ..."``) so it
can correct itself; a non-recoverable one still produces a tool message (every call id
is answered) but tells the caller to end the automatic tool loop. Recoverable: a failed
execution, invalid arguments, "other".
"""

from __future__ import annotations

from typing import ClassVar

from .._errors import AgcoreError


class ToolError(AgcoreError):
    """Base class of tool errors; ``message`` is the text shown to the model after ``Error:``."""

    kind: ClassVar[str] = "tool"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolNotFound(ToolError, LookupError):
    """No tool of that name is registered."""

    kind: ClassVar[str] = "tool_not_found"

    def __init__(self, name: str) -> None:
        super().__init__(f"tool '{name}' is not registered")
        self.name = name


class ExecutionFailed(ToolError):
    """The tool ran and failed (it raised, or reported an error); recoverable."""

    kind: ClassVar[str] = "tool_failed"

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"tool '{name}' execution failed: {detail}")
        self.name = name
        self.detail = detail

    def is_recoverable(self) -> bool:
        return True


class InvalidArguments(ToolError, ValueError):
    """The model's arguments are not valid JSON or do not fit the schema; recoverable."""

    kind: ClassVar[str] = "tool_invalid_arguments"

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"tool '{name}' invalid arguments: {detail}")
        self.name = name
        self.detail = detail

    def is_recoverable(self) -> bool:
        return True


class PermissionDenied(ToolError):
    """A permission check or a human approval refused the call."""

    kind: ClassVar[str] = "tool_permission_denied"

    def __init__(self, name: str, permission: str, reason: str | None = None) -> None:
        text = reason if reason is not None else f"requires {permission} permission"
        super().__init__(f"permission denied: tool '{name}' {text}")
        self.name = name
        self.permission = permission


class CallDeferred(ToolError):
    """Raised by a tool whose result comes later, from outside the turn (a person, a
    queue, another system): a durable turn suspends with the call awaited (``kind``
    ``deferred``, ``note`` shown with it) until an answer gives its result; in a turn
    that is not durable the model sees this as the call's error result."""

    kind: ClassVar[str] = "tool_deferred"

    def __init__(self, note: str = "") -> None:
        super().__init__("the result comes later" + (f": {note}" if note else ""))
        self.note = note

    def is_recoverable(self) -> bool:
        return True


class ToolTimeout(ToolError, TimeoutError):
    """A call ran past its timeout of ``seconds``; running it again may succeed."""

    kind: ClassVar[str] = "tool_timeout"

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(f"tool '{name}' timed out after {seconds:g} s")
        self.name = name
        self.seconds = seconds

    def is_retryable(self) -> bool:
        return True


class ToolIoError(ToolError):
    """An I/O failure outside the tool's own logic."""

    kind: ClassVar[str] = "tool_io"

    def __init__(self, detail: str) -> None:
        super().__init__(f"IO error: {detail}")


class ToolCancelled(ToolError):
    """The call was cancelled before it finished."""

    kind: ClassVar[str] = "tool_cancelled"

    def __init__(self, detail: str) -> None:
        super().__init__(f"tool execution cancelled: {detail}")


class OtherToolError(ToolError):
    """Any other failure a tool reports; recoverable."""

    kind: ClassVar[str] = "tool_other"

    def __init__(self, detail: str) -> None:
        super().__init__(f"other error: {detail}")

    def is_recoverable(self) -> bool:
        return True


class DuplicateTool(ToolError, ValueError):
    """``register`` refused a name that is already taken."""

    kind: ClassVar[str] = "tool_duplicate"

    def __init__(self, name: str) -> None:
        super().__init__(f"tool '{name}' already exists")
        self.name = name


class BatchInProgress(ToolError, ValueError):
    """An ``ExecuteTools`` reused the id of a batch that is still running."""

    kind: ClassVar[str] = "tool_batch_in_progress"

    def __init__(self, batch_id: str) -> None:
        super().__init__(f"batch {batch_id!r} is already running")
        self.batch_id = batch_id


class ToolThreadsExhausted(ToolError):
    """A sync tool was refused: ``abandoned`` worker threads of cancelled or timed-out
    sync tools are still running. Trying again once they return may succeed."""

    kind: ClassVar[str] = "tool_threads_exhausted"

    def __init__(self, name: str, abandoned: int) -> None:
        super().__init__(
            f"tool '{name}' was refused: {abandoned} worker threads of cancelled sync tools "
            "are still running (sync tools should return once ctx.cancelled is true, and"
            " start child processes with run_process_sync)"
        )
        self.name = name
        self.abandoned = abandoned

    def is_retryable(self) -> bool:
        return True
