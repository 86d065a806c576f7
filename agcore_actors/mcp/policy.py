"""Pure MCP policy: registry names of a server's tools, the environment a stdio server
inherits, keeping configured secrets out of error messages, and which tools need
approval.

No event loop, no I/O. The circuit breaker that parks a failing server is the library's
one breaker, :class:`agcore_actors.actor.policy.CircuitBreaker`.
"""

from __future__ import annotations

from .._exports import publish
from ._config import DEFAULT_INHERITED_ENV, child_environment
from ._policy import (
    DEFAULT_SEPARATOR,
    MIN_SECRET_LENGTH,
    REDACTED,
    TOOL_NAME_PATTERN,
    needs_approval,
    prefixed_name,
    redact,
    registry_names,
    secret_values,
)

__all__ = [
    "DEFAULT_INHERITED_ENV",
    "DEFAULT_SEPARATOR",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "TOOL_NAME_PATTERN",
    "child_environment",
    "needs_approval",
    "prefixed_name",
    "redact",
    "registry_names",
    "secret_values",
]

publish(__name__, __all__)
