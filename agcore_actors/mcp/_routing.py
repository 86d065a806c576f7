"""Whose a server request is: the sessions and calls of an MCP client's tool calls in flight.

Whose a server request is (:func:`~._requests.requesting_session` in its handler): the
session of the tool call whose response stream carried it (streamable HTTP), else of the
call whose progress token its ``_meta.progressToken`` names, else the one session with
calls in flight; else nobody's ("", and an elicitation is declined). A request that came
on a request's response stream is never given to a session other than that request's.
Over stdio, when elicitation or sampling is answered, the tool calls of one session at a
time run (:class:`~._session_gate.SessionGate`; not with ``parallel_sessions``), so the
last rule always finds the owner.

:class:`Routing` is plain bookkeeping for one client, used from its one task: no
awaits, so a call begun is always ended by the caller's ``finally`` (under
cancellation too) and leaves nothing behind.
"""

from __future__ import annotations

import collections
from collections.abc import Container
from typing import Any

from ._policy import redact
from ._requests import ProgressCallback


class Routing:
    """The session, turn's call id and progress callback of each tool call in flight."""

    def __init__(self) -> None:
        self._progress_token = 0
        #: Sessions with tool calls in flight, and how many each.
        self._sessions = collections.Counter[str]()
        #: The session of each tool call in flight, by request id and by progress token.
        self._call_sessions: dict[int | str, str] = {}
        self._token_sessions: dict[int | str, str] = {}
        #: The turn's call id of each tool call in flight that has one (same keys).
        self._call_ids: dict[int | str, str] = {}
        self._token_calls: dict[int | str, str] = {}
        #: The progress callbacks of calls in flight, by progress token.
        self._progress: dict[int | str, ProgressCallback] = {}

    def track(self, request_id: int | str, session: str | None, call: str) -> None:
        """Note a request's session (when given) and call id (when not empty)."""
        if session is not None:
            self._call_sessions[request_id] = session
        if call:
            self._call_ids[request_id] = call

    def untrack(self, request_id: int | str) -> None:
        self._call_sessions.pop(request_id, None)
        self._call_ids.pop(request_id, None)

    def begin_call(
        self,
        params: dict[str, Any],
        session: str,
        on_progress: ProgressCallback | None,
        call: str,
    ) -> int:
        """Count a tool call of ``session``; with ``on_progress``, give it a progress
        token (set in ``params``) and return it, else 0. End it with :meth:`end_call`."""
        token = 0
        if on_progress is not None:
            self._progress_token += 1
            token = self._progress_token
            params["_meta"] = {"progressToken": token}
            self._progress[token] = on_progress
            self._token_sessions[token] = session
            if call:
                self._token_calls[token] = call
        self._sessions[session] += 1
        return token

    def end_call(self, token: int, session: str) -> None:
        self._progress.pop(token, None)
        self._token_sessions.pop(token, None)
        self._token_calls.pop(token, None)
        self._sessions[session] -= 1
        if not self._sessions[session]:
            del self._sessions[session]

    def owner(
        self, params: Any, related: int | str | None, pending: Container[int | str]
    ) -> tuple[str, str]:
        """The session a server request belongs to (see the module docstring), and the
        turn's id of the tool call it belongs to when that call is known ("" if not).
        ``pending``: the ids of the client's requests waiting for an answer."""
        if related is not None and related in self._call_sessions:
            return self._call_sessions[related], self._call_ids.get(related, "")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if isinstance(token, int | str) and token in self._token_sessions:
            return self._token_sessions[token], self._token_calls.get(token, "")
        if related is not None and related in pending:
            return "", ""  # related to a request of no session (tools/list, ...)
        calling = {s for s in self._sessions if s}
        # Only an unambiguous owner: with calls of two sessions in flight, neither is asked.
        if len(calling) == 1 and "" not in self._sessions:
            session = calling.pop()
            # Its call, when it has exactly one in flight with an id.
            calls = {c for c in self._call_ids.values() if c}
            one = self._sessions[session] == 1 and len(calls) == 1
            return session, calls.pop() if one else ""
        return "", ""

    def progress(self, params: dict[str, Any], secrets: tuple[str, ...]) -> None:
        """Give a ``notifications/progress`` to its call's callback (if it has one)."""
        token = params.get("progressToken")
        callback = self._progress.get(token) if isinstance(token, int | str) else None
        progress, total = params.get("progress"), params.get("total")
        if callback is None or not isinstance(progress, int | float):
            return
        message = params.get("message")
        callback(
            float(progress),
            float(total) if isinstance(total, int | float) else None,
            redact(message, secrets) if isinstance(message, str) else None,
        )
