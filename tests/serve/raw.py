"""Raw HTTP/1.1 over a TCP socket for the serve tests: what a client library would not
send (two framings at once, a stalled body, a foreign Host) and what it would hide (when
the server closes the connection)."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import trio

from tests.serve.runtime import Served


async def connect(s: Served) -> trio.SocketStream:
    parts = urlsplit(s.url)
    assert parts.hostname is not None and parts.port is not None
    return await trio.open_tcp_stream(parts.hostname, parts.port)


def head(s: Served, method: str, path: str, *extra: str, host: str | None = None) -> bytes:
    """A request head with the server's token and its own Host (``host`` overrides)."""
    lines = [
        f"{method} {path} HTTP/1.1",
        f"host: {urlsplit(s.url).netloc if host is None else host}",
        f"authorization: {s.headers['authorization']}",
        *extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def turn_request(s: Served, session: str, body: dict[str, object], *extra: str) -> bytes:
    data = json.dumps(body).encode()
    return (
        head(
            s,
            "POST",
            f"/v1/sessions/{session}/turns",
            "content-type: application/json",
            f"content-length: {len(data)}",
            *extra,
        )
        + data
    )


async def read_to_eof(stream: trio.SocketStream, seconds: float = 10) -> bytes:
    """Everything the server sends until it closes; AssertionError if it has not closed
    after ``seconds`` (a guard against a hang, not a timing)."""
    received = b""
    with trio.move_on_after(seconds) as waited:
        while chunk := await stream.receive_some():
            received += chunk
    assert not waited.cancelled_caught, f"the server kept the connection: {received[-200:]!r}"
    return received
