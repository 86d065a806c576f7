"""A real HTTP server on 127.0.0.1 that speaks the OpenAI and Anthropic wire formats
from a script, for fault injection.

Each test scripts a scenario: the replies to give, in order (the last one repeats).
A reply has a status, headers and a body made of byte pieces and pauses; the
framing is Content-Length, chunked, or close-delimited, and ``cut`` ends the body
early (an incomplete chunked or Content-Length body: the client sees the
connection break). Pauses watch the socket, so a client that hangs up is seen
at once and recorded as a disconnect. Every request is recorded, unless the scenario
says not to (a long soak would hoard them).

A reply may carry a ``plain`` alternative, served to a request that does not ask for a
stream, so one script answers ``Chat`` and ``ChatStream`` alike in the real wire shapes.

A scenario may instead answer each request from its body with a *responder*
(:meth:`FaultServer.respond`): the seeded fault schedule of
``tests/peers/fault_openai.py`` is one, run by that module as a server process of its own.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Piece = bytes | float


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: list[Piece] = field(default_factory=list)
    #: "length" (Content-Length), "chunked", or "close" (body ends at EOF).
    framing: str = "length"
    #: End the body early: the client sees a broken (incomplete) body.
    cut: bool = False
    #: Seconds to wait before the status line.
    delay: float = 0.0
    #: The answer instead of this one to a request that does not ask for a stream
    #: (``"stream"`` absent or false): a scripted reply can serve both kinds of call.
    plain: Reply | None = None

    def for_request(self, body: Any) -> Reply:
        """This reply, or its ``plain`` alternative for a request without ``"stream": true``."""
        if self.plain is not None and not (isinstance(body, dict) and body.get("stream")):
            return self.plain
        return self


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


#: Answers one request from its decoded JSON body (None when it had none).
Responder = Callable[[Any], Reply]


@dataclass
class Scenario:
    replies: list[Reply]
    requests: list[Recorded] = field(default_factory=list)
    #: When set, answers every request instead of ``replies``.
    responder: Responder | None = None
    #: Keep every request in ``requests``.
    record: bool = True
    disconnects: int = 0
    active: int = 0
    max_active: int = 0
    served: int = 0


class FaultServer:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._scenarios: dict[str, Scenario] = {}
        self._next = 0
        #: TCP connections accepted so far (all scenarios).
        self.connections = 0
        server = self

        class Handler(_Handler):
            owner = server

        self.httpd = _Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> FaultServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def script(self, *replies: Reply) -> tuple[str, Scenario]:
        """Register a scenario; returns its base URL (``.../v1``) and its record."""
        with self._lock:
            self._next += 1
            sid = f"s{self._next}"
            scenario = self._scenarios[sid] = Scenario(list(replies))
        return f"http://127.0.0.1:{self.port}/{sid}/v1", scenario

    def respond(self, responder: Responder, *, record: bool = False) -> tuple[str, Scenario]:
        """Register a scenario answered by ``responder`` (called on the server's handler
        threads, one call per request, possibly at once); returns its base URL and record."""
        with self._lock:
            self._next += 1
            sid = f"s{self._next}"
            scenario = Scenario([], responder=responder, record=record)
            self._scenarios[sid] = scenario
        return f"http://127.0.0.1:{self.port}/{sid}/v1", scenario

    def root(self, base_url: str) -> str:
        """The Anthropic-style base (without ``/v1``) of a scenario URL."""
        return base_url.removesuffix("/v1")

    def _take(self, sid: str, body: Any) -> tuple[Scenario, Reply] | None:
        with self._lock:
            scenario = self._scenarios.get(sid)
            if scenario is None:
                return None
            index = min(scenario.served, len(scenario.replies) - 1)
            scenario.served += 1
            scenario.active += 1
            scenario.max_active = max(scenario.max_active, scenario.active)
            if scenario.responder is None:
                return scenario, scenario.replies[index].for_request(body)
        return scenario, scenario.responder(body)

    def _release(self, scenario: Scenario) -> None:
        """The reply starts: the request no longer counts as active. Released before a
        single byte goes out, so a client can never see it finish while it counts."""
        with self._lock:
            scenario.active -= 1

    def _done(self, scenario: Scenario, disconnected: bool, released: bool) -> None:
        with self._lock:
            if not released:
                scenario.active -= 1
            if disconnected:
                scenario.disconnects += 1


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up between requests is what fault tests do; anything
        # else is still printed.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    owner: FaultServer
    protocol_version = "HTTP/1.1"
    _released = False

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        with self.owner._lock:
            self.owner.connections += 1
        # Headers and body go out in separate writes: without this, delayed ACKs
        # add 40 ms to every reply.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._serve(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self._serve(body)

    def _serve(self, body: Any) -> None:
        sid = self.path.strip("/").split("/", 1)[0]
        taken = self.owner._take(sid, body)
        if taken is None:
            self.send_error(404, "no such scenario")
            return
        scenario, reply = taken
        if scenario.record:
            scenario.requests.append(
                Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
        disconnected = False
        self._released = False
        try:
            disconnected = not self._reply(scenario, reply)
        except (BrokenPipeError, ConnectionResetError):
            disconnected = True
        finally:
            self.owner._done(scenario, disconnected, self._released)
        if disconnected or reply.cut or reply.framing == "close":
            self.close_connection = True

    def _wait(self, seconds: float) -> bool:
        """Sleep, unless the client hangs up first (then False)."""
        end = time.monotonic() + seconds
        sock: socket.socket = self.connection
        while (left := end - time.monotonic()) > 0:
            readable, _, _ = select.select([sock], [], [], min(left, 0.05))
            if readable:
                try:
                    if sock.recv(1, socket.MSG_PEEK) == b"":
                        return False
                except OSError:
                    return False
                time.sleep(min(left, 0.01))
        return True

    def _reply(self, scenario: Scenario, reply: Reply) -> bool:
        if reply.delay and not self._wait(reply.delay):
            return False
        self.owner._release(scenario)
        self._released = True
        data = [p for p in reply.body if isinstance(p, bytes)]
        total = sum(len(p) for p in data)
        self.send_response(reply.status)
        headers = {k.lower(): v for k, v in reply.headers.items()}
        headers.setdefault("content-type", "application/json")
        for key, value in headers.items():
            self.send_header(key, value)
        if reply.framing == "chunked":
            self.send_header("transfer-encoding", "chunked")
        elif reply.framing == "length":
            self.send_header("content-length", str(total + (100 if reply.cut else 0)))
        else:
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.flush()
        for piece in reply.body:
            if isinstance(piece, float | int):
                if not self._wait(float(piece)):
                    return False
                continue
            if reply.framing == "chunked":
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            else:
                self.wfile.write(piece)
            self.wfile.flush()
        if reply.framing == "chunked" and not reply.cut:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        return True


# -- wire helpers --------------------------------------------------------------------------


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


def json_reply(obj: Any, status: int = 200, **kw: Any) -> Reply:
    return Reply(status=status, body=[dumps(obj)], **kw)


def error_reply(status: int, message: str, code: str | None = None, **kw: Any) -> Reply:
    error: dict[str, Any] = {"message": message, "type": "error"}
    if code is not None:
        error["code"] = code
    return json_reply({"error": error}, status=status, **kw)


def completion(
    content: str | None = "Hello",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    reasoning: str | None = None,
    finish: str = "stop",
    usage: dict[str, Any] | None = None,
    model: str = "test-model",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    out: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def usage_chunk(usage: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": [],
        "usage": usage,
    }


def sse(*events: dict[str, Any] | str, done: bool = True, sep: bytes = b"\n") -> list[Piece]:
    """One ``data:`` event per object (strings are sent raw), then ``[DONE]``."""
    pieces: list[Piece] = []
    for event in events:
        data = event.encode() if isinstance(event, str) else dumps(event)
        pieces.append(b"data: " + data + sep + sep)
    if done:
        pieces.append(b"data: [DONE]" + sep + sep)
    return pieces


def sse_reply(*pieces: Piece, **kw: Any) -> Reply:
    return Reply(
        headers={"content-type": "text/event-stream; charset=utf-8"}, body=list(pieces), **kw
    )


def anthropic_event(kind: str, payload: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + dumps({"type": kind, **payload}) + b"\n\n"
