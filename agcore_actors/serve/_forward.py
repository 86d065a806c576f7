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
    client as the owner sends them. An owner that connects and then breaks off before
    answering is answered with 502 ``owner_failed`` (the request may have run there). One
    that fails mid-answer ends the client's response where it broke (a turn's stream
    without its last event: the client reattaches by the turn id, as after any cut
    connection).

    An owner that cannot answer is waited out, not bounced back to the client: once
    nobody holds a live lease on the session, this host serves the request itself, as
    one for a session nobody owns (its activation takes the session over and repairs the
    turn the owner left open); once another host holds it, the request is sent on to that
    host. So a client's one request is answered about when the dead owner's lease runs
    out, and the surviving hosts are not flooded with retries meanwhile. This applies to
    an owner that cannot be connected to (refused, or not within ``connect_timeout``: it
    died or is cut off); to one registered at this host's own ``address`` (a predecessor
    of this process, restarted under a new host id: a forward would reach this host
    itself, and a request another host forwarded here for it waits here the same way);
    and to one that has not begun to answer when its lease (as ``locate`` read
    it) runs out (a stalled owner: stopped, its kernel still accepting connections; while
    it keeps renewing its lease the request waits for it, a long turn being answered only
    at its end). The wait for an unreachable owner's lease lasts at most ``max_hold``
    seconds: an owner whose lease lasts longer (one that still renews it, cut off from
    this host only) is answered with 503 ``owner_unreachable`` at once, ``Retry-After``
    ``max_hold`` seconds (less if the lease runs out sooner): by then the retry is held
    to the lease's end, or reaches a host that can reach the owner. A stalled owner may
    still read the request when it wakes up: its lease fences its writes, and the turn
    id keeps the turn from running twice (a retried id answers 409 ``turn_exists``).
    After ``max_moves`` moves the client is answered 502 ``owner_failed``.

Cancellation:
    A client that disconnects closes the forwarded request at once (or ends the wait
    for an owner's lease); the owner sees a disconnect, exactly as if the client had
    been its own (a turn runs on unless ``cancel_on_disconnect``). Cancelling
    :meth:`Forwarder.route` closes the forwarded request too. :meth:`Forwarder.aclose`
    closes the connection pool.

Where a session lives is asked of ``locate`` (the lease, read from the store); when that
fails (the store is unavailable or too slow: an ``AgcoreError``) the request is answered
503 ``owner_unknown`` and nothing ran.

Counting: ``agcore_cluster_forwards_total{outcome}`` (``forwarded``: an answer came back;
``unreachable``: the owner could not be connected to; ``broken``: it broke off;
``unlocated``: the owner could not be looked up; ``moved``: the owner's lease ran out
while the request waited for it, which then went on to the new owner or was served
here), in the server's ``/metrics``.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from typing import TYPE_CHECKING

import attrs
import trio
from prometheus_client.registry import Collector

from .._errors import AgcoreError
from .._validators import at_least_one, non_empty, positive
from ._errors import HttpRefused
from ._forward_io import (
    FORWARDED_BY,
    OWN_RESPONSE_HEADERS,
    Counts,
    chunks,
    drop_hop_by_hop,
    forwarded,
    replay,
    watch_disconnect,
)
from ._http_io import Receive, Scope, Send, read_bytes

if TYPE_CHECKING:
    import httpx2

    from ..agent import SessionHost

__all__ = ["FORWARDED_BY", "ForwardConfig", "Forwarder", "Locate", "Owner", "host_locate"]


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
    #: This host's own address as the others reach it ("" if it has none): an owner
    #: registered there is a predecessor of this process, not another host.
    address: str = ""
    #: Seconds to connect to an owner before taking it as unreachable.
    connect_timeout: float = attrs.field(default=2.0, validator=positive)
    #: Connections kept open to the other hosts, all of them together.
    max_connections: int = attrs.field(default=256, validator=at_least_one)
    #: Times a request follows its session to a new owner (or here) after the owner it
    #: was meant for lost its lease before answering, before the client gets 502.
    max_moves: int = attrs.field(default=2, validator=at_least_one)
    #: Seconds a request waits, at most, for an unreachable owner's lease to run out.
    max_hold: float = attrs.field(default=5.0, validator=positive)


class _Done:
    """Nothing more to do for the request: the owner's answer was relayed, or the client
    left."""


class _Unreachable:
    """The owner could not be connected to: nothing ran there."""


_DONE = _Done()
_UNREACHABLE = _Unreachable()


class Forwarder:
    """Sends requests for sessions owned elsewhere to their owner (module docstring)."""

    def __init__(self, locate: Locate, config: ForwardConfig) -> None:
        import httpx2

        self.locate = locate
        self.config = config
        self._collector = Counts()
        self.counts = self._collector.counts
        limits = httpx2.Limits(
            max_connections=config.max_connections,
            max_keepalive_connections=config.max_connections,
        )
        timeout = httpx2.Timeout(None, connect=config.connect_timeout)
        self._client = httpx2.AsyncClient(limits=limits, timeout=timeout, trust_env=False)
        # Only the client's own headers go on (no default Accept-Encoding, User-Agent...).
        self._client.headers.clear()
        self._here = config.address.rstrip("/")

    def collector(self) -> Collector:
        """The forwards counter, for a Prometheus registry."""
        return self._collector

    async def aclose(self) -> None:
        await self._client.aclose()

    async def route(
        self, session: str, scope: Scope, receive: Receive, send: Send, *, max_body: int
    ) -> Receive | None:
        """Forward the request for ``session`` when another host owns it and it was not
        forwarded already. None when it was (the response has been sent, or the client
        left); else the request is to be served here, read from the :data:`Receive`
        returned (``receive``, or one that gives the body read here first). A body longer
        than ``max_body`` bytes is refused with 413 before it is sent on."""
        if forwarded(scope):
            return await self._forwarded_here(session, scope, receive, max_body)
        owner = await self._locate(session)
        read_at = trio.current_time()
        if owner is None:
            return receive
        body = await read_bytes(scope, receive, max_body)
        for _ in range(self.config.max_moves + 1):
            where = await _while_connected(
                receive, self._reach, session, owner, read_at, scope, body, send
            )
            if isinstance(where, _Done):
                return None
            self.counts["moved"] += 1
            if where is None:  # its owner died or stalled and lost it: taken over here
                return replay(body, receive)
            owner, read_at = where, trio.current_time()
        why = "the session's host did not answer before its lease ran out"
        raise HttpRefused(502, "owner_failed", why)

    async def _forwarded_here(
        self, session: str, scope: Scope, receive: Receive, max_body: int
    ) -> Receive | None:
        """A request another host sent here is served here (never sent on: one hop).
        But one sent here for the process this one replaced at its address (the other
        host read that process's lease) first waits for that lease to run out, as the
        activation would be refused until then. A session live here is not looked up."""
        if not self._here:
            return receive
        owner = await self._locate(session)
        read_at = trio.current_time()
        if owner is None or not self._at_this_address(owner):
            return receive
        body = await read_bytes(scope, receive, max_body)
        where = await _while_connected(
            receive, self._lapse, session, owner, read_at, self.config.max_hold
        )
        return None if isinstance(where, _Done) else replay(body, receive)

    def _at_this_address(self, owner: Owner) -> bool:
        return bool(self._here) and owner.address.rstrip("/") == self._here

    async def _reach(
        self, session: str, owner: Owner, read_at: float, scope: Scope, body: bytes, send: Send
    ) -> _Done | Owner | None:
        """The owner's answer relayed (:data:`_DONE`), else where the session lives once
        the owner (its lease read at ``read_at``) lost it without answering."""
        if not self._at_this_address(owner):
            answered = await self._send(session, owner, read_at, scope, body, send)
            if not isinstance(answered, _Unreachable):
                return answered
        return await self._lapse(session, owner, read_at, self.config.max_hold)

    async def _locate(self, session: str) -> Owner | None:
        try:
            return await self.locate(session)
        except AgcoreError as exc:  # the store did not answer in time, or refused
            self.counts["unlocated"] += 1
            why = f"where the session lives is unknown for now ({exc.kind})"
            raise HttpRefused(503, "owner_unknown", why) from None

    async def _lapse(
        self, session: str, owner: Owner, read_at: float, hold: float = math.inf
    ) -> Owner | None:
        """Where the session lives once ``owner``'s lease (read at ``read_at``) has run
        out, looked up each time the lease read last would have run out; 503
        ``owner_unreachable`` when that is further away than ``hold`` seconds."""
        now = trio.current_time()
        deadline = now + hold
        expires = read_at + owner.seconds_left
        while True:
            if expires > deadline:
                why = f"the session's host {owner.host_id!r} cannot be reached"
                retry = min(expires - now, hold)
                raise HttpRefused(503, "owner_unreachable", why, retry_after=retry)
            await trio.sleep_until(max(expires, now + _RECHECK))
            try:
                where = await self.locate(session)
            except AgcoreError:  # unknown for now: ask again soon
                now = expires = trio.current_time()
                continue
            now = trio.current_time()
            if where is None or where.host_id != owner.host_id:
                return where
            expires = now + where.seconds_left

    async def _send(
        self, session: str, owner: Owner, read_at: float, scope: Scope, body: bytes, send: Send
    ) -> _Done | Owner | _Unreachable | None:
        """Send the request to ``owner`` and relay its answer (:data:`_DONE`); where the
        session lives when it moved before the owner answered; :data:`_UNREACHABLE`."""
        import httpx2

        headers = drop_hop_by_hop(list(scope["headers"]))
        headers.append((FORWARDED_BY, self.config.host_id.encode()))
        url = owner.address.rstrip("/") + scope.get("raw_path", scope["path"].encode()).decode()
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        request = self._client.build_request(scope["method"], url, headers=headers, content=body)
        try:
            response = await self._answer_or_moved(session, owner, read_at, request)
            if not isinstance(response, httpx2.Response):
                return response
        except (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout):
            self.counts["unreachable"] += 1
            return _UNREACHABLE
        except httpx2.TransportError as exc:
            # Connected, then broke before any answer: the request may have run there.
            self.counts["broken"] += 1
            why = f"the session's host broke off ({type(exc).__name__})"
            raise HttpRefused(502, "owner_failed", why) from None
        try:
            headers = [(k, v) for k, v in drop_hop_by_hop(list(response.headers.raw))
                       if k.lower() not in OWN_RESPONSE_HEADERS]  # fmt: skip
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": headers})  # fmt: skip
            try:
                async with aclosing(chunks(response)) as body_chunks:
                    async for chunk in body_chunks:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except httpx2.TransportError:
                self.counts["broken"] += 1
            else:
                self.counts["forwarded"] += 1
            await send({"type": "http.response.body", "body": b""})
        finally:
            with trio.CancelScope(shield=True):
                await response.aclose()
        return _DONE

    async def _answer_or_moved(
        self, session: str, owner: Owner, read_at: float, request: httpx2.Request
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
            moved.append(await self._lapse(session, owner, read_at))
            nursery.cancel_scope.cancel()
        if failed:
            raise failed[0]
        return answer[0] if answer else moved[0]


#: Seconds between two looks at a session's owner while it has not answered, at least.
_RECHECK = 0.25


async def _while_connected(
    receive: Receive, fn: Callable[..., Awaitable[_Done | Owner | None]], *args: object
) -> _Done | Owner | None:
    """``fn(*args)``, or :data:`_DONE` as soon as the client goes away (a stopped
    owner's kernel takes the request and nothing answers: the forwarded request is then
    closed at once)."""
    outcome: _Done | Owner | None = _DONE
    refused: HttpRefused | None = None
    async with trio.open_nursery() as nursery:
        nursery.start_soon(watch_disconnect, receive, nursery.cancel_scope)
        try:
            outcome = await fn(*args)
        except HttpRefused as exc:  # raised as itself, not in the nursery's group
            refused = exc
        nursery.cancel_scope.cancel()
    if refused is not None:
        raise refused
    return outcome
