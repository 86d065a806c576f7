"""Pure policy of the tools package: permissions, approval, timeouts, argument decoding,
result rendering and truncation, and results for calls that were cancelled.

No event loop, no I/O: these are what the :class:`~agcore_actors.tools.ToolExecutor`
applies, usable on their own (a session answering a batch it could not wait for uses
:func:`cancelled_results`). Property-tested without trio.
"""

from __future__ import annotations

from .._exports import publish
from ._approval import DEFAULT_APPROVAL_TIMEOUT, decide_approval
from ._permission import BUILTIN_PERMISSIONS, UNSPECIFIED, check_permissions
from ._results import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TOOL_TIMEOUT,
    cancelled_result,
    cancelled_results,
    effective_timeout,
    error_result,
    ok_result,
    parse_arguments,
    render_value,
    status_of,
    truncate_tool_result,
)

__all__ = [
    "BUILTIN_PERMISSIONS",
    "DEFAULT_APPROVAL_TIMEOUT",
    "DEFAULT_MAX_RESULT_BYTES",
    "DEFAULT_TOOL_TIMEOUT",
    "UNSPECIFIED",
    "cancelled_result",
    "cancelled_results",
    "check_permissions",
    "decide_approval",
    "effective_timeout",
    "error_result",
    "ok_result",
    "parse_arguments",
    "render_value",
    "status_of",
    "truncate_tool_result",
]

publish(__name__, __all__)
