"""The checks ``serve --http`` makes before anything runs, and how a refused request is
read to its end.

:meth:`Admission.check` takes a request's framing, ``Host``, bearer token, ``Origin``,
route, scope and path ids in the order :mod:`~agcore_actors.serve._http` documents, and
answers the caller's tenant and the route's scope, or raises the refusal
(:class:`HttpRefused`; :class:`BadCommand` for an id). It only reads the request's
headers and path: a refused request changes nothing. The body is checked later, by
the route that reads it.

Cancellation: :meth:`Admission.drain` reads a refused request's body within the body
limits and gives up silently at ``body_timeout``.
"""

from __future__ import annotations

import trio

from ._auth import Tenant, check_id, host_allowed, identify, origin_allowed
from ._errors import BadCommand, HttpRefused
from ._http_config import HttpConfig
from ._http_io import Receive, Scope

__all__ = ["ROUTES", "Admission"]

#: (method, path shape) -> the scope it needs; ``*`` stands for an id.
ROUTES: dict[tuple[str, tuple[str, ...]], str] = {
    ("POST", ("v1", "sessions", "*", "turns")): "turns",
    ("GET", ("v1", "sessions", "*", "turns", "*")): "read",
    ("POST", ("v1", "sessions", "*", "cancel")): "turns",
    ("POST", ("v1", "sessions", "*", "approvals", "*")): "turns",
    ("POST", ("v1", "sessions", "*", "turns", "*", "answers", "*")): "turns",
    ("POST", ("v1", "sessions", "*", "resume")): "turns",
    ("POST", ("v1", "sessions", "*", "elicitations", "*")): "turns",
    ("GET", ("v1", "sessions", "*")): "read",
    ("DELETE", ("v1", "sessions", "*")): "turns",
    ("GET", ("v1", "sessions")): "read",
    ("GET", ("observer", "state")): "admin",
    ("GET", ("metrics",)): "admin",
}
_ID_NAMES = {"turns": "turn", "approvals": "call", "elicitations": "elicitation"}


def _fits(pattern: tuple[str, ...], parts: list[str]) -> bool:
    return len(pattern) == len(parts) and all(
        p in ("*", x) for p, x in zip(pattern, parts, strict=True)
    )


def _match(method: str, parts: list[str]) -> str:
    """The scope the route needs; 404 for an unknown path, 405 for another method."""
    methods = {m: scope for (m, pattern), scope in ROUTES.items() if _fits(pattern, parts)}
    if not methods:
        raise HttpRefused(404, "no_such_route", "no such route")
    if method not in methods:
        allowed = ", ".join(sorted(methods))
        raise HttpRefused(405, "method_not_allowed", f"use {allowed}", allow=allowed)
    return methods[method]


def _id(what: str, value: str) -> str:
    try:
        return check_id(what, value)
    except ValueError as exc:
        raise BadCommand(str(exc)) from None


class Admission:
    """The server's checks of a request before anything runs (see the module docstring)."""

    def __init__(self, config: HttpConfig) -> None:
        self.config = config
        # Computed once: the property builds the tuple anew on every read.
        self.tenants = config.all_tenants

    def check(self, scope: Scope, method: str, parts: list[str]) -> tuple[Tenant, str]:
        """The caller's tenant and the route's scope, or the refusal (module docstring)."""
        headers: dict[bytes, bytes] = {}
        for name, value in scope["headers"]:
            if name in headers and name in (b"host", b"content-length", b"authorization"):
                raise HttpRefused(400, "bad_framing", f"two {name.decode()} headers", close=True)
            headers[name] = value
        if b"content-length" in headers and b"transfer-encoding" in headers:
            raise HttpRefused(400, "bad_framing",
                              "both Content-Length and Transfer-Encoding", close=True)  # fmt: skip
        config = self.config
        if not host_allowed(headers.get(b"host"), config.host, config.allowed_hosts):
            raise HttpRefused(403, "bad_host", "the Host header does not name this server")
        tenant = identify(self.tenants, headers.get(b"authorization", b""))
        if tenant is None:
            raise HttpRefused(401, "unauthorized", "a valid bearer token is required")
        if method not in ("GET", "HEAD"):
            port = (scope.get("server") or ("", 0))[1]
            if not origin_allowed(headers.get(b"origin"), config.host, port,
                                  config.allowed_hosts):  # fmt: skip
                raise HttpRefused(403, "bad_origin", "requests from another origin are refused")
        needs = _match(method, parts)
        if needs not in tenant.scopes:
            raise HttpRefused(403, "forbidden", f"this token lacks the {needs!r} scope")
        if len(parts) > 2:
            _id("session", parts[2])
        if len(parts) > 4:
            _id(_ID_NAMES[parts[3]], parts[4])
        if len(parts) > 6:
            _id("call", parts[6])
        return tenant, needs

    async def drain(self, receive: Receive) -> None:
        """Read a refused request's body (within the body limits) before answering: the
        server keeps a connection alive only after the whole request was read (a refusal
        would otherwise cost the client a new connection), and one that must close goes
        out whole (the server cuts a connection at once when bytes pipelined behind a
        request that must close arrive)."""
        size = 0
        with trio.move_on_after(self.config.body_timeout):
            while size <= self.config.max_body:
                message = await receive()
                size += len(message.get("body", b""))
                if message["type"] != "http.request" or not message.get("more_body"):
                    return
