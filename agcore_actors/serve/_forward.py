"""Forwarding a request of ``serve --http`` to the host that owns its session.

Several hosts share one PostgreSQL and a load balancer spreads the clients' requests over
them; a session lives on one host at a time (its lease). A request for a session another
live host owns is forwarded to that host here, and its answer (an event stream included)
copied back as it comes, so the client sees the same HTTP API whichever host it reached.

Semantics:
    :meth:`Forwarder.route` asks ``locate`` where the session lives. ``None`` (this host
    owns it, nobody does, or its owner is dead: the local activation takes it over) →
    the request is not touched and the caller serves it. An :class:`Owner` → the request
    is sent to ``owner.address`` with the same method, path, query, body and headers, less
    the hop-by-hop ones (RFC 9110 section 7.6.1), ``Host`` and ``Origin``. The caller has
    checked the request (Host, token, Origin, scope, ids) before it is routed here, and
    the owner checks it again as its own: the client's ``Authorization`` goes along as it
    came, so the owner checks the same token and, with tenants, sees the same tenant (the
    hosts share their tokens); the path keeps the client's session id, to which the owner
    applies the tenant's prefix itself (``locate`` is asked about the stored id, the
    prefixed one); ``Host`` names ``owner.address``, which the owner must take as its own
    name (its bound address, an IP address for a wildcard bind, else a name of its
    ``allowed_hosts``); and ``Origin``, checked here against this host's origin, would be
    another origin on the owner (another address or port), so it stays behind. The
    forwarded request carries
    ``X-Agcore-Forwarded-By: <this host's id>``, and a request carrying it is never
    forwarded again: one hop at most, so two hosts that disagree about an owner for a
    moment cannot bounce a request between them (the second serves it, or refuses it with
    its own error when it cannot take the lease).

    The owner's status and headers come back as they are (hop-by-hop ones dropped) and
    its body chunk by chunk, with no buffering: a turn's server-sent events reach the
    client as the owner sends them. An owner that cannot be connected to (refused, or
    not within ``connect_timeout``: it died or is cut off) is answered with 503
    ``owner_unreachable``: nothing ran there, and once its lease expires a request takes
    the session over. An owner that connects and then breaks off before answering is
    answered with 502 ``owner_failed`` (the request may have run there). One that fails
    mid-answer ends the client's response where it broke (a turn's stream without its
    last event: the client reattaches by the turn id, as after any cut connection). There
    is no read timeout, but an owner that has not begun to answer when its lease (as
    ``locate`` read it) runs out is looked up again: while it keeps its lease, the request
    waits for it (a long turn answered only at its end); once nobody holds a live lease (a
    stalled owner: stopped, its kernel still accepting connections, its lease expired),
    the forwarded request is closed and the request is served here, as one for a session
    nobody owns (the local activation takes the session over and repairs the turn the
    owner left open); once another host holds it, the request is sent on to that host.
    The old owner may still read the request if it wakes up: its lease fences its writes,
    and the turn id keeps the turn from running twice (a retried id answers 409
    ``turn_exists``). After ``max_moves`` such moves the client is answered 502
    ``owner_failed`` instead.

Cancellation:
    A client that disconnects closes the forwarded request at once; the owner sees a
    disconnect, exactly as if the client had been its own (a turn runs on unless
    ``cancel_on_disconnect``). Cancelling :meth:`Forwarder.route` closes the forwarded
    request too. :meth:`Forwarder.aclose` closes the connection pool.

Where a session lives is asked of ``locate`` (the lease, read from the store); when that
fails (the store is unavailable or too slow: an ``AgcoreError``) the request is answered
503 ``owner_unknown`` and nothing ran.

Counting: ``agcore_cluster_forwards_total{outcome}`` (``forwarded``: an answer came back;
``unreachable``; ``broken``: it broke mid-answer; ``unlocated``: the owner could not be
looked up; ``moved``: the owner had not answered when its lease ran out, and the request
went on to the new owner or was served here), in the server's ``/metrics``.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import attrs
import trio
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from .._errors import AgcoreError
from .._validators import at_least_one, non_empty, positive
from ._errors import HttpRefused

if TYPE_CHECKING:
    import httpx2

    from ..agent import SessionHost

__all__ = ["FORWARDED_BY", "ForwardConfig", "Forwarder", "Locate", "Owner", "host_locate"]

#: The header a forwarded request carries: the forwarding host's id.
FORWARDED_BY = b"x-agcore-forwarded-by"
# RFC 9110 section 7.6.1, plus what the next hop sets itself (host, length: httpx2
# recomputes them for the body it sends), and the Origin checked here (module docstring).
_HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"content-length",
        b"origin",
    }
)
# The forwarding server sets these itself on the answer it sends.
_OWN_RESPONSE_HEADERS = frozenset({b"date", b"server"})
_OUTCOMES = ("forwarded", "unreachable", "broken", "unlocated", "moved")
#: Set in the request's scope once its body has been read whole.
BODY_READ = "agcore.body_read"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


@attrs.frozen(kw_only=True)
class Owner:
    """Another live host that owns a session."""

    #: The owner's host id.
    host_id: str
    #: Its base URL as the other hosts reach it (``http://10.0.0.2:8000``).
    address: str
    #: Seconds its lease had left when it was read (unknown: for ever).
    seconds_left: float = math.inf


#: Where a session lives: ``None`` to serve it here (this host owns it, or nobody does and
#: the local activation will take it), else its owner.
Locate = Callable[[str], Awaitable[Owner | None]]


def host_locate(host: SessionHost) -> Locate:
    """``host``'s answer as :data:`Locate` wants it: the owner when another live host
    holds the session's lease and registered an address; else None (live here, free, or
    its owner's lease expired: the local activation takes it; or an owner without an
    address: the activation refuses with ``SessionOwnedElsewhere`` until it lapses)."""
    from ..cluster import Remote

    async def locate(session: str) -> Owner | None:
        where = await host.locate(session)
        if isinstance(where, Remote) and where.address:
            return Owner(host_id=where.host, address=where.address, seconds_left=where.seconds_left)
        return None

    return locate


@attrs.frozen(kw_only=True)
class ForwardConfig:
    """How :class:`Forwarder` reaches the other hosts."""

    #: This host's id, sent in ``X-Agcore-Forwarded-By``.
    host_id: str = attrs.field(validator=non_empty)
    #: Seconds to connect to an owner before answering 503 ``owner_unreachable``.
    connect_timeout: float = attrs.field(default=2.0, validator=positive)
    #: Connections kept open to the other hosts, all of them together.
    max_connections: int = attrs.field(default=256, validator=at_least_one)
    #: Times a request follows its session to a new owner (or here) after the owner it
    #: was sent to lost its lease before answering, before the client gets 502.
    max_moves: int = attrs.field(default=2, validator=at_least_one)


def _drop_hop_by_hop(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    named = {
        token.strip().lower()
        for name, value in headers
        if name.lower() == b"connection"
        for token in value.split(b",")
    }
    return [(k, v) for k, v in headers if k.lower() not in _HOP_BY_HOP and k.lower() not in named]


def forwarded(scope: Scope) -> bool:
    """Whether this request came from another host (and so must not be forwarded again)."""
    return any(name.lower() == FORWARDED_BY for name, _ in scope["headers"])


class _Counts(Collector):
    def __init__(self) -> None:
        self.counts = dict.fromkeys(_OUTCOMES, 0)

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "agcore_cluster_forwards",
            "Requests forwarded to the session's owner, by outcome.",
            labels=["outcome"],
        )
        for outcome, value in self.counts.items():
            family.add_metric([outcome], value)
        yield family


class Forwarder:
    """Sends requests for sessions owned elsewhere to their owner (module docstring)."""

    def __init__(self, locate: Locate, config: ForwardConfig) -> None:
        import httpx2

        self.locate = locate
        self.config = config
        self._collector = _Counts()
        self.counts = self._collector.counts
        limits = httpx2.Limits(
            max_connections=config.max_connections,
            max_keepalive_connections=config.max_connections,
        )
        timeout = httpx2.Timeout(None, connect=config.connect_timeout)
        self._client = httpx2.AsyncClient(limits=limits, timeout=timeout, trust_env=False)
        # Only the client's own headers go on (no default Accept-Encoding, User-Agent...).
        self._client.headers.clear()

    def collector(self) -> Collector:
        """The forwards counter, for a Prometheus registry."""
        return self._collector

    async def aclose(self) -> None:
        await self._client.aclose()

    async def route(
        self, session: str, scope: Scope, receive: Receive, send: Send, *, max_body: int
    ) -> Receive | None:
        """Forward the request for ``session`` when another host owns it and it was not
        forwarded already. None when it was (the response has been sent); else the
        request is to be served here, read from the :data:`Receive` returned (``receive``,
        or one that gives the body this read first). A body longer than ``max_body``
        bytes is refused with 413 before it is sent on."""
        if forwarded(scope):
            return receive
        owner = await self._locate(session)
        if owner is None:
            return receive
        body = await _read_body(scope, receive, max_body)
        for _ in range(self.config.max_moves + 1):
            where = await self._forward(session, owner, scope, body, receive, send)
            if isinstance(where, _Answered):
                return None
            self.counts["moved"] += 1
            if where is None:  # its owner stalled and lost it: taken over here
                return _replay(body, receive)
            owner = where
        why = "the session's host did not answer before its lease ran out"
        raise HttpRefused(502, "owner_failed", why)

    async def _locate(self, session: str) -> Owner | None:
        try:
            return await self.locate(session)
        except AgcoreError as exc:  # the store did not answer in time, or refused
            self.counts["unlocated"] += 1
            why = f"where the session lives is unknown for now ({exc.kind})"
            raise HttpRefused(503, "owner_unknown", why) from None

    async def _forward(
        self, session: str, owner: Owner, scope: Scope, body: bytes, receive: Receive, send: Send
    ) -> _Answered | Owner | None:
        """Send the request to ``owner``: :data:`ANSWERED` once its answer was relayed,
        else where the session lives now (it moved before the owner began to answer)."""
        headers = _drop_hop_by_hop(list(scope["headers"]))
        headers.append((FORWARDED_BY, self.config.host_id.encode()))
        url = owner.address.rstrip("/") + scope.get("raw_path", scope["path"].encode()).decode()
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        request = self._client.build_request(scope["method"], url, headers=headers, content=body)
        # The client may leave at any moment, also while the owner has not answered yet
        # (a stopped owner's kernel takes the request and nothing answers): then the
        # forwarded request is closed at once.
        outcome: _Answered | Owner | HttpRefused | None = ANSWERED  # the client left: done
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_watch_disconnect, receive, nursery.cancel_scope)
            outcome = await self._exchange(session, owner, request, send)
            nursery.cancel_scope.cancel()
        if isinstance(outcome, HttpRefused):
            raise outcome
        return outcome

    async def _exchange(
        self, session: str, owner: Owner, request: httpx2.Request, send: Send
    ) -> _Answered | Owner | HttpRefused | None:
        """Send ``request`` and relay its answer (:data:`ANSWERED`); where the session
        lives now when it moved before the owner answered; the refusal to answer instead
        when the owner failed."""
        import httpx2

        try:
            response = await self._answer_or_moved(session, owner, request)
            if not isinstance(response, httpx2.Response):
                return response
        except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout) as exc:
            self.counts["unreachable"] += 1
            why = f"the session's host did not answer ({type(exc).__name__})"
            return HttpRefused(503, "owner_unreachable", why)
        except httpx2.TransportError as exc:
            # Connected, then broke before any answer: the request may have run there.
            self.counts["broken"] += 1
            why = f"the session's host broke off ({type(exc).__name__})"
            return HttpRefused(502, "owner_failed", why)
        try:
            headers = [(k, v) for k, v in _drop_hop_by_hop(list(response.headers.raw))
                       if k.lower() not in _OWN_RESPONSE_HEADERS]  # fmt: skip
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": headers})  # fmt: skip
            try:
                async with aclosing(_chunks(response)) as chunks:
                    async for chunk in chunks:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except httpx2.TransportError:
                self.counts["broken"] += 1
            else:
                self.counts["forwarded"] += 1
            await send({"type": "http.response.body", "body": b""})
        finally:
            with trio.CancelScope(shield=True):
                await response.aclose()
        return ANSWERED

    async def _answer_or_moved(
        self, session: str, owner: Owner, request: httpx2.Request
    ) -> httpx2.Response | Owner | None:
        """The owner's answer (its status and headers), or where the session lives once
        it has another owner or none while the owner had not begun to answer (module
        doc)."""
        answer: list[httpx2.Response] = []
        failed: list[Exception] = []
        moved: list[Owner | None] = []
        async with trio.open_nursery() as nursery:

            async def send() -> None:
                try:
                    answer.append(await self._client.send(request, stream=True))
                except Exception as exc:  # raised below, as the caller's own
                    failed.append(exc)
                nursery.cancel_scope.cancel()

            nursery.start_soon(send)
            left = owner.seconds_left
            while True:
                await trio.sleep(max(left, _RECHECK))
                try:
                    now = await self.locate(session)
                except AgcoreError:
                    left = _RECHECK  # unknown for now: ask again soon
                    continue
                if now is None or now.host_id != owner.host_id:
                    moved.append(now)
                    nursery.cancel_scope.cancel()
                    break
                left = now.seconds_left
        if failed:
            raise failed[0]
        return answer[0] if answer else moved[0]


class _Answered:
    """The forwarded request's answer was relayed to the client."""


ANSWERED = _Answered()


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive``, giving first the request's ``body`` (read already) as one message."""
    first = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> dict[str, Any]:
        return first.pop() if first else await receive()

    return again


#: Seconds between two looks at a session's owner while it has not answered, at least.
_RECHECK = 0.25


async def _chunks(response: httpx2.Response) -> AsyncGenerator[bytes, None]:
    async with aclosing(response.aiter_raw()) as raw:
        async for chunk in raw:
            if chunk:
                yield chunk


async def _read_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    """The request's body, at most ``limit`` bytes (else 413)."""
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


async def _watch_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
