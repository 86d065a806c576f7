"""Tool errors: one class per seed ``ToolError`` variant, each knowing whether
the LLM can recover from it.

A *recoverable* error is shown to the model as its tool message (``"Error:
..."``) so it can correct itself; a non-recoverable one still produces a tool
message (every call id is answered) but tells the caller to end the tool
loop. The recoverable set is the seed's: execution failed, invalid
arguments, other. The seed's Chinese display texts are given in English.
"""

from __future__ import annotations

from typing import ClassVar


class ToolError(Exception):
    """Base class of tool errors; ``recoverable`` is the seed's ``is_recoverable()``."""

    recoverable: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ToolNotFound(ToolError):
    def __init__(self, name: str) -> None:
        super().__init__(f"tool '{name}' is not registered")
        self.name = name


class ExecutionFailed(ToolError):
    recoverable = True

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"tool '{name}' execution failed: {detail}")
        self.name = name
        self.detail = detail


class InvalidArguments(ToolError):
    recoverable = True

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"tool '{name}' invalid arguments: {detail}")
        self.name = name
        self.detail = detail


class PermissionDenied(ToolError):
    def __init__(self, name: str, permission: str, reason: str | None = None) -> None:
        text = reason if reason is not None else f"requires {permission} permission"
        super().__init__(f"permission denied: tool '{name}' {text}")
        self.name = name
        self.permission = permission


class ToolTimeout(ToolError):
    """A call ran past its timeout (the seed reused ``McpTimeout`` for this)."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(f"tool '{name}' timed out after {seconds:g} s")
        self.name = name
        self.seconds = seconds


class ToolIoError(ToolError):
    def __init__(self, detail: str) -> None:
        super().__init__(f"IO error: {detail}")


class ToolCancelled(ToolError):
    def __init__(self, detail: str) -> None:
        super().__init__(f"tool execution cancelled: {detail}")


class OtherToolError(ToolError):
    recoverable = True

    def __init__(self, detail: str) -> None:
        super().__init__(f"other error: {detail}")


class DuplicateTool(ToolError, ValueError):
    """``register`` refused a name that is already taken (seed: ExecutionFailed)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"tool '{name}' already exists")
        self.name = name
