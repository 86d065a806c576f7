"""The ASGI side of ``serve --http``: answers with their security headers, request bodies
read within bounds, and a turn's events written as server-sent events or one result.

Every answer carries ``X-Content-Type-Options: nosniff``, ``X-Frame-Options: DENY``,
``Referrer-Policy: no-referrer``, ``Cache-Control: no-store`` and a
``Content-Security-Policy`` that forbids everything a JSON answer never needs (the
observer page gets one that allows exactly its own inline script, by hash).

Cancellation: a stream whose client leaves is cancelled (see :func:`stream_turn`); the
turn it follows runs on unless asked otherwise.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import Any

import msgspec
import trio

from .._decode import DECODE_ERRORS
from ._auth import json_content_type
from ._errors import BadCommand, HttpRefused
from ._turns import RunningTurn
from ._wire import event_fields, event_kind

__all__ = ["Receive", "Scope", "Send", "read_body", "respond", "stream_turn"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
Headers = Sequence[tuple[bytes, bytes]]
encode = msgspec.json.Encoder().encode
#: Set in the ASGI scope once the request's body has been read to its end.
BODY_READ = "agcore.body_read"

SECURITY_HEADERS: list[tuple[bytes, bytes]] = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]
JSON_CSP = b"default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"


def _hashes(html: bytes, tag: bytes) -> bytes:
    blocks = re.findall(b"<" + tag + b">(.*?)</" + tag + b">", html, re.S)
    found = b" ".join(
        b"'sha256-" + base64.b64encode(hashlib.sha256(s).digest()) + b"'" for s in blocks
    )
    return found or b"'none'"


def page_csp(html: bytes) -> bytes:
    """A policy for ``html`` that applies its inline scripts and styles (by hash) and
    nothing else, fetches only from the page's own origin, and cannot be framed."""
    return (
        b"default-src 'none'; script-src " + _hashes(html, b"script") + b"; style-src "
        + _hashes(html, b"style") + b"; img-src 'self' data:; connect-src 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    )  # fmt: skip


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: str = "application/json",
    *,
    headers: Headers = (),
    csp: bytes = JSON_CSP,
) -> None:
    """One whole answer with the common headers."""
    all_headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", b"%d" % len(body)),
        (b"content-security-policy", csp),
        *SECURITY_HEADERS,
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


async def refuse(send: Send, exc: HttpRefused | BadCommand, retry_after: int) -> None:
    """``exc`` as an answer: its status (400 for a bad command), ``error_kind`` and
    message; ``Retry-After`` on 429 and 503; ``Connection: close`` when the request's
    framing cannot be trusted."""
    if isinstance(exc, BadCommand):
        status, kind = 400, exc.kind
    else:
        status, kind = exc.status, exc.reason
    headers: list[tuple[bytes, bytes]] = []
    if status in (429, 503):
        headers.append((b"retry-after", b"%d" % retry_after))
    if isinstance(exc, HttpRefused) and exc.close:
        headers.append((b"connection", b"close"))
    if isinstance(exc, HttpRefused) and exc.allow:
        headers.append((b"allow", exc.allow.encode()))
    await respond(send, status, encode({"error_kind": kind, "error": str(exc)}), headers=headers)


async def read_body(scope: Scope, receive: Receive, *, limit: int, timeout: float) -> Any:
    """The request's JSON body ({} when empty), read within ``timeout`` seconds and
    ``limit`` bytes; a non-empty body must be ``application/json`` (415 otherwise)."""
    headers = dict(scope["headers"])
    length = headers.get(b"content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise HttpRefused(413, "body_too_large", f"the body is larger than {limit} bytes")
    body = b""
    with trio.move_on_after(timeout) as waited:
        body = await read_bytes(scope, receive, limit)
    if waited.cancelled_caught:
        raise HttpRefused(408, "body_timeout", f"the body took over {timeout:g} s", close=True)
    if not body.strip():
        return {}
    if not json_content_type(headers.get(b"content-type")):
        raise HttpRefused(415, "unsupported_media_type", "a body must be application/json")
    try:
        return msgspec.json.decode(bytes(body))
    except DECODE_ERRORS as exc:
        raise BadCommand(f"not JSON: {exc}") from None


async def read_bytes(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The request's body as it came, at most ``limit`` bytes (else 413); 400 when the
    client leaves first. Marks the scope :data:`BODY_READ` once read whole."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise HttpRefused(400, "disconnected", "the client went away")
        body += message.get("body", b"")
        if len(body) > limit:
            raise HttpRefused(413, "body_too_large", f"the body is larger than {limit} bytes")
        if not message.get("more_body"):
            scope[BODY_READ] = True  # a refusal after this need not read it again
            return bytes(body)


def wants_json(scope: Scope) -> bool:
    """The client asked for the turn's result instead of its events."""
    accept = dict(scope["headers"]).get(b"accept", b"").decode("latin-1")
    return "application/json" in accept and "text/event-stream" not in accept


async def answer_result(send: Send, session: str, turn: RunningTurn) -> None:
    """The turn's result once it has ended, as one JSON answer."""
    result = msgspec.to_builtins(await turn.result())
    result["session"] = session
    await respond(send, 200, encode(result))


async def stream_turn(
    send: Send,
    session: str,
    turn: RunningTurn,
    watch: Callable[[trio.CancelScope], Awaitable[None]],
) -> None:
    """Every event of ``turn`` as server-sent events (``X-Turn-Id`` first), ending the
    response once its final event is written. ``watch`` runs beside it until then and
    cancels the scope it is given when the client leaves.

    The response's end is sent after ``watch`` has stopped: the server closes or recycles
    the connection inside that call (its keep-alive timer starts there), which a
    cancellation from a watcher woken by the end itself would cut short, leaving the
    connection open for ever."""
    headers = [
        (b"content-type", b"text/event-stream"),
        (b"content-security-policy", JSON_CSP),
        *SECURITY_HEADERS,
        (b"x-turn-id", turn.turn.encode()),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    with trio.CancelScope() as streaming:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(watch, streaming)
            async with aclosing(turn.follow()) as events:
                async for event in events:
                    data = encode(event_fields(session, turn.turn, event))
                    chunk = b"event: %s\ndata: %s\n\n" % (event_kind(event).encode(), data)
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            nursery.cancel_scope.cancel()  # stop watching before the end is sent
    if not streaming.cancel_called:  # the client is still there
        await send({"type": "http.response.body", "body": b""})
