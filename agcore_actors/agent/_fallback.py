"""The fallback policy: which failed model call moves a turn to the next model.

Pure functions on an error and plain facts (no trio, no I/O), applied by the turn's
model calls (:mod:`~._model_call`) and property-tested against an independent model.

A failed call falls back when, all at once:

- its error has a *fallback kind* (:func:`fallback_kind`) the agent chose in
  ``ModelSettings.fallback_on``: ``rate_limit`` (HTTP 429), ``server_error`` (HTTP 5xx,
  or a stream the server cut before it finished), ``timeout`` (an attempt's or the
  stream's, not the caller's own deadline), ``context_length``, ``connection``;
- nothing of its answer was streamed to the reader (no text, no reasoning piece): a
  person who saw part of one model's answer never gets another model's after it;
- a model is left in the chain.

Any other error (authentication, a bad request, a malformed body, a blocked request, a
cancellation) ends the turn as before: a fallback would hide a bug or a bad key.
"""

from __future__ import annotations

from typing import Final, Literal

from ..llm import (
    ContextLengthError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    RateLimitError,
    RequestError,
    StreamError,
)

__all__ = ["ALL_FALLBACK_KINDS", "FallbackKind", "fallback_kind", "falls_back"]

FallbackKind = Literal["rate_limit", "server_error", "timeout", "context_length", "connection"]

#: Every fallback kind (the default of ``ModelSettings.fallback_on``).
ALL_FALLBACK_KINDS: Final[frozenset[FallbackKind]] = frozenset(
    ("rate_limit", "server_error", "timeout", "context_length", "connection")
)


def fallback_kind(error: BaseException) -> FallbackKind | None:
    """The fallback kind of ``error``, or None when no error of that kind falls back."""
    if not isinstance(error, LlmError):
        return None
    if isinstance(error, RateLimitError):
        return "rate_limit"
    if isinstance(error, ContextLengthError):
        return "context_length"
    if isinstance(error, LlmTimeoutError):
        return None if error.scope == "call" else "timeout"
    if isinstance(error, LlmConnectionError):
        return "connection"
    if isinstance(error, RequestError):
        if error.status == 429:
            return "rate_limit"
        return "server_error" if error.status >= 500 else None
    if isinstance(error, StreamError):
        return "server_error" if error.truncated else None
    return None


def falls_back(
    error: BaseException,
    chosen: frozenset[FallbackKind],
    *,
    output_seen: bool,
    remaining: int,
) -> bool:
    """Whether the turn tries the next model after ``error`` (see the module docstring):
    ``chosen`` are the kinds the agent falls back on, ``output_seen`` whether any piece
    of this call's answer reached the reader, ``remaining`` how many models are left."""
    if output_seen or remaining <= 0:
        return False
    kind = fallback_kind(error)
    return kind is not None and kind in chosen
