"""The accept loop of ``serve --http``: hypercorn's connection handling behind a gate that
refuses turns at accept time, at a fixed small cost, while the server is full.

Semantics:
    While :meth:`Gate.shedding` says no turn can be admitted, a new connection's request
    line is read (at most :data:`LINE_LIMIT` bytes within :data:`HEAD_TIMEOUT` seconds)
    before any HTTP parsing. A ``POST /v1/sessions/{id}/turns`` is then answered at once
    with a prepared ``503 overloaded`` (``Retry-After``, ``Connection: close``, the
    common security headers) and the connection is closed once the client has closed its
    side or after :data:`LINGER` seconds; nothing of the request reaches the application,
    so the refusal changes nothing (no token check, no session, no turn). Any other
    request, and every request while turns can be admitted, goes to hypercorn as it came
    (the bytes read ahead are handed back first), where the application checks it in
    full. A refusal costs one task, one read and one write; it allocates no request
    state, so thousands of refused clients do not slow the turns that were admitted.

Cancellation:
    :func:`serve_gated` stops accepting when ``trigger`` returns, lets hypercorn close idle
    keep-alive connections, and gives open ones ``graceful_timeout`` seconds before
    cancelling them (as hypercorn's own ``serve`` does).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from ._http_io import JSON_CSP, SECURITY_HEADERS, encode

if TYPE_CHECKING:
    from hypercorn.config import Config as HypercornConfig

__all__ = ["HEAD_TIMEOUT", "LINE_LIMIT", "LINGER", "Gate", "is_turn_post", "serve_gated"]

#: Seconds a new connection has to send its request line while the server sheds.
HEAD_TIMEOUT = 5.0
#: Bytes read ahead looking for the request line.
LINE_LIMIT = 4096
#: Seconds a refused connection is kept half-closed, reading what the client still sends
#: (closing with unread bytes would reset the connection and could lose the answer).
LINGER = 2.0
#: Bytes read and dropped while lingering.
LINGER_LIMIT = 1 << 20


class _Ticket:
    """A connection handed on with a turn POST first, until that turn is decided."""

    __slots__ = ("undecided",)

    def __init__(self) -> None:
        self.undecided = True


#: The ticket of the connection a request came on (hypercorn's request tasks inherit the
#: context of the connection's task).
_TICKET: ContextVar[_Ticket | None] = ContextVar("agcore_gate_ticket", default=None)


class Gate:
    """How full the server is, counting turn POSTs handed on but not yet decided: in a
    burst, every connection's request line arrives before any turn is admitted."""

    def __init__(
        self, limit: int, in_flight: Callable[[], int], retry_after: Callable[[], int]
    ) -> None:
        #: Turns admitted at once.
        self.limit = limit
        self._in_flight = in_flight
        #: Count a refusal; the seconds its client should wait.
        self.retry_after = retry_after
        #: Turn POSTs handed to the application and not yet admitted or refused.
        self.undecided = 0

    def shedding(self) -> bool:
        """No more turns can be admitted now."""
        return self._in_flight() + self.undecided >= self.limit

    def decided(self) -> None:
        """The application has admitted or refused the turn POST it is handling (called
        in the request's task; a no-op for any later request on the connection)."""
        ticket = _TICKET.get()
        if ticket is not None and ticket.undecided:
            ticket.undecided = False
            self.undecided -= 1

    def _hand_on(self) -> _Ticket:
        self.undecided += 1
        ticket = _Ticket()
        _TICKET.set(ticket)
        return ticket

    def _closed(self, ticket: _Ticket) -> None:
        if ticket.undecided:
            ticket.undecided = False
            self.undecided -= 1


def _refusal() -> tuple[bytes, bytes]:
    body = encode({"error_kind": "overloaded", "error": "too many turns at once; retry later"})
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
        (b"content-security-policy", JSON_CSP),
        *SECURITY_HEADERS,
        (b"connection", b"close"),
    ]
    lines = b"".join(name + b": " + value + b"\r\n" for name, value in headers)
    return b"HTTP/1.1 503 Service Unavailable\r\n" + lines + b"retry-after: ", b"\r\n\r\n" + body


#: The answer of a refusal, before and after its Retry-After.
_BEFORE, _AFTER = _refusal()


def refusal(retry_after: int) -> bytes:
    """The whole answer of a refusal at accept time."""
    return _BEFORE + b"%d" % retry_after + _AFTER


def is_turn_post(head: bytes) -> bool:
    """``head`` starts with the request line of ``POST /v1/sessions/{id}/turns``."""
    line, newline, _ = head.partition(b"\n")
    if not newline or not line.startswith(b"POST /v1/sessions/"):
        return False
    target = line.split(b" ", 2)[1].partition(b"?")[0]
    parts = target.split(b"/")  # "", "v1", "sessions", id, "turns"
    return len(parts) == 5 and parts[4] == b"turns" and parts[3] != b""


class _ReadAhead(trio.abc.Stream):
    """A connection whose first bytes were already read: they come first."""

    def __init__(self, stream: trio.SocketStream, ahead: bytes) -> None:
        self.stream = stream
        self.socket = stream.socket  # hypercorn reads the addresses from it
        self._ahead = ahead

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._ahead:
            ahead, self._ahead = self._ahead, b""
            await trio.lowlevel.checkpoint()
            return ahead
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self.stream.send_eof()

    async def aclose(self) -> None:
        await self.stream.aclose()


async def _refuse(stream: trio.SocketStream, retry_after: int) -> None:
    try:
        await stream.send_all(refusal(retry_after))
        await stream.send_eof()
        with trio.move_on_after(LINGER):
            dropped = 0
            while dropped < LINGER_LIMIT and (chunk := await stream.receive_some(65536)):
                dropped += len(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await stream.aclose()


async def _screen(gate: Gate, stream: trio.SocketStream) -> tuple[_ReadAhead | None, bool]:
    """The connection to hand to hypercorn (None once refused or gone), and whether its
    first request is a turn POST."""
    head = b""
    try:
        with trio.move_on_after(HEAD_TIMEOUT):
            while b"\n" not in head and len(head) < LINE_LIMIT:
                chunk = await stream.receive_some(LINE_LIMIT)
                if not chunk:
                    break
                head += chunk
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        await stream.aclose()
        return None, False
    turn = is_turn_post(head)
    if turn and gate.shedding():
        await _refuse(stream, gate.retry_after())
        return None, True
    return _ReadAhead(stream, head), turn


async def serve_gated(
    app: Any,
    hconfig: HypercornConfig,
    gate: Gate,
    trigger: Callable[[], Awaitable[None]],
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the ASGI ``app`` on ``hconfig``'s binds until ``trigger`` returns; the
    ``task_status`` gets the bound URLs. Plain HTTP only (no TLS, no QUIC), no lifespan
    events (the application needs none)."""
    from hypercorn.trio.tcp_server import TCPServer
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState
    from hypercorn.utils import repr_socket_addr, wrap_app

    wrapped = wrap_app(app, hconfig.wsgi_max_body_size, "asgi")
    context = WorkerContext(None)
    listeners, binds = [], []
    for sock in hconfig.create_sockets().insecure_sockets:
        sock.listen(hconfig.backlog)
        listeners.append(trio.SocketListener(trio.socket.from_stdlib_socket(sock)))
        binds.append(f"http://{repr_socket_addr(sock.family, sock.getsockname())}")

    async def handle(stream: trio.SocketStream) -> None:
        served, turn = await _screen(gate, stream)
        if served is None:
            return
        ticket = gate._hand_on() if turn else None
        try:
            server = TCPServer(wrapped, hconfig, context, ConnectionState({}), served)  # type: ignore[arg-type]
            await server.run()
        finally:
            if ticket is not None:
                gate._closed(ticket)

    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            accept = partial(trio.serve_listeners, handle, listeners, handler_nursery=connections)
            accepting.start_soon(accept)
            task_status.started(binds)
            await trigger()
            accepting.cancel_scope.cancel()
        await context.terminated.set()  # idle keep-alive connections close now
        connections.cancel_scope.deadline = trio.current_time() + hconfig.graceful_timeout
