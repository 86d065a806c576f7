"""``serve --http``: the HTTP API of a SessionHost, on hypercorn's trio worker.

Needs the ``serve`` extra (hypercorn, prometheus_client), imported only once
:func:`serve_http` runs: importing :mod:`agcore_actors.serve` (stdio) does without it.

Routes (JSON in and out; ``{id}`` is a session id; the scope each needs)::

    POST   /v1/sessions/{id}/turns              turns  {"text", "turn"?, "settings"?,
                                                "parts"?} -> SSE of the turn's events,
                                                or with Accept: application/json its
                                                TurnResult (parts: images, files; the
                                                body stays under ``max_body``)
    GET    /v1/sessions/{id}/turns/{turn}       read   reattach: the same, from the first event
    POST   /v1/sessions/{id}/cancel             turns  {"mode"?} -> {"cancelled": bool}
    POST   /v1/sessions/{id}/approvals/{call}   turns  {"allow", "reason"?} -> {"answered": bool}
    POST   /v1/sessions/{id}/turns/{turn}/answers/{call}
                                                turns  {"allow"?, "reason"?, "result"?,
                                                "resume"?} -> AnswerResult (a suspended
                                                turn; see _resume)
    POST   /v1/sessions/{id}/resume             turns  {} -> TurnResult of the open turn
    GET    /v1/sessions/{id}                    read   transcript, facts, usage (404: none)
    GET    /v1/sessions?limit=&cursor=          read   a page of the tenant's session records
    DELETE /v1/sessions/{id}                    turns  204, or 404 when nothing was stored
    GET    /healthz                             -      {"status": "ok"}
    GET    /observer                            -      the observer page (static HTML)
    GET    /observer/state                      admin  what it shows, as JSON
    GET    /metrics                             admin  Prometheus text

Semantics:
    Before anything runs, a request is checked in this order: its framing (both
    ``Content-Length`` and ``Transfer-Encoding``: 400, connection closed), its ``Host``
    (403 unless it names the server: DNS rebinding), its bearer token (401), the
    ``Origin`` of a POST or DELETE (403 unless the server's own), the route (404; a
    known path with another method: 405), the tenant's scope (403), the ids in the path
    (400 unless they follow the id rule), and the body (413 over ``max_body``, 408 when
    slower than ``body_timeout``, 415 unless ``application/json``, 400 when malformed);
    all but the body in :mod:`~agcore_actors.serve._http_admit`. A refused request
    changes nothing. A turn is admitted or refused before it starts: a session with
    ``max_queued`` turns waiting gets 429, a server with ``max_admitted``
    turns admitted or ``max_streams`` streams open, or shutting down, gets 503; each with
    ``Retry-After``; while ``max_admitted`` turns are in flight, a turn POST on a new
    connection gets that 503 at its request line, before any other check, and its
    connection is closed (:mod:`~agcore_actors.serve._http_gate`), as is the connection
    of any ``503 overloaded``. A turn is known by (session, turn id): POSTing an id the
    server remembers reattaches to that turn, and an id the session has stored is 409; a
    turn never runs twice. A turn's response carries its id in ``X-Turn-Id`` before any event.
    A request the layers below cannot serve now (the store down or too slow, an actor
    crashed: any :class:`~agcore_actors.AgcoreError` before the answer began) gets 503
    with that error's kind as ``error_kind`` and ``Retry-After``, never a 500.

Cancellation:
    A turn runs apart from its request (:class:`~agcore_actors.serve._turns.TurnRunner`):
    a client that disconnects mid-stream cancels nothing (unless
    ``cancel_on_disconnect``); the turn ends and is committed, and the client can
    reattach by its id. Shutdown (``shutdown`` returns) stops taking turns, gives
    turns in flight ``drain_timeout`` seconds, then cancels them (each committed as
    cancelled). Cancelling :func:`serve_http` cancels every turn at once.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from .._errors import AgcoreError
from .._ids import new_id
from ..actor import ActorRef
from ..agent import SessionHost, StoreTurns
from ..agent import messages as am
from . import _elicit, _resume
from ._auth import Tenant
from ._errors import BadCommand, HttpRefused, ServeError
from ._http_admit import Admission
from ._http_config import HttpConfig
from ._http_gate import Gate, serve_gated
from ._http_io import (
    BODY_READ,
    Receive,
    Scope,
    Send,
    answer_result,
    encode,
    page_csp,
    read_body,
    refuse,
    respond,
    stream_turn,
    wants_json,
)
from ._http_sessions import SessionReads
from ._logging import log_event
from ._observer import observer_page, observer_query, observer_state
from ._shed import REFUSALS, RetrySpread, refusal
from ._turns import FINAL, RunningTurn, TurnRunner
from ._wire import ApproveCommand, TurnCommand, parse_command

__all__ = ["HttpConfig", "serve_http"]

_log = logging.getLogger("agcore_actors.serve")


class _App:
    def __init__(self, host: SessionHost, store: ActorRef[Any], config: HttpConfig) -> None:
        self.host = host
        self.config = config
        self.admission = Admission(config)
        # The serve extra's modules (hypercorn, prometheus_client) are imported only to
        # serve HTTP: importing agcore_actors.serve (serve --stdio) does without them.
        from ._metrics import Metrics

        self.metrics = Metrics(host)
        self.sessions = SessionReads(host, store, max_page=config.max_page)
        self.runner: TurnRunner | None = None
        self.streams = 0
        self.admitted = config.max_admitted or host.config.max_turns_in_flight
        self.page = observer_page()
        self.page_csp = page_csp(self.page)
        # Before a full window is measured: as if each admitted turn took a second.
        self.spread = RetrySpread(floor=config.retry_after, guess=float(self.admitted))
        self.gate = Gate(self.admitted, self._in_flight, self._retry_after)
        #: A :class:`~agcore_actors.serve.tracing.TurnTracer`, when spans are wanted.
        self.tracer: Any = None
        #: A :class:`~agcore_actors.serve._forward.Forwarder`, when hosts share sessions.
        self.forward: Any = None

    def _in_flight(self) -> int:
        return 0 if self.runner is None else self.runner.open

    def _retry_after(self, full: bool = True) -> int:
        return self.spread.refused(trio.current_time(), full=full)

    def observe(self, turn: RunningTurn, event: am.TurnEvent) -> None:
        if self.tracer is not None:
            self.tracer.observe(turn.session, turn.turn, event)
        now = trio.current_time()
        if isinstance(event, FINAL):
            self.spread.completed(now)
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
            try:
                await self._route(scope, receive, send)
            except AgcoreError as exc:
                if isinstance(exc, ServeError):
                    raise
                # A layer below (the store, an actor) cannot serve this now: 503 with its
                # kind, never a bare 500, and no detail that may name an address.
                _log.warning("%s %s: %s", scope["method"], scope["path"], exc)
                why = f"the server cannot serve this now ({exc.kind}); retry later"
                raise HttpRefused(503, exc.kind, why) from None
        except (HttpRefused, BadCommand) as exc:
            self.gate.decided()
            status = exc.status if isinstance(exc, HttpRefused) else 400
            if status not in (408, 413) and not scope.get(BODY_READ):
                await self.admission.drain(receive)
            if isinstance(exc, HttpRefused) and exc.retry_after is not None:
                retry_after = min(60, max(1, math.ceil(exc.retry_after)))  # whole seconds
            elif status in (429, 503):
                full = isinstance(exc, HttpRefused) and exc.reason == "overloaded"
                retry_after = self._retry_after(full)
            else:
                retry_after = self.config.retry_after
            await refuse(send, exc, retry_after)
        finally:
            self.gate.decided()

    async def _body(self, scope: Scope, receive: Receive) -> Any:
        limit, timeout = self.config.max_body, self.config.body_timeout
        return await read_body(scope, receive, limit=limit, timeout=timeout)

    # -- routes: the one place a request reaches a session -------------------------------------

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        parts = path.strip("/").split("/")
        if method == "GET" and parts in (["healthz"], ["observer"]):
            if parts == ["healthz"]:
                return await respond(send, 200, b'{"status":"ok"}')
            return await respond(send, 200, self.page, "text/html; charset=utf-8",
                                 csp=self.page_csp)  # fmt: skip
        tenant, _ = self.admission.check(scope, method, parts)
        runner = self.runner
        assert runner is not None
        sessions = self.sessions
        if self.forward is not None and len(parts) >= 3 and parts[:2] == ["v1", "sessions"]:
            here = await self.forward.route(
                tenant.store_id(parts[2]), scope, receive, send, max_body=self.config.max_body
            )
            if here is None:  # forwarded and answered by the session's owner
                return
            receive = here
        match method, parts:
            case "GET", ["metrics"]:
                from ._metrics import CONTENT_TYPE

                await respond(send, 200, self.metrics.render(), CONTENT_TYPE)
            case "GET", ["observer", "state"]:
                limit, search = observer_query(scope)
                state = observer_state(self.host, runner, limit=limit, session=search)
                await respond(send, 200, encode(state))
            case "GET", ["v1", "sessions"]:
                await respond(send, 200, await sessions.page(tenant, scope))
            case "GET", ["v1", "sessions", session]:
                await respond(send, 200, await sessions.read(tenant, session))
            case "DELETE", ["v1", "sessions", session]:
                deleted = await self.host.delete(tenant.store_id(session))
                await respond(send, 204 if deleted else 404, b"")
            case "POST", ["v1", "sessions", session, "turns"]:
                command = parse_command(await self._body(scope, receive), session=session)
                if not isinstance(command, TurnCommand):
                    raise BadCommand("a turn needs 'text'")
                await self._post_turn(scope, receive, send, tenant, command)
            case "GET", ["v1", "sessions", session, "turns", turn]:
                found = runner.get(tenant.store_id(session), turn)
                if found is None:
                    raise HttpRefused(404, "no_such_turn", f"no recent turn {turn!r}")
                await self._answer(scope, receive, send, session, found)
            case "POST", ["v1", "sessions", session, "cancel"]:
                body = await self._body(scope, receive)
                mode = body.get("mode", "immediate") if isinstance(body, dict) else None
                if mode not in ("immediate", "after_turn"):
                    raise BadCommand('\'mode\' must be "immediate" or "after_turn"')
                cancelled = await self.host.cancel(tenant.store_id(session), mode)
                await respond(send, 200, encode({"cancelled": cancelled}))
            case "POST", ["v1", "sessions", session, "approvals", call_id]:
                body = await self._body(scope, receive)
                if not isinstance(body, dict):
                    raise BadCommand("an approval must be a JSON object")
                command = parse_command({**body, "approve": call_id}, session=session)
                assert isinstance(command, ApproveCommand)
                answered = await self.host.approve(
                    tenant.store_id(session), command.call_id, command.allow, command.reason
                )
                await respond(send, 200, encode({"answered": answered}))
            case "POST", ["v1", "sessions", session, "turns", turn, "answers", call_id]:
                body = await self._body(scope, receive)
                stored = tenant.store_id(session)
                await respond(
                    send, 200, encode(await _resume.answer(self.host, stored, turn, call_id, body))
                )
            case "POST", ["v1", "sessions", session, "resume"]:
                await self._body(scope, receive)
                result = await _resume.resume(self.host, tenant.store_id(session))
                await respond(send, 200, encode(result))
            case "POST", ["v1", "sessions", session, "elicitations", elicitation_id]:
                body = await self._body(scope, receive)
                if isinstance(body, dict):
                    body = {**body, "elicitation": elicitation_id}
                elicit = _elicit.parse_elicitation(body, session=session)
                reply = await _elicit.answer(self.host, tenant.store_id(session), elicit)
                await respond(send, 200, encode(reply))
            case _:  # Admission.check refused every other shape
                raise AssertionError(parts)

    async def _post_turn(
        self, scope: Scope, receive: Receive, send: Send, tenant: Tenant, command: TurnCommand
    ) -> None:
        """Reattach to a known (session, turn), or admit and start a new turn: every
        refusal is decided here, before the turn starts."""
        runner = self.runner
        assert runner is not None
        sid = tenant.store_id(command.session)
        if command.turn:
            found = runner.get(sid, command.turn)
            if found is None and await self.sessions.has_turn(sid, command.turn):
                raise HttpRefused(409, "turn_exists", f"turn {command.turn!r} has run already")
            found = found or runner.get(sid, command.turn)  # started while the store answered
            if found is not None:
                self.gate.decided()
                return await self._answer(scope, receive, send, command.session, found)
        refused = refusal(
            closing=runner.closed,
            streaming=not wants_json(scope),
            streams=self.streams,
            max_streams=self.config.max_streams,
            in_flight=runner.open,
            admitted=self.admitted,
            waiting=runner.pending[sid],
            max_queued=self.host.config.max_queued,
        )
        if refused is not None:  # overloaded: closed, so the client's retry meets the gate
            status, message = REFUSALS[refused]
            raise HttpRefused(status, refused, message, close=refused == "overloaded")
        turn_id = command.turn or new_id()
        if self.tracer is not None:
            self.tracer.begin(turn_id, _trace_parent(scope))
        running = runner.start(sid, command.text, turn_id, command.settings, command.parts)
        self.gate.decided()
        await self._answer(scope, receive, send, command.session, running)

    async def _answer(
        self, scope: Scope, receive: Receive, send: Send, session: str, turn: RunningTurn
    ) -> None:
        if wants_json(scope):
            return await answer_result(send, session, turn)
        if self.streams >= self.config.max_streams:
            raise HttpRefused(503, "too_many_streams", "too many open event streams")
        self.streams += 1
        try:

            async def watch(cancel: trio.CancelScope) -> None:
                await self._watch_disconnect(receive, cancel, turn)

            await stream_turn(send, session, turn, watch)
        finally:
            self.streams -= 1

    async def _watch_disconnect(
        self, receive: Receive, scope: trio.CancelScope, turn: RunningTurn
    ) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        if self.config.cancel_on_disconnect and turn.final is None:
            await self.host.cancel(turn.session)
        scope.cancel()


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
    ``task_status`` gets the base URL once it listens. ``config`` defaults to loopback
    with a fresh token (read it from the config you pass to hand it out). ``store``: the
    SessionStore actor (default: the one behind the host's
    :class:`~agcore_actors.agent.StoreTurns`); ``tracer``: a
    :class:`~agcore_actors.serve.tracing.TurnTracer` for spans; ``forward``: a
    :class:`~agcore_actors.serve._forward.Forwarder` that sends requests for sessions
    other hosts own to them (the caller closes it)."""
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
    hconfig.backlog = 4096  # a burst of clients waits in the kernel, never refused
    stop = trio.Event()

    async def trigger() -> None:
        if shutdown is None:
            await trio.sleep_forever()
        else:
            await shutdown()
        stop.set()

    async with trio.open_nursery() as server, trio.open_nursery() as turns:
        runner = app.runner = TurnRunner(host, turns, keep=config.keep_turns, observe=app.observe)
        binds = await server.start(serve_gated, app, hconfig, app.gate, trigger)
        task_status.started(binds[0])
        await stop.wait()
        runner.closed = True
        with trio.move_on_after(config.drain_timeout):
            await runner.wait_idle()
        turns.cancel_scope.cancel()
        # The server finishes its graceful shutdown: open streams send their last event.
