"""HTTP for providers: one POST, one streamed POST, the SSE read loop, error mapping.

Works with either HTTP stack: ``httpx2`` (preferred when installed) or ``httpx``
0.28, which share their API; the client decides, this module only maps their
exceptions (both stacks' classes) to typed :class:`LlmError` s.

Guarantees of :func:`sse_chunks`, the read loop both providers stream through:

- *Idle limit at the read.* After the response headers, no network read waits
  longer than ``limits.idle`` (the request's per-read timeout is set to it once the
  headers are in), and each chunk is compared with the clock, so a stream that
  sends only keep-alive comments still times out: at the first chunk that arrives
  more than ``idle`` after the last event. No cancel scope is opened per event; one
  is opened per read only when the call deadline is nearer than ``idle``.
- *Caps.* An SSE line or event over ``max_event_bytes`` is a :class:`StreamError`.
- *Cleanup.* The body iterator is always closed (also on error or cancellation),
  and :func:`drain` reads what is left after the end marker, so the connection
  goes back to the pool instead of being closed.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from types import ModuleType
from typing import TYPE_CHECKING, Any

import trio

from ._errors import (
    AuthenticationError,
    ContextLengthError,
    LlmConfigError,
    LlmConnectionError,
    LlmError,
    LlmTimeoutError,
    RateLimitError,
    RequestError,
    StreamError,
    redact,
)
from ._openai_wire import ErrorDetail, error_decoder
from ._provider import ReadLimits
from ._retry import parse_retry_after
from ._sse import SseDecoder, SseEvent

if TYPE_CHECKING:
    import httpx2 as http
else:
    try:
        import httpx2 as http
    except ImportError:  # the older stack
        import httpx as http


def _stacks() -> tuple[ModuleType, ...]:
    found = []
    for name in ("httpx2", "httpx"):
        try:
            found.append(__import__(name))
        except ImportError:
            continue
    return tuple(found)


_STACKS = _stacks()


def _classes(name: str) -> tuple[type[BaseException], ...]:
    return tuple(getattr(m, name) for m in _STACKS if hasattr(m, name))


_HTTP_ERROR = _classes("HTTPError") + _classes("InvalidURL")
_CONNECT_TIMEOUT = _classes("ConnectTimeout") + _classes("PoolTimeout")
_TIMEOUT = _classes("TimeoutException")
_READ_TIMEOUT = _classes("ReadTimeout")
_BROKEN = _classes("RemoteProtocolError") + _classes("ReadError")
_BAD_URL = _classes("UnsupportedProtocol") + _classes("InvalidURL")
_TRANSPORT = _classes("TransportError")
_ENDS: tuple[type[BaseException], ...] = (StopAsyncIteration, *_HTTP_ERROR)

#: Body bytes read after an end marker so the connection can be reused.
DRAIN_BYTES = 64 * 1024
#: Seconds the drain may take before the connection is closed instead.
DRAIN_SECONDS = 1.0


def default_client(connect: float | None, max_connections: int) -> http.AsyncClient:
    """An AsyncClient whose only own timeout is connect (the retry loop bounds
    attempts on trio's clock, the stream reader sets its own read timeout), with a
    pool of ``max_connections`` kept-alive connections."""
    return http.AsyncClient(
        timeout=http.Timeout(None, connect=connect),
        limits=http.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        ),
        follow_redirects=False,
    )


_CONTEXT_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "prompt is too long",
    "exceed_context_size",
    "context window",
)
# llama.cpp's server: "request (5020 tokens) exceeds the available context size (4096 tokens)".
_LIMIT = re.compile(
    r"maximum context length is (\d+)|(\d+) maximum|n_ctx[^\d]{0,10}(\d+)"
    r"|context size \((\d+) tokens\)"
)
_ACTUAL = re.compile(
    r"(?:requested|resulted in|prompt is too long:) ?(\d+) tokens|(\d+) tokens >"
    r"|request \((\d+) tokens\)"
)


def _first_int(pattern: re.Pattern[str], text: str) -> int:
    match = pattern.search(text)
    if match is None:
        return 0
    return int(next(g for g in match.groups() if g is not None))


def error_message(body: str) -> str:
    """The human message inside an OpenAI/Anthropic/FastAPI/vLLM error body, else the body."""
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
    if parsed.message:
        return parsed.message
    return body


def is_context_length(text: str) -> bool:
    """Whether an error text says the prompt does not fit the context."""
    lowered = text.lower()
    return any(marker in lowered for marker in _CONTEXT_MARKERS)


def context_length_error(provider: str, body: str) -> ContextLengthError:
    """A :class:`ContextLengthError` with the counts found in ``body`` (0 if none)."""
    message = error_message(body)
    return ContextLengthError(
        provider, _first_int(_ACTUAL, message), _first_int(_LIMIT, message), body
    )


def status_error(
    provider: str,
    status: int,
    headers: Any,
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
    if status in (400, 413, 422) and is_context_length(body):
        return context_length_error(provider, body)
    return RequestError(provider, status, body, retry_after)


def transport_error(provider: str, exc: BaseException, secrets: tuple[str, ...]) -> LlmError:
    """Map an HTTP stack failure; the text is redacted (URLs may carry keys)."""
    text = redact(f"{type(exc).__name__}: {exc}", secrets)
    if isinstance(exc, _CONNECT_TIMEOUT):
        return LlmConnectionError(provider, f"connect timed out: {text}")
    if isinstance(exc, _TIMEOUT):
        return LlmTimeoutError(provider, math.nan)
    if isinstance(exc, _BROKEN):
        return StreamError(provider, f"connection broke: {text}", truncated=True)
    if isinstance(exc, _BAD_URL):
        return LlmConfigError(provider, f"the URL cannot be requested: {text}")
    if isinstance(exc, _TRANSPORT):
        return LlmConnectionError(provider, f"connection failed: {text}")
    return LlmConnectionError(provider, f"HTTP failure: {text}")


#: Parsed request URLs by (URL type, text); cleared when it reaches 256 entries.
_URLS: dict[tuple[type[Any], str], Any] = {}


def request_url(client: http.AsyncClient, url: str) -> Any:
    """``url`` parsed once as the URL type of ``client`` 's stack (parsing a string URL
    costs about as much as the rest of building a request); ``url`` itself if it does
    not parse (the request then raises its own, mapped, error) or the client has no
    ``base_url``."""
    base = getattr(client, "base_url", None)
    if base is None:
        return url
    key = (type(base), url)
    parsed = _URLS.get(key)
    if parsed is None:
        if len(_URLS) >= 256:
            _URLS.clear()
        try:
            parsed = type(base)(url)
        except Exception:
            parsed = url
        _URLS[key] = parsed
    return parsed


async def post(
    client: http.AsyncClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    provider: str,
    secrets: tuple[str, ...],
) -> http.Response:
    """POST ``body``; a transport failure or a non-2xx status becomes its typed error."""
    try:
        response = await client.post(request_url(client, url), content=body, headers=headers)
    except _HTTP_ERROR as exc:
        raise transport_error(provider, exc, secrets) from None
    if not response.is_success:
        raise status_error(provider, response.status_code, response.headers, response.text, secrets)
    return response


@asynccontextmanager
async def open_stream(
    client: http.AsyncClient,
    url: str,
    body: bytes,
    headers: dict[str, str],
    provider: str,
    secrets: tuple[str, ...],
) -> AsyncIterator[http.Response]:
    """POST ``body`` and hold the streaming response open for the block.

    The wait for the headers has no read timeout of its own (the caller bounds the
    attempt). Errors as :func:`post`, including transport failures while the block
    reads the stream. Leaving the block (or a cancellation) closes the response.
    """
    request = client.build_request("POST", request_url(client, url), content=body, headers=headers)
    timeouts = request.extensions.get("timeout")
    if isinstance(timeouts, dict):
        timeouts["read"] = None
    try:
        response = await client.send(request, stream=True)
    except _HTTP_ERROR as exc:
        raise transport_error(provider, exc, secrets) from None
    try:
        if not response.is_success:
            text = (await response.aread()).decode("utf-8", "replace")
            raise status_error(provider, response.status_code, response.headers, text, secrets)
        yield response
    except _HTTP_ERROR as exc:
        raise transport_error(provider, exc, secrets) from None
    finally:
        await response.aclose()


async def sse_chunks(
    response: http.Response,
    provider: str,
    limits: ReadLimits,
    max_event_bytes: int,
    is_end: Callable[[SseEvent], bool],
) -> AsyncGenerator[list[SseEvent], None]:
    """The SSE events of ``response``, one non-empty list per network read, up to and
    including the first event for which ``is_end`` is true; then the rest of the body
    is drained and the iteration ends (see the module doc for the idle limit, the cap
    and the cleanup). Iterate to the end for the drain to happen; use it under
    ``aclosing`` so an early exit aborts the body at once."""
    idle = limits.idle
    timeouts = response.request.extensions.get("timeout")
    if isinstance(timeouts, dict):
        timeouts["read"] = idle
    decoder = SseDecoder(max_event_bytes, provider)
    last = trio.current_time()
    reads = response.aiter_bytes()
    mid_body = False  # the HTTP stack's generators are suspended between two reads
    try:
        while True:
            now = trio.current_time()
            if now >= limits.deadline:
                raise LlmTimeoutError(provider, limits.call_seconds, "call")
            mid_body = False
            try:
                if limits.deadline - now < (math.inf if idle is None else idle):
                    with trio.CancelScope(deadline=limits.deadline) as scope:
                        chunk = await reads.__anext__()
                    if scope.cancelled_caught:
                        raise LlmTimeoutError(provider, limits.call_seconds, "call")
                else:
                    chunk = await reads.__anext__()
            except StopAsyncIteration:
                if events := decoder.end():
                    yield events
                return
            except _READ_TIMEOUT:
                raise LlmTimeoutError(provider, idle or math.nan, "idle") from None
            mid_body = True
            events = decoder.feed(chunk)
            now = trio.current_time()
            if not events:
                if idle is not None and now - last > idle:
                    raise LlmTimeoutError(provider, idle, "idle")
                continue
            last = now
            for i, event in enumerate(events):
                if is_end(event):
                    yield events[: i + 1]
                    mid_body = await _drain(reads)
                    return
            yield events
    finally:
        if mid_body:
            await _abort(reads)
        await reads.aclose()


async def _drain(reads: AsyncGenerator[bytes, None]) -> bool:
    """Read the body to its end so the connection is reused; True if it was cut off
    (more than :data:`DRAIN_BYTES` or :data:`DRAIN_SECONDS`) between two reads."""
    left = DRAIN_BYTES
    with trio.move_on_after(DRAIN_SECONDS):
        try:
            while left >= 0:
                left -= len(await reads.__anext__())
        except StopAsyncIteration:
            return False
        except _HTTP_ERROR:
            return False
        return True
    return False  # cancelled inside a read: the stack closed its generators itself


async def _abort(reads: AsyncGenerator[bytes, None]) -> None:
    """End the body between two reads: the next read is cancelled, which unwinds the
    HTTP stack's own generators and closes the connection (dropping them unfinished
    would leave them to the garbage collector, and the connection half-read)."""
    with trio.CancelScope() as scope:
        scope.cancel()
        try:
            while True:
                await reads.__anext__()
        except _ENDS:
            return
