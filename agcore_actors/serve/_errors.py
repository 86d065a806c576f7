"""Errors of :mod:`agcore_actors.serve`.

::

    ServeError          "serve"         base of the serve package's errors
    ├── BadCommand      "bad_command"   a stdin line or request body that is not a command
    └── HttpRefused     "http_refused"  a request the HTTP server answers with an error status

A :class:`BadCommand` never reaches the caller of ``serve_*``: it becomes an ``error``
line (stdio) or a 400 answer (HTTP) and changes nothing.
"""

from __future__ import annotations

from typing import ClassVar

from .._errors import AgcoreError

__all__ = ["BadCommand", "HttpRefused", "ServeError"]


class ServeError(AgcoreError):
    """Base of the serve package's errors."""

    kind: ClassVar[str] = "serve"


class BadCommand(ServeError, ValueError):
    """A line or body that is not a well-formed command; nothing was done for it."""

    kind: ClassVar[str] = "bad_command"


class HttpRefused(ServeError):
    """A request refused with HTTP ``status``; ``reason`` is the body's ``error_kind``
    (``unauthorized``, ``body_too_large``, ``too_many_streams``, ...). ``close``: the
    connection is closed after the answer (its framing cannot be trusted, or its client
    should come back on a new connection); ``allow``: the methods a 405 names;
    ``retry_after``: the seconds a 503 asks the client to wait (None: the server's own
    figure)."""

    kind: ClassVar[str] = "http_refused"

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        close: bool = False,
        allow: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.close = close
        self.allow = allow
        self.retry_after = retry_after
