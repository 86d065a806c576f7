"""The provider protocol, shared HTTP error mapping, and the provider registry.

A provider is configuration plus conversion: it turns a :class:`ChatRequest`
into one HTTP call on a client it is given (the :class:`ProviderActor` owns
the client), and the answer into a :class:`ChatResponse` or a stream of
:class:`ChatDelta` s. It does not retry, wait or account usage: the single
retry loop in ``_call.py`` does (one loop owns retries).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Protocol, runtime_checkable

import httpx

from ._errors import (
    AuthenticationError,
    ContextLengthError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    RateLimitError,
    RequestError,
    StreamError,
    UnknownProviderError,
    redact,
)
from ._openai_wire import ErrorDetail, error_decoder
from ._retry import parse_retry_after
from ._stream import ChatDelta
from ._types import ChatRequest
from .messages import ChatResponse


@runtime_checkable
class Provider(Protocol):
    """What the retry loop and the ProviderActor need of a provider."""

    @property
    def name(self) -> str: ...

    async def chat(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatResponse:
        """One non-streamed attempt; raises a typed :class:`LlmError`."""
        ...

    def stream(
        self, client: httpx.AsyncClient, request: ChatRequest
    ) -> AsyncGenerator[ChatDelta, None]:
        """One streamed attempt as an async generator of deltas. It ends after
        the provider's end marker and raises :class:`StreamError` when the
        stream breaks off. Closing it early closes the HTTP response."""
        ...


_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "exceed_context_size",
    "context window",
)
_LIMIT = re.compile(r"maximum context length is (\d+)|(\d+) maximum|n_ctx[^\d]{0,10}(\d+)")
_ACTUAL = re.compile(r"(?:requested|resulted in|prompt is too long:) ?(\d+) tokens|(\d+) tokens >")


def _first_int(pattern: re.Pattern[str], text: str) -> int:
    match = pattern.search(text)
    if match is None:
        return 0
    return int(next(g for g in match.groups() if g is not None))


def error_message(body: str) -> str:
    """The human message inside an OpenAI/Anthropic/FastAPI error body, else the body."""
    try:
        parsed = error_decoder.decode(body)
    except Exception:
        return body
    if isinstance(parsed.error, ErrorDetail) and parsed.error.message:
        return parsed.error.message
    if isinstance(parsed.error, str):
        return parsed.error
    if isinstance(parsed.detail, str):
        return parsed.detail
    return body


def status_error(
    provider: str,
    status: int,
    headers: httpx.Headers,
    body: str,
    secrets: tuple[str, ...],
    wall_clock: Callable[[], float] = time.time,
) -> LlmError:
    """Map a non-2xx answer to its typed error (same mapping for streamed calls)."""
    body = redact(body, secrets)
    retry_after = parse_retry_after(headers, wall_clock())
    if status in (401, 403):
        return AuthenticationError(provider, status, body)
    if status == 429:
        return RateLimitError(provider, retry_after, body)
    lowered = body.lower()
    if status in (400, 413, 422) and any(m in lowered for m in _CONTEXT_MARKERS):
        message = error_message(body)
        return ContextLengthError(
            provider, _first_int(_ACTUAL, message), _first_int(_LIMIT, message), body
        )
    return RequestError(provider, status, body, retry_after)


def transport_error(provider: str, exc: httpx.HTTPError, secrets: tuple[str, ...]) -> LlmError:
    """Map an httpx failure; the text is redacted (URLs may carry keys)."""
    text = redact(f"{type(exc).__name__}: {exc}", secrets)
    if isinstance(exc, httpx.ConnectTimeout | httpx.PoolTimeout):
        return LlmConnectionError(provider, f"connect timed out: {text}")
    if isinstance(exc, httpx.TimeoutException):
        return LlmTimeoutError(provider, math.nan)
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return StreamError(provider, f"connection broke: {text}", truncated=True)
    if isinstance(exc, httpx.TransportError):
        return LlmConnectionError(provider, f"connection failed: {text}")
    return LlmConnectionError(provider, f"HTTP failure: {text}")


async def post(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    provider: str,
    secrets: tuple[str, ...],
) -> httpx.Response:
    """POST ``body``; a transport failure or a non-2xx status becomes its typed error."""
    try:
        response = await client.post(url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise transport_error(provider, exc, secrets) from None
    if not response.is_success:
        raise status_error(provider, response.status_code, response.headers, response.text, secrets)
    return response


@asynccontextmanager
async def open_stream(
    client: httpx.AsyncClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    provider: str,
    secrets: tuple[str, ...],
) -> AsyncIterator[httpx.Response]:
    """POST ``body`` and hold the streaming response open for the block.

    Errors as :func:`post`, including transport failures while the block
    reads the stream. Leaving the block (or a cancellation) closes the
    response.
    """
    try:
        async with client.stream("POST", url, content=body, headers=headers) as response:
            if not response.is_success:
                text = (await response.aread()).decode("utf-8", "replace")
                raise status_error(provider, response.status_code, response.headers, text, secrets)
            yield response
    except httpx.HTTPError as exc:
        raise transport_error(provider, exc, secrets) from None


class ProviderRegistry:
    """Providers by name, and an optional default.

    ``register`` overwrites a name silently and never changes the default;
    ``set_default`` of an unknown name raises :class:`UnknownProviderError`;
    ``get_default`` is None until a default is set.
    """

    __slots__ = ("_default", "_providers")

    def __init__(self) -> None:
        self._providers: dict[str, Provider] = {}
        self._default: str | None = None

    def register(self, provider: Provider, name: str | None = None) -> ProviderRegistry:
        self._providers[name or provider.name] = provider
        return self

    def set_default(self, name: str) -> None:
        if name not in self._providers:
            raise UnknownProviderError(name)
        self._default = name

    def get(self, name: str) -> Provider | None:
        return self._providers.get(name)

    def get_default(self) -> Provider | None:
        return None if self._default is None else self._providers.get(self._default)

    @property
    def default_name(self) -> str | None:
        return self._default

    def names(self) -> list[str]:
        return list(self._providers)

    def resolve(self, name: str | None) -> tuple[str, Provider]:
        """The named provider, or the default (the only one, when there is one)."""
        if name is None:
            name = self._default
            if name is None and len(self._providers) == 1:
                name = next(iter(self._providers))
            if name is None:
                raise UnknownProviderError(None)
        provider = self._providers.get(name)
        if provider is None:
            raise UnknownProviderError(name)
        return name, provider
