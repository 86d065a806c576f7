"""Who may call ``serve --http`` and from where: tenants, their tokens and scopes, and the
checks a browser cannot get around (``Host``, ``Origin``, the body's content type).

Pure functions on frozen data, no I/O: :class:`~agcore_actors.serve._http` applies them
to each request before anything else runs, so a refused request changes nothing.

Tenants:
    A :class:`Tenant` is a name, a bearer token and scopes: ``turns`` (run, cancel and
    approve turns, delete sessions), ``read`` (list and read sessions, reattach to turns)
    and ``admin`` (the observer and ``/metrics``, which show every session). A tenant sees
    and touches only its own sessions: the id ``s1`` of tenant ``acme`` is stored as
    ``acme/s1`` (``/`` is outside the id charset, so no id of one tenant names another's
    session). The tenant named ``""`` (the single ``token`` of :class:`HttpConfig`) keeps
    ids as they are and owns every stored id without a ``/``.

Browsers:
    Loopback is no boundary against a web page the operator visits: it can send requests
    to 127.0.0.1 (a ``no-cors`` POST with a ``text/plain`` body), and DNS rebinding lets
    it read the answers under a name of its own. So every request needs a token, the
    ``Host`` header must name the server (:func:`host_allowed`), a state-changing request
    that carries an ``Origin`` must come from the server's own origin
    (:func:`origin_allowed`), and a body must be ``application/json``
    (:func:`json_content_type`), which a page can send cross-origin only after a CORS
    preflight that the server never grants.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Iterable
from typing import Literal
from urllib.parse import urlsplit

import attrs

__all__ = [
    "SCOPES",
    "Tenant",
    "check_id",
    "fresh_token",
    "host_allowed",
    "identify",
    "is_loopback",
    "json_content_type",
    "origin_allowed",
]

Scope = Literal["turns", "read", "admin"]
SCOPES: tuple[Scope, ...] = ("turns", "read", "admin")

#: The one rule for session, turn, call and tenant ids, over HTTP and stdio alike.
ID_RULE = "1 to 128 characters of A-Z a-z 0-9 _ - . : , not starting with '.'"
_ID = re.compile(r"[A-Za-z0-9_\-:][A-Za-z0-9_\-.:]{0,127}")
#: Shortest token a non-loopback bind accepts.
MIN_PUBLIC_TOKEN = 16


def check_id(what: str, value: object) -> str:
    """``value`` if it is a well-formed id (:data:`ID_RULE`), else ``ValueError`` naming
    ``what`` (the value itself is not echoed: it may hold control characters)."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise ValueError(f"{what!r} must be an id: {ID_RULE}")
    return value


def fresh_token() -> str:
    """A new random bearer token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def _scopes(value: Iterable[str]) -> frozenset[str]:
    scopes = frozenset(value)
    unknown = sorted(scopes - set(SCOPES))
    if unknown:
        raise ValueError(f"unknown scope(s) {', '.join(unknown)}: use {', '.join(SCOPES)}")
    return scopes


def _name(instance: object, attribute: object, value: str) -> None:
    if value:
        check_id("tenant", value)


def _token(instance: object, attribute: object, value: str) -> None:
    if not value or not value.isprintable() or not value.isascii() or " " in value:
        raise ValueError("a token must be non-empty printable ASCII without spaces")


@attrs.frozen(kw_only=True)
class Tenant:
    """A client of the server: its sessions, its bearer token and what it may do."""

    #: Its namespace ("" only for the server's single token: ids unprefixed).
    name: str = attrs.field(validator=_name)
    #: The bearer token it authenticates with.
    token: str = attrs.field(repr=False, validator=_token)
    #: What it may do: ``turns``, ``read``, ``admin``.
    scopes: frozenset[str] = attrs.field(default=frozenset({"turns", "read"}), converter=_scopes)

    def store_id(self, session: str) -> str:
        """The id under which its session ``session`` is stored."""
        return f"{self.name}/{session}" if self.name else session

    def session_of(self, store_id: str) -> str | None:
        """Its own id for the stored ``store_id``; None when the session is another's."""
        if not self.name:
            return None if "/" in store_id else store_id
        prefix = self.name + "/"
        return store_id[len(prefix) :] if store_id.startswith(prefix) else None


def identify(tenants: Iterable[Tenant], authorization: bytes) -> Tenant | None:
    """The tenant whose token ``authorization`` (``Bearer <token>``) carries; every token is
    compared in constant time, so the answer's timing names none of them."""
    found = None
    for tenant in tenants:
        if hmac.compare_digest(authorization, b"Bearer " + tenant.token.encode()):
            found = tenant
    return found


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _hostname(netloc: str) -> str | None:
    try:
        name = urlsplit("//" + netloc).hostname
    except ValueError:
        return None
    return name


def host_allowed(header: bytes | None, bound: str, extra: Iterable[str] = ()) -> bool:
    """Whether a request's ``Host`` names this server: the bound address, loopback names
    for a loopback bind, any IP address for a wildcard bind (``0.0.0.0``, ``::``), or a
    name of ``extra`` (the names a proxy or DNS gives the server). A foreign name is what
    DNS rebinding sends."""
    if not header:
        return False
    try:
        text = header.decode("ascii")
    except UnicodeDecodeError:
        return False
    name = _hostname(text)
    if name is None:
        return False
    name = name.lower()
    if name in {h.lower() for h in extra} or name == bound.lower():
        return True
    if is_loopback(bound):
        return is_loopback(name)
    if bound in ("0.0.0.0", "::", ""):
        return _is_ip(name)
    return False


def origin_allowed(origin: bytes | None, bound: str, port: int, extra: Iterable[str] = ()) -> bool:
    """Whether a state-changing request may proceed given its ``Origin``: none (not a
    browser's cross-origin request), or the server's own origin: an http(s) origin whose
    host :func:`host_allowed` takes, on the server's ``port`` (any port for a name of
    ``extra``, which a proxy serves). ``null`` (a sandboxed or file page) is refused, and
    so is a page on another port of the same host: another origin."""
    if origin is None:
        return True
    try:
        parts = urlsplit(origin.decode("ascii"))
        given = parts.port or (443 if parts.scheme == "https" else 80)
    except (UnicodeDecodeError, ValueError):
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if parts.hostname.lower() in {h.lower() for h in extra}:
        return True
    return given == port and host_allowed(parts.netloc.encode(), bound)


def json_content_type(header: bytes | None) -> bool:
    """Whether a body's ``Content-Type`` is ``application/json`` (parameters allowed)."""
    if header is None:
        return False
    return header.split(b";", 1)[0].strip().lower() == b"application/json"
