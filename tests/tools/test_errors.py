"""Which tool errors a turn can recover from."""

from __future__ import annotations

import pytest

from agcore_actors.tools import (
    ExecutionFailed,
    InvalidArguments,
    OtherToolError,
    PermissionDenied,
    ToolError,
    ToolIoError,
    ToolNotFound,
    ToolTimeout,
)


@pytest.mark.parametrize(
    ("error", "recoverable"),
    [
        (ExecutionFailed("t", "x"), True),
        (InvalidArguments("t", "x"), True),
        (ToolNotFound("t"), False),
        (PermissionDenied("foo", "Shell"), False),
        (ToolTimeout("t", 1), False),
        (ToolIoError("disk"), False),
        (OtherToolError("x"), True),
    ],
)
def test_recoverability(error: ToolError, recoverable: bool) -> None:
    assert error.is_recoverable() is recoverable
