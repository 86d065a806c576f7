"""The accept loop of ``serve --http``: hypercorn's connection handling behind a gate that
refuses turns at accept time, at a fixed small cost, while the server is full.

Semantics:
    A new connection's request line is read (at most :data:`LINE_LIMIT` bytes within
    :data:`HEAD_TIMEOUT` seconds, hypercorn's keep-alive timeout; a connection that sends
    no line by then is closed) before any HTTP parsing. While :meth:`Gate.shedding` says
    no turn can be admitted (the turns in flight and the turn POSTs let through but not
    yet admitted or refused reach the limit: in a burst, every request line arrives before
    the first turn starts), a ``POST /v1/sessions/{id}/turns`` is then answered at once
    with a prepared ``503 overloaded`` (``Retry-After``, ``Connection: close``, the
    common security headers) and the connection is closed once the client has closed its
    side or after :data:`LINGER` seconds; nothing of the request reaches the application,
    so the refusal changes nothing (no token check, no session, no turn). Any other
    request, and every request while turns can be admitted, goes to hypercorn as it came
    (the bytes read ahead are handed back first), where the application checks it in
    full. A refusal costs one task, one read and one write; it allocates no request
    state, so thousands of refused clients do not slow the turns that were admitted.
    Where the system has it (Linux), the listening socket defers accepting a connection
    until its first bytes have come (``TCP_DEFER_ACCEPT``, :data:`HEAD_TIMEOUT` seconds;
    one silent for longer is accepted then, and closed after :data:`HEAD_TIMEOUT` more):
    nearly every connection is then accepted with its request line already there, and a
    refused one is answered and closed in the accept loop itself, with no task of its
    own (about half the server CPU of a refusal that waits for its line in a task).

Cancellation:
    :func:`serve_gated` stops accepting when ``trigger`` returns, lets hypercorn close idle
    keep-alive connections, and gives open ones ``graceful_timeout`` seconds before
    cancelling them (as hypercorn's own ``serve`` does).
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import trio

from ._http_io import JSON_CSP, SECURITY_HEADERS, encode
from ._shed import REFUSALS, full

if TYPE_CHECKING:
    from hypercorn.config import Config as HypercornConfig

__all__ = ["HEAD_TIMEOUT", "LINE_LIMIT", "LINGER", "Gate", "is_turn_post", "serve_gated"]

#: Seconds a new connection has to send its request line (hypercorn's keep-alive timeout).
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
        return full(self._in_flight(), self.undecided, self.limit)

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
    status, message = REFUSALS["overloaded"]
    assert status == 503
    body = encode({"error_kind": "overloaded", "error": message})
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


def _whole(head: bytes) -> bool:
    """``head`` holds a whole request: its head and a ``Content-Length`` body (closing a
    connection with bytes still unread would reset it and could lose the answer)."""
    end = head.find(b"\r\n\r\n")
    if end < 0:
        return False
    fields = head[:end].lower()
    if b"\ntransfer-encoding:" in fields:
        return False
    start = fields.find(b"\ncontent-length:")
    if start < 0:
        return True
    value = fields[start + 16 :].partition(b"\r")[0].strip()
    return value.isdigit() and len(head) - end - 4 >= int(value)


async def _linger(stream: trio.SocketStream) -> None:
    """Read and drop what the client still sends, then close."""
    try:
        with trio.move_on_after(LINGER):
            dropped = 0
            while dropped < LINGER_LIMIT and (chunk := await stream.receive_some(65536)):
                dropped += len(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await stream.aclose()


def _refuse_now(conn: socket.socket, head: bytes, retry_after: int) -> bool:
    """Answer and close ``conn`` without waiting; False when it must linger (the request
    is not all read, or the answer did not fit in one write)."""
    answer = refusal(retry_after)
    try:
        sent = conn.send(answer)
        if sent == len(answer):
            conn.shutdown(socket.SHUT_WR)
            if _whole(head):
                conn.close()
                return True
        else:
            conn.close()  # an empty send buffer that cannot take 500 bytes: give up
            return True
    except OSError:
        conn.close()
        return True
    return False


async def _read_line(stream: trio.SocketStream, head: bytes) -> bytes:
    """``head`` and what follows, until the request line has ended (b"" when the client
    left or stayed silent for :data:`HEAD_TIMEOUT`)."""
    try:
        with trio.move_on_after(HEAD_TIMEOUT):
            while b"\n" not in head and len(head) < LINE_LIMIT:
                chunk = await stream.receive_some(LINE_LIMIT)
                if not chunk:
                    return b""
                head += chunk
            return head
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    return b""


def _take(conn: socket.socket, gate: Gate, nursery: trio.Nursery) -> bytes | None:
    """What ``conn`` sent so far (b"": nothing yet), or None once it was dealt with here: a
    turn POST refused at once, a connection that failed or was reset."""
    conn.setblocking(False)
    try:
        head = conn.recv(LINE_LIMIT)
    except BlockingIOError:
        return b""  # not here yet: the connection's task waits for it
    except OSError:
        conn.close()
        return None
    if not (head and is_turn_post(head) and gate.shedding()):
        return head
    if not _refuse_now(conn, head, gate.retry_after()):
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(conn))
        nursery.start_soon(_linger, stream)
    return None


#: accept() errors after which the loop waits a little (out of descriptors or memory).
_CAPACITY = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
#: Connections accepted (and refused at once when the server is full) per turn of the
#: event loop: a burst is taken in slices, between the admitted turns' steps.
ACCEPT_SLICE = 16


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
    sockets = hconfig.create_sockets().insecure_sockets
    binds = []
    for sock in sockets:
        if hasattr(socket, "TCP_DEFER_ACCEPT"):  # Linux: accepted once its first bytes came
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, int(HEAD_TIMEOUT))
        sock.listen(hconfig.backlog)
        sock.setblocking(False)
        binds.append(f"http://{repr_socket_addr(sock.family, sock.getsockname())}")

    async def handle(conn: socket.socket, head: bytes) -> None:
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(conn))
        try:
            if b"\n" not in head and len(head) < LINE_LIMIT:
                head = await _read_line(stream, head)
                if not head:  # gone, or idle as long as hypercorn lets a connection idle
                    return
            turn = is_turn_post(head)
            if turn and gate.shedding():
                await stream.send_all(refusal(gate.retry_after()))
                await stream.send_eof()
                if not _whole(head):
                    await _linger(stream)
                return
            ticket = gate._hand_on() if turn else None
            try:
                served = _ReadAhead(stream, head)
                server = TCPServer(wrapped, hconfig, context, ConnectionState({}), served)  # type: ignore[arg-type]
                await server.run()
            finally:
                if ticket is not None:
                    gate._closed(ticket)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            await stream.aclose()  # the server closed it already, unless it never ran

    async def accept(listener: socket.socket, nursery: trio.Nursery) -> None:
        """Take connections a slice at a time; a turn POST whose request line has arrived
        is refused right here when the server is full, with no task of its own."""
        try:
            while True:
                await trio.lowlevel.wait_readable(listener)
                for _ in range(ACCEPT_SLICE):
                    try:
                        conn, _ = listener.accept()
                    except BlockingIOError:
                        break
                    except OSError as exc:
                        if exc.errno in _CAPACITY:
                            await trio.sleep(0.1)
                        break
                    head = _take(conn, gate, nursery)
                    if head is not None:
                        nursery.start_soon(handle, conn, head)
        finally:
            trio.lowlevel.notify_closing(listener)
            listener.close()

    async with trio.open_nursery() as connections:
        async with trio.open_nursery() as accepting:
            for sock in sockets:
                accepting.start_soon(accept, sock, connections)
            task_status.started(binds)
            await trigger()
            accepting.cancel_scope.cancel()
        await context.terminated.set()  # idle keep-alive connections close now
        connections.cancel_scope.deadline = trio.current_time() + hconfig.graceful_timeout
