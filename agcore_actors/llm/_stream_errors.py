"""One classifier for errors a server reports inside a stream (both providers).

A stream can fail after its ``200 OK``: OpenAI and OpenRouter send a chunk with a
top-level ``error`` (OpenRouter also ends the choice with ``finish_reason:
"error"``), vLLM sends ``{"object": "error", ...}``, llama.cpp an ``error`` event,
Anthropic an ``event: error`` with ``{"type": "error", "error": {"type": ...}}``.
The same failure must read the same as its HTTP status would have:

=======================================================  =============================
what the error says (type, code or message)              typed error
=======================================================  =============================
a numeric HTTP-like ``code`` (OpenRouter: 502, 429 ...)  as that HTTP status
rate limit (``rate_limit``)                              :class:`RateLimitError`
overloaded (``overloaded``)                              :class:`RequestError` 529
server error (``server_error``, ``api_error``,           :class:`RequestError` 500
``internal``, ``timeout``)
context length                                           :class:`ContextLengthError`
authentication / permission                              :class:`AuthenticationError`
anything else                                            :class:`StreamError` (final)
=======================================================  =============================

The retryable ones are retried only while nothing was delivered (the retry loop's
rule), so an overload before the first token behaves like an HTTP 529.
"""

from __future__ import annotations

from ._errors import (
    AuthenticationError,
    LlmError,
    RateLimitError,
    RequestError,
    StreamError,
    redact,
)
from ._http import context_length_error, is_context_length, status_error

_SERVER = ("server_error", "api_error", "internal", "timeout", "unavailable")
_AUTH = ("authentication", "permission", "invalid_api_key", "unauthorized")


def stream_error(
    provider: str,
    *,
    message: str,
    kind: str | None = None,
    code: str | int | None = None,
    raw: str = "",
    secrets: tuple[str, ...] = (),
) -> LlmError:
    """The typed error of an in-stream error report (see the module table).

    ``kind`` is the error's ``type``, ``code`` its ``code``, ``raw`` the event's text
    (kept, redacted, as the error's body).
    """
    body = redact(raw or message, secrets)
    message = redact(message, secrets)
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code < 600:
        return status_error(provider, code, {}, body, secrets)
    words = " ".join(str(w) for w in (kind, code, message) if w).lower()
    if "rate_limit" in words or "rate limit" in words:
        return RateLimitError(provider, None, body)
    if "overloaded" in words:
        return RequestError(provider, 529, body)
    if is_context_length(words):
        return context_length_error(provider, body)
    if any(marker in words for marker in _AUTH):
        return AuthenticationError(provider, 401, body)
    if any(marker in words for marker in _SERVER):
        return RequestError(provider, 500, body)
    return StreamError(provider, f"the server reported: {message[:300]}")
