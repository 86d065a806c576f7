"""The LLM package's leaves of the error tree (root: :class:`~agcore_actors.AgcoreError`).

::

    LlmError                      llm            every failed model call
    ├── AuthenticationError       llm_authentication   HTTP 401/403
    ├── RateLimitError            rate_limit     HTTP 429 (retryable)
    ├── RequestError              llm_request    any other non-2xx (5xx, 429: retryable)
    ├── ContextLengthError        context_length the prompt does not fit
    ├── LlmTimeoutError           llm_timeout    also TimeoutError; ``seconds``
    ├── LlmConnectionError        llm_connection server unreachable (retryable)
    ├── StreamError               llm_stream     a stream broke or was malformed
    ├── InvalidResponseError      llm_invalid_response  a 2xx body we cannot parse
    ├── BlockedByHook             llm_blocked    a PreRequest hook refused
    ├── LlmConfigError            llm_config     also ValueError: bad key, URL or limit
    ├── UnsupportedContent        unsupported_content  also ValueError: the model
    │                                            cannot take a part (an image, audio)
    └── UnknownProviderError      unknown_provider  also LookupError

Every error names its provider (and the HTTP status when there is one) and never
contains a secret: providers pass their secrets to :func:`redact`, which replaces
them in any server text before an error keeps it.

``is_retryable()`` (the root's vocabulary) is True for rate limits, one attempt's
timeout, connection failures, streams cut by the transport before they finished, and
HTTP 5xx/429; False for authentication, context length, other 4xx, bodies that
cannot be parsed, requests blocked by a hook, bad configuration and the whole-call
deadline.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from .._errors import AgcoreError

_BODY_LIMIT = 500

TimeoutScope = Literal["attempt", "idle", "call"]


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (of 4+ characters) replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def _clip(body: str) -> str:
    body = body.strip()
    return body if len(body) <= _BODY_LIMIT else body[:_BODY_LIMIT] + "..."


class LlmError(AgcoreError):
    """Base of every LLM call error; ``provider`` names the provider."""

    kind = "llm"

    def __init__(self, provider: str, message: str) -> None:
        super().__init__(f"{provider}: {message}")
        self.provider = provider
        self.detail = message


class AuthenticationError(LlmError):
    """HTTP 401 or 403: the key is wrong, expired or lacks the permission."""

    kind = "llm_authentication"

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
    """Any other non-2xx answer (or an in-stream error of that class); retryable for
    5xx and 429."""

    kind = "llm_request"

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


class LlmTimeoutError(LlmError, TimeoutError):
    """A limit of :class:`~agcore_actors.llm.Timeouts` ran out after ``seconds``.

    ``scope`` says which: ``"attempt"`` (one attempt, or a stream's wait for its first
    event), ``"idle"`` (a stream went silent) — both retryable while nothing was
    delivered — or ``"call"`` (the whole call's deadline, final).
    """

    kind = "llm_timeout"

    def __init__(self, provider: str, seconds: float, scope: TimeoutScope = "attempt") -> None:
        what = {"attempt": "request", "idle": "stream idle", "call": "call deadline"}[scope]
        super().__init__(provider, f"{what} timed out after {seconds:g} s")
        self.seconds = seconds
        self.scope = scope

    @property
    def duration(self) -> float:
        """The same as ``seconds`` (the older name)."""
        return self.seconds

    def is_retryable(self) -> bool:
        return self.scope != "call"


class LlmConnectionError(LlmError):
    """The server could not be reached, or the connection broke before a reply."""

    kind = "llm_connection"

    def is_retryable(self) -> bool:
        return True


class StreamError(LlmError):
    """A streamed response broke off before it finished (``truncated``: retryable
    while nothing was delivered) or was malformed (not retryable)."""

    kind = "llm_stream"

    def __init__(self, provider: str, message: str, *, truncated: bool = False) -> None:
        super().__init__(provider, f"stream error: {message}")
        self.truncated = truncated

    def is_retryable(self) -> bool:
        return self.truncated


class InvalidResponseError(LlmError):
    """A 2xx answer whose body is not the expected JSON."""

    kind = "llm_invalid_response"

    def __init__(self, provider: str, message: str, body: str = "") -> None:
        super().__init__(provider, f"response parse failed: {message}: {_clip(body)}")
        self.body = body


class BlockedByHook(LlmError):
    """A PreRequest hook refused the request; the provider was not called."""

    kind = "llm_blocked"

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__(provider, reason)
        self.reason = reason


class LlmConfigError(LlmError, ValueError):
    """A provider's configuration cannot work (an API key with whitespace or
    non-ASCII characters, a base URL that is not http(s)); raised where the
    configuration is built, before any request. Never contains the key."""

    kind = "llm_config"


class UnsupportedContent(LlmError, ValueError):
    """The provider's model cannot take a part of the prompt (``media``: ``image``,
    ``audio`` or ``file``); raised before any request is sent, never retried (a
    fallback chain may move on to a model that can, on ``unsupported_content``)."""

    kind = "unsupported_content"

    def __init__(self, provider: str, media: str, where: str = "") -> None:
        at = f" in {where}" if where else ""
        super().__init__(provider, f"this model does not take {media} parts{at}")
        self.media = media


class UnknownProviderError(LlmError, LookupError):
    """No provider of that name is registered (or none was named and there is no default)."""

    kind = "unknown_provider"

    def __init__(self, name: str | None) -> None:
        if name is None:
            super().__init__("registry", "no provider named and no default provider set")
        else:
            super().__init__(name, f"provider {name!r} is not registered")
        self.name = name
