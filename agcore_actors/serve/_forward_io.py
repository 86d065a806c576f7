"""The plumbing of :mod:`agcore_actors.serve._forward`: which headers go to the next hop
and which come back, the forwards counter, and the request body read once and given
again to this host's own handler when the request is served here after all."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import trio
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from ._http_io import Receive, Scope

if TYPE_CHECKING:
    import httpx2

#: The header a forwarded request carries: the forwarding host's id.
FORWARDED_BY = b"x-agcore-forwarded-by"
# RFC 9110 section 7.6.1, plus what the next hop sets itself (host, length: httpx2
# recomputes them for the body it sends), and the Origin checked by the first host (on
# the owner, another address or port, it would be another origin).
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
OWN_RESPONSE_HEADERS = frozenset({b"date", b"server"})
OUTCOMES = ("forwarded", "unreachable", "broken", "unlocated", "moved")


def drop_hop_by_hop(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
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


class Counts(Collector):
    """``agcore_cluster_forwards_total{outcome}``."""

    def __init__(self) -> None:
        self.counts = dict.fromkeys(OUTCOMES, 0)

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "agcore_cluster_forwards",
            "Requests forwarded to the session's owner, by outcome.",
            labels=["outcome"],
        )
        for outcome, value in self.counts.items():
            family.add_metric([outcome], value)
        yield family


def replay(body: bytes, receive: Receive) -> Receive:
    """``receive``, giving first the request's ``body`` (read already) as one message."""
    first = [{"type": "http.request", "body": body, "more_body": False}]

    async def again() -> dict[str, Any]:
        return first.pop() if first else await receive()

    return again


async def chunks(response: httpx2.Response) -> AsyncGenerator[bytes, None]:
    async with aclosing(response.aiter_raw()) as raw:
        async for chunk in raw:
            if chunk:
                yield chunk


async def watch_disconnect(receive: Receive, scope: trio.CancelScope) -> None:
    """Cancel ``scope`` when the client goes away (the body has been read)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()
