"""The read side of ``serve --http``: a tenant's page of sessions, one session, and
whether a session has stored a turn id. Each is one or a few asks of the store; none
changes anything, and none shows a session of another tenant.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

import msgspec

from ..actor import ActorRef
from ..agent import SessionHost
from ..store import InvalidRequest, SessionNotFound
from ..store import messages as sm
from ._auth import Tenant
from ._errors import BadCommand, HttpRefused
from ._http_io import Scope, encode

__all__ = ["SessionReads"]

#: Store pages read for one page of a tenant's sessions before answering a shorter one.
_STORE_PAGES = 8


class SessionReads:
    """Reads of the store on a tenant's behalf (see the module docstring)."""

    def __init__(self, host: SessionHost, store: ActorRef[Any], *, max_page: int) -> None:
        self.host = host
        self.store = store
        self.max_page = max_page

    async def page(self, tenant: Tenant, scope: Scope) -> bytes:
        """``GET /v1/sessions``: up to ``limit`` of the tenant's records, and a cursor
        (null: no more). A page may hold fewer than ``limit``: continue while the cursor
        is not null."""
        try:
            query = parse_qs(scope.get("query_string", b"").decode("ascii"), errors="strict")
        except (UnicodeDecodeError, ValueError):
            raise BadCommand("the query string is not ASCII") from None
        limit_text = query.get("limit", ["100"])[-1]
        # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
        digits = limit_text.isascii() and limit_text.isdigit() and len(limit_text) <= 9
        if not digits or not 1 <= int(limit_text) <= self.max_page:
            raise BadCommand(f"'limit' must be an integer in 1..{self.max_page}")
        limit = int(limit_text)
        cursor = query.get("cursor", [None])[-1]
        records: list[dict[str, Any]] = []
        for _ in range(_STORE_PAGES):
            try:
                page: sm.SessionPage = await self.store.ask(
                    sm.ListSessions(limit=limit - len(records), cursor=cursor)
                )
            except InvalidRequest:
                raise BadCommand("'cursor' is not a cursor this server gave") from None
            for record in page.sessions:
                own = tenant.session_of(record.id)
                if own is not None:
                    records.append({**msgspec.to_builtins(record), "id": own})
            cursor = page.cursor
            if cursor is None or len(records) >= limit:
                break
        return encode({"sessions": records, "cursor": cursor})

    async def read(self, tenant: Tenant, session: str) -> bytes:
        """``GET /v1/sessions/{id}``: record, usage, facts, summary and transcript."""
        sid = tenant.store_id(session)
        try:
            snap: sm.SessionSnapshot = await self.store.ask(sm.ExportSession(sid))
        except SessionNotFound:
            raise HttpRefused(404, "session_not_found", "no such session") from None
        record = {**msgspec.to_builtins(snap.record), "id": session}
        body = {
            "session": session,
            "live": self.host.is_live(sid),
            "record": record,
            "usage": record.get("usage"),
            "facts": snap.facts,
            "summary": snap.summary,
            "messages": [{"turn": e.turn, **msgspec.to_builtins(e.message)} for e in snap.entries],
        }
        return encode(body)

    async def has_turn(self, sid: str, turn: str) -> bool:
        """Whether the stored session ``sid`` has an entry of ``turn``."""
        stored: bool = await self.store.ask(sm.HasTurn(sid, turn))
        return stored
