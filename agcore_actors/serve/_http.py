"""``serve --http``: the HTTP API of a SessionHost, on hypercorn's trio worker.

Needs the ``serve`` extra (hypercorn, prometheus_client), imported only once
:func:`serve_http` runs: importing :mod:`agcore_actors.serve` (stdio) does without it.

Routes (JSON in and out; ``{id}`` is a session id)::

    POST   /v1/sessions/{id}/turns              {"text", "turn"?} -> SSE of the turn's
                                                events, or with Accept: application/json
                                                its TurnResult when it has ended
    GET    /v1/sessions/{id}/turns/{turn}       reattach: the same, from the first event
    POST   /v1/sessions/{id}/cancel             {"mode"?} -> {"cancelled": bool}
    POST   /v1/sessions/{id}/approvals/{call}   {"allow", "reason"?} -> {"answered": bool}
    GET    /v1/sessions/{id}                    transcript, facts, usage (404: none)
    GET    /v1/sessions?limit=&cursor=          a page of session records
    DELETE /v1/sessions/{id}                    204, or 404 when nothing was stored
    GET    /healthz                             {"status": "ok"}, no token needed
    GET    /metrics                             Prometheus text
    GET    /observer                            the live observer page (HTML)
    GET    /observer/state                      what it shows, as JSON

Semantics:
    Every route but ``/healthz`` needs ``Authorization: Bearer <token>`` when a token is
    configured, and one must be when the server binds a non-loopback address. A body
    larger than ``max_body`` is refused with 413 before it is parsed; more than
    ``max_streams`` open event streams are refused with 503. A malformed body gets 400
    naming the problem and changes nothing. A turn's response carries its id in
    ``X-Turn-Id`` before any event.

Cancellation:
    A turn runs apart from its request (:class:`~agcore_actors.serve._turns.TurnRunner`):
    a client that disconnects mid-stream cancels nothing (unless
    ``cancel_on_disconnect``); the turn ends and is committed, and the client can
    reattach by its id. Shutdown (``shutdown`` returns) stops taking requests, gives
    turns in flight ``drain_timeout`` seconds, then cancels them (each committed as
    cancelled). Cancelling :func:`serve_http` cancels every turn at once.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import attrs
import msgspec
import trio

from .._decode import DECODE_ERRORS
from .._ids import new_id
from .._validators import at_least_one, non_negative
from ..actor import ActorRef
from ..agent import SessionHost, StoreTurns
from ..agent import messages as am
from ..store import SessionNotFound
from ..store import messages as sm
from ._errors import BadCommand, HttpRefused
from ._logging import log_event
from ._observer import observer_page, observer_state
from ._turns import RunningTurn, TurnRunner
from ._wire import ApproveCommand, TurnCommand, event_fields, event_kind, parse_command

if TYPE_CHECKING:
    from hypercorn.config import Config as HypercornConfig

__all__ = ["HttpConfig", "serve_http"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
_encode = msgspec.json.Encoder().encode


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@attrs.frozen(kw_only=True)
class HttpConfig:
    """Where and how :func:`serve_http` serves."""

    #: Address to bind; anything but loopback needs ``token``.
    host: str = "127.0.0.1"
    #: Port to bind; 0 picks a free one (``task_status`` reports the URL).
    port: int = attrs.field(default=8000, validator=non_negative)
    #: Bearer token every route but /healthz requires (None: none, loopback only).
    token: str | None = attrs.field(default=None, repr=False)
    #: Largest request body in bytes.
    max_body: int = attrs.field(default=1 << 20, validator=at_least_one)
    #: Event streams open at once; more get 503.
    max_streams: int = attrs.field(default=1024, validator=at_least_one)
    #: A client that disconnects mid-stream cancels its turn (default: it runs on).
    cancel_on_disconnect: bool = False
    #: Largest page of GET /v1/sessions.
    max_page: int = attrs.field(default=1000, validator=at_least_one)
    #: Finished turns kept for reattaching.
    keep_turns: int = attrs.field(default=256, validator=at_least_one)
    #: Seconds turns in flight get after shutdown begins.
    drain_timeout: float = attrs.field(default=30.0, validator=non_negative)

    def __attrs_post_init__(self) -> None:
        if not self.token and not _is_loopback(self.host):
            raise ValueError(f"binding {self.host!r} (not loopback) needs a bearer token")


async def _respond(
    send: Send, status: int, body: bytes, content_type: str = "application/json"
) -> None:
    headers = [(b"content-type", content_type.encode()), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _App:
    def __init__(self, host: SessionHost, store: ActorRef[Any], config: HttpConfig) -> None:
        self.host = host
        self.store = store
        self.config = config
        # The serve extra's modules (hypercorn, prometheus_client) are imported only to
        # serve HTTP: importing agcore_actors.serve (serve --stdio) does without them.
        from ._metrics import Metrics

        self.metrics = Metrics(host)
        self.runner: TurnRunner | None = None
        self.streams = 0
        #: A :class:`~agcore_actors.serve.tracing.TurnTracer`, when spans are wanted.
        self.tracer: Any = None
        #: A :class:`~agcore_actors.serve._forward.Forwarder`, when hosts share sessions.
        self.forward: Any = None

    def observe(self, turn: RunningTurn, event: am.TurnEvent) -> None:
        if self.tracer is not None:
            self.tracer.observe(turn.session, turn.turn, event)
        now = trio.current_time()
        self.metrics.observe(turn, event, now)
        log_event(turn.session, turn.turn, event, now - turn.started_at)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        try:
            await self._route(scope, receive, send)
        except HttpRefused as exc:
            body = _encode({"error_kind": exc.reason, "error": str(exc)})
            await _respond(send, exc.status, body)
        except BadCommand as exc:
            await _respond(send, 400, _encode({"error_kind": exc.kind, "error": str(exc)}))

    # -- plumbing ---------------------------------------------------------------------------

    def _check_token(self, scope: Scope) -> None:
        if not self.config.token:
            return
        headers = dict(scope["headers"])
        given = headers.get(b"authorization", b"")
        if scope["path"].startswith("/observer"):
            # A browser page cannot set the header: the observer may take the token
            # as the ``access_token`` query parameter (RFC 6750, section 2.3).
            query = parse_qs(scope.get("query_string", b"").decode())
            if "access_token" in query:
                given = b"Bearer " + query["access_token"][-1].encode()
        if not hmac.compare_digest(given, b"Bearer " + self.config.token.encode()):
            raise HttpRefused(401, "unauthorized", "a valid bearer token is required")

    async def _body(self, scope: Scope, receive: Receive) -> Any:
        limit = self.config.max_body
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise HttpRefused(413, "body_too_large", f"the body is larger than {limit} bytes")
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise HttpRefused(400, "disconnected", "the client went away")
            body += message.get("body", b"")
            if len(body) > limit:
                raise HttpRefused(413, "body_too_large", f"the body is larger than {limit} bytes")
            if not message.get("more_body"):
                break
        if not body.strip():
            return {}
        try:
            return msgspec.json.decode(bytes(body))
        except DECODE_ERRORS as exc:
            raise BadCommand(f"not JSON: {exc}") from None

    # -- routes -----------------------------------------------------------------------------

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        if path == "/healthz" and method == "GET":
            return await _respond(send, 200, b'{"status":"ok"}')
        self._check_token(scope)
        parts = path.strip("/").split("/")
        if (
            self.forward is not None
            and len(parts) >= 3
            and parts[:2] == ["v1", "sessions"]
            and await self.forward.route(
                parts[2], scope, receive, send, max_body=self.config.max_body
            )
        ):
            return
        match method, parts:
            case "GET", ["metrics"]:
                from ._metrics import CONTENT_TYPE

                await _respond(send, 200, self.metrics.render(), CONTENT_TYPE)
            case "GET", ["observer"]:
                await _respond(send, 200, observer_page(), "text/html; charset=utf-8")
            case "GET", ["observer", "state"]:
                assert self.runner is not None
                await _respond(send, 200, _encode(observer_state(self.host, self.runner)))
            case "GET", ["v1", "sessions"]:
                await self._list(scope, send)
            case "GET", ["v1", "sessions", session]:
                await self._session(session, send)
            case "DELETE", ["v1", "sessions", session]:
                deleted = await self.host.delete(session)
                await _respond(send, 204 if deleted else 404, b"")
            case "POST", ["v1", "sessions", session, "turns"]:
                command = parse_command(await self._body(scope, receive), session=session)
                if not isinstance(command, TurnCommand):
                    raise BadCommand("a turn needs 'text'")
                assert self.runner is not None
                if self.runner.closed:
                    raise HttpRefused(503, "shutting_down", "the server is shutting down")
                turn_id = command.turn or new_id()
                if self.tracer is not None:
                    self.tracer.begin(turn_id, _trace_parent(scope))
                running = self.runner.start(session, command.text, turn_id)
                await self._turn(scope, receive, send, running)
            case "GET", ["v1", "sessions", session, "turns", turn]:
                assert self.runner is not None
                found = self.runner.get(session, turn)
                if found is None:
                    raise HttpRefused(404, "no_such_turn", f"no recent turn {turn!r}")
                await self._turn(scope, receive, send, found)
            case "POST", ["v1", "sessions", session, "cancel"]:
                body = await self._body(scope, receive)
                mode = body.get("mode", "immediate") if isinstance(body, dict) else None
                if mode not in ("immediate", "after_turn"):
                    raise BadCommand('\'mode\' must be "immediate" or "after_turn"')
                cancelled = await self.host.cancel(session, mode)
                await _respond(send, 200, _encode({"cancelled": cancelled}))
            case "POST", ["v1", "sessions", session, "approvals", call_id]:
                body = await self._body(scope, receive)
                if not isinstance(body, dict):
                    raise BadCommand("an approval must be a JSON object")
                command = parse_command({**body, "approve": call_id}, session=session)
                assert isinstance(command, ApproveCommand)
                answered = await self.host.approve(
                    session, command.call_id, command.allow, command.reason
                )
                await _respond(send, 200, _encode({"answered": answered}))
            case _:
                raise HttpRefused(404, "no_such_route", f"no route {method} {path}")

    async def _list(self, scope: Scope, send: Send) -> None:
        query = parse_qs(scope.get("query_string", b"").decode())
        limit_text = query.get("limit", ["100"])[-1]
        # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
        digits = limit_text.isascii() and limit_text.isdigit() and len(limit_text) <= 9
        if not digits or not 1 <= int(limit_text) <= self.config.max_page:
            raise BadCommand(f"'limit' must be an integer in 1..{self.config.max_page}")
        cursor = query.get("cursor", [None])[-1]
        page: sm.SessionPage = await self.store.ask(
            sm.ListSessions(limit=int(limit_text), cursor=cursor)
        )
        await _respond(send, 200, _encode({"sessions": page.sessions, "cursor": page.cursor}))

    async def _session(self, session: str, send: Send) -> None:
        try:
            snap: sm.SessionSnapshot = await self.store.ask(sm.ExportSession(session))
        except SessionNotFound:
            raise HttpRefused(404, "session_not_found", f"no session {session!r}") from None
        body = {
            "session": session,
            "live": self.host.is_live(session),
            "record": snap.record,
            "usage": snap.record.usage,
            "facts": snap.facts,
            "summary": snap.summary,
            "messages": [{"turn": e.turn, **msgspec.to_builtins(e.message)} for e in snap.entries],
        }
        await _respond(send, 200, _encode(body))

    async def _turn(self, scope: Scope, receive: Receive, send: Send, turn: RunningTurn) -> None:
        accept = dict(scope["headers"]).get(b"accept", b"").decode()
        if "application/json" in accept and "text/event-stream" not in accept:
            result = await turn.result()
            await _respond(send, 200, _encode(result))
            return
        if self.streams >= self.config.max_streams:
            raise HttpRefused(503, "too_many_streams", "too many open event streams")
        self.streams += 1
        try:
            headers = [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-store"),
                (b"x-turn-id", turn.turn.encode()),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._watch_disconnect, receive, nursery.cancel_scope, turn)
                async with aclosing(turn.follow()) as events:
                    async for event in events:
                        data = _encode(event_fields(turn.session, turn.turn, event))
                        kind = event_kind(event).encode()
                        chunk = b"event: %s\ndata: %s\n\n" % (kind, data)
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
                nursery.cancel_scope.cancel()
        finally:
            self.streams -= 1

    async def _watch_disconnect(
        self, receive: Receive, scope: trio.CancelScope, turn: RunningTurn
    ) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()
        if self.config.cancel_on_disconnect and turn.final is None:
            await self.host.cancel(turn.session)


def _trace_parent(scope: Scope) -> Any:
    """The caller's trace context: the request's ``traceparent``, else the current one."""
    from opentelemetry import propagate

    carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
    return propagate.extract(carrier)


def _store_of(host: SessionHost) -> ActorRef[Any]:
    store = host.bundle.store
    if not isinstance(store, StoreTurns):
        raise TypeError("serve_http needs store= when the host's store is not StoreTurns")
    return store.store


async def serve_http(
    host: SessionHost,
    config: HttpConfig | None = None,
    *,
    store: ActorRef[Any] | None = None,
    shutdown: Callable[[], Awaitable[None]] | None = None,
    tracer: Any = None,
    forward: Any = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``host`` over HTTP until ``shutdown`` returns (see the module docstring);
    ``task_status`` gets the base URL once it listens. ``store``: the SessionStore actor
    (default: the one behind the host's :class:`~agcore_actors.agent.StoreTurns`);
    ``tracer``: a :class:`~agcore_actors.serve.tracing.TurnTracer` for spans;
    ``forward``: a :class:`~agcore_actors.serve._forward.Forwarder` that sends requests
    for sessions other hosts own to them (the caller closes it)."""
    from hypercorn.config import Config as HypercornConfig

    config = config or HttpConfig()
    app = _App(host, store if store is not None else _store_of(host), config)
    app.tracer = tracer
    if forward is not None:
        app.forward = forward
        app.metrics.registry.register(forward.collector())
    hconfig = HypercornConfig()
    hconfig.bind = [f"[{config.host}]:{config.port}" if ":" in config.host else
                    f"{config.host}:{config.port}"]  # fmt: skip
    # Streams outlive the drain a little: a turn cancelled at the deadline still sends
    # its final event before its connection closes.
    hconfig.graceful_timeout = config.drain_timeout + 5.0
    hconfig.accesslog = None
    hconfig.errorlog = None
    hconfig.h11_max_incomplete_size = 64 * 1024
    stop = trio.Event()

    async def trigger() -> None:
        if shutdown is None:
            await trio.sleep_forever()
        else:
            await shutdown()
        stop.set()

    async with trio.open_nursery() as server, trio.open_nursery() as turns:
        runner = app.runner = TurnRunner(host, turns, keep=config.keep_turns, observe=app.observe)
        binds = await server.start(serve_app, app, hconfig, trigger)
        task_status.started(binds[0])
        await stop.wait()
        with trio.move_on_after(config.drain_timeout):
            await runner.wait_idle()
        runner.closed = True
        turns.cancel_scope.cancel()
        # The server finishes its graceful shutdown: open streams send their last event.


async def serve_app(
    app: _App,
    hconfig: HypercornConfig,
    trigger: Callable[[], Awaitable[None]],
    task_status: trio.TaskStatus[list[str]] = trio.TASK_STATUS_IGNORED,
) -> None:
    from hypercorn.trio import serve

    await serve(app, hconfig, shutdown_trigger=trigger, task_status=task_status)  # type: ignore[arg-type]
