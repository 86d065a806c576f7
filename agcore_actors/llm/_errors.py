"""Typed errors of LLM calls.

Every error names its provider (and the HTTP status when there is one) and
never contains an API key: providers pass their secrets to
:func:`redact`, which replaces them in any server text before it is kept.

Retryable (``is_retryable()``): rate limits, timeouts of one attempt,
connection failures, streams cut by the transport, and HTTP 5xx/429.
Not retryable: authentication (401/403), context length, other 4xx, bodies
that cannot be parsed, requests blocked by a hook, the whole-call deadline.
"""

from __future__ import annotations

from collections.abc import Iterable

_BODY_LIMIT = 500


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (of 4+ characters) replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _clip(body: str) -> str:
    body = body.strip()
    return body if len(body) <= _BODY_LIMIT else body[:_BODY_LIMIT] + "..."


class LlmError(Exception):
    """Base of every LLM call error. ``kind`` is a stable short name."""

    kind = "other"

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.detail = message

    def is_retryable(self) -> bool:
        return False


class AuthenticationError(LlmError):
    kind = "authentication"

    def __init__(self, provider: str, status: int, body: str) -> None:
        super().__init__(provider, f"authentication failed (HTTP {status}): {_clip(body)}")
        self.status = status
        self.body = body


class RateLimitError(LlmError):
    """HTTP 429; ``retry_after`` is the server's wait in seconds, if it gave one."""

    kind = "rate_limit"

    def __init__(self, provider: str, retry_after: float | None, body: str = "") -> None:
        hint = "" if retry_after is None else f", retry after {retry_after:g} s"
        super().__init__(provider, f"rate limited (HTTP 429{hint}): {_clip(body)}")
        self.status = 429
        self.retry_after = retry_after
        self.body = body

    def is_retryable(self) -> bool:
        return True


class RequestError(LlmError):
    """Any other non-2xx answer; retryable for 5xx (and 429 without a RateLimitError)."""

    kind = "request"

    def __init__(
        self, provider: str, status: int, body: str, retry_after: float | None = None
    ) -> None:
        super().__init__(provider, f"request failed (HTTP {status}): {_clip(body)}")
        self.status = status
        self.body = body
        self.retry_after = retry_after

    def is_retryable(self) -> bool:
        return self.status >= 500 or self.status == 429


class ContextLengthError(LlmError):
    """The prompt does not fit the model's context; ``actual``/``limit`` are 0 when unknown."""

    kind = "context_length"

    def __init__(self, provider: str, actual: int, limit: int, body: str = "") -> None:
        super().__init__(
            provider, f"context length exceeded (actual={actual}, limit={limit}): {_clip(body)}"
        )
        self.status = 400
        self.actual = actual
        self.limit = limit
        self.body = body


class LlmTimeoutError(LlmError):
    """An attempt took longer than ``duration`` seconds (``scope="attempt"``,
    retryable), or the whole call ran past its deadline (``scope="call"``)."""

    kind = "timeout"

    def __init__(self, provider: str, duration: float, scope: str = "attempt") -> None:
        what = "request" if scope == "attempt" else "call deadline"
        super().__init__(provider, f"{what} timed out after {duration:g} s")
        self.duration = duration
        self.scope = scope

    def is_retryable(self) -> bool:
        return self.scope == "attempt"


class LlmConnectionError(LlmError):
    """The server could not be reached, or the connection broke before a reply."""

    kind = "connection"

    def is_retryable(self) -> bool:
        return True


class StreamError(LlmError):
    """A streamed response broke: cut by the transport or ended without ``[DONE]``
    (``truncated``, retryable while nothing was delivered) or malformed."""

    kind = "stream"

    def __init__(self, provider: str, message: str, *, truncated: bool = False) -> None:
        super().__init__(provider, f"stream error: {message}")
        self.truncated = truncated

    def is_retryable(self) -> bool:
        return self.truncated


class InvalidResponseError(LlmError):
    """A 2xx answer whose body is not the expected JSON."""

    kind = "invalid_response"

    def __init__(self, provider: str, message: str, body: str = "") -> None:
        super().__init__(provider, f"response parse failed: {message}: {_clip(body)}")
        self.body = body


class BlockedByHook(LlmError):
    """A PreRequest hook refused the request; the provider was not called."""

    kind = "blocked"

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__(provider, reason)
        self.reason = reason


class UnknownProviderError(LlmError):
    kind = "unknown_provider"

    def __init__(self, name: str | None) -> None:
        if name is None:
            super().__init__("registry", "no provider named and no default provider set")
        else:
            super().__init__(name, f"provider {name!r} is not registered")
        self.name = name


LLM_ERRORS: tuple[type[Exception], ...] = (LlmError,)
