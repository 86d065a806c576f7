""":class:`HttpConfig`: where ``serve --http`` listens, who may call it, and its limits.

Built once, checked where it is built: a configuration that would serve without a token,
or bind a public address with a guessable one, raises ``ValueError`` with one line.
"""

from __future__ import annotations

from typing import Any

import attrs

from .._validators import at_least_one, non_negative, positive
from ._auth import MIN_PUBLIC_TOKEN, SCOPES, Tenant, fresh_token, is_loopback

__all__ = ["HttpConfig"]


def _none_if_empty(value: str | None) -> str | None:
    return value or None


def _tenants(value: Any) -> tuple[Tenant, ...]:
    return tuple(value)


@attrs.frozen(kw_only=True)
class HttpConfig:
    """Where and how :func:`~agcore_actors.serve.serve_http` serves.

    There is always a credential: ``token`` defaults to a fresh random one (read it from
    the config to hand it to clients); ``token=None`` is allowed only with ``tenants``.
    """

    #: Address to bind.
    host: str = "127.0.0.1"
    #: Port to bind; 0 picks a free one (``task_status`` reports the URL).
    port: int = attrs.field(default=8000, validator=non_negative)
    #: The server's own bearer token: every scope, session ids unprefixed (None: only
    #: ``tenants``). Defaults to a fresh random token.
    token: str | None = attrs.field(factory=fresh_token, repr=False, converter=_none_if_empty)
    #: Named tokens with scopes, each seeing only its own sessions.
    tenants: tuple[Tenant, ...] = attrs.field(default=(), converter=_tenants)
    #: More names the ``Host`` header may give (a proxy's or DNS name of the server).
    allowed_hosts: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    #: Largest request body in bytes.
    max_body: int = attrs.field(default=1 << 20, validator=at_least_one)
    #: Seconds a request body may take to arrive; a slower one gets 408.
    body_timeout: float = attrs.field(default=30.0, validator=positive)
    #: Event streams open at once; more get 503.
    max_streams: int = attrs.field(default=1024, validator=at_least_one)
    #: Turns admitted at once, running or waiting for a slot (None: the host's
    #: ``max_turns_in_flight``); more get 503 at once.
    max_admitted: int | None = attrs.field(default=None)
    #: Shortest wait a refused client is told (``Retry-After``, seconds); refused clients
    #: are told waits spread by the rate turns complete (:mod:`~agcore_actors.serve._shed`).
    retry_after: int = attrs.field(default=1, validator=at_least_one)
    #: A client that disconnects mid-stream cancels its turn (default: it runs on).
    cancel_on_disconnect: bool = False
    #: Largest page of GET /v1/sessions.
    max_page: int = attrs.field(default=1000, validator=at_least_one)
    #: Finished turns kept for reattaching (turns still running are kept too).
    keep_turns: int = attrs.field(default=256, validator=at_least_one)
    #: Seconds turns in flight get after shutdown begins.
    drain_timeout: float = attrs.field(default=30.0, validator=non_negative)

    def __attrs_post_init__(self) -> None:
        if self.max_admitted is not None and self.max_admitted < 1:
            raise ValueError(f"max_admitted must be >= 1, not {self.max_admitted!r}")
        names = [t.name for t in self.tenants]
        if "" in names or len(set(names)) != len(names):
            raise ValueError("tenant names must be distinct and non-empty")
        tokens = [t.token for t in self.all_tenants]
        if not tokens:
            raise ValueError("serving HTTP needs a bearer token (token or tenants)")
        if len(set(tokens)) != len(tokens):
            raise ValueError("two tenants share a token")
        if not is_loopback(self.host) and min(map(len, tokens)) < MIN_PUBLIC_TOKEN:
            raise ValueError(
                f"binding {self.host!r} (not loopback) needs bearer tokens of at least "
                f"{MIN_PUBLIC_TOKEN} characters"
            )

    @property
    def all_tenants(self) -> tuple[Tenant, ...]:
        """``tenants``, and the server's own token as the tenant ``""`` with every scope."""
        if self.token is None:
            return self.tenants
        return (Tenant(name="", token=self.token, scopes=frozenset(SCOPES)), *self.tenants)
