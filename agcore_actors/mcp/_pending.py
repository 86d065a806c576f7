"""The requests of an MCP client waiting for their answers, by JSON-RPC id.

Plain bookkeeping for one client, used from its one task: no awaits. A request is
added (under a fresh id) before it is sent and leaves when it ends: answered, failed by
its transport (an HTTP error status), failed because the connection closed (every one
waiting, with :class:`~._errors.McpConnectionClosed`), or withdrawn by its asker, who
timed out or was cancelled (in the asker's ``finally``, so under cancellation too). An
answer to an id that no longer waits (a late one to a withdrawn request) is dropped.

An error answer keeps the server's error (its message redacted): the asker raises it
typed by its method (:func:`~._jsonrpc.map_error`).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import trio

from ._errors import McpConnectionClosed, McpServerError
from ._jsonrpc import Incoming, JsonRpcError, map_error
from ._policy import redact

log = logging.getLogger("agcore_actors.mcp")


class Waiter:
    """One request's wait: set ``done`` once it has a ``result`` or an ``error``."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.result: Any = None
        self.error: Exception | None = None

    def outcome(self, method: str) -> Any:
        """The result of a request of ``method`` that is done, or raise its error."""
        if isinstance(self.error, McpServerError) and isinstance(self.result, JsonRpcError):
            raise map_error(method, self.result)
        if self.error is not None:
            raise self.error
        return self.result


class PendingRequests:
    """The requests of the client ``name`` waiting for an answer (see the module doc)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._next_id = 0
        self._waiters: dict[int | str, Waiter] = {}

    def add(self) -> tuple[int, Waiter]:
        """A fresh request id and the wait for its answer."""
        self._next_id += 1
        waiter = self._waiters[self._next_id] = Waiter()
        return self._next_id, waiter

    def __contains__(self, request_id: object) -> bool:
        """Whether the request still waits for its answer."""
        return request_id in self._waiters

    def withdraw(self, request_id: int | str) -> None:
        """Stop waiting for the request (its asker gave up): a later answer is dropped."""
        self._waiters.pop(request_id, None)

    def answer(self, msg: Incoming, secrets: tuple[str, ...]) -> None:
        """Give a response to its request; ``secrets`` are redacted from an error's
        message."""
        assert msg.id is not None
        waiter = self._waiters.pop(msg.id, None)
        if waiter is None:  # a late answer to a withdrawn request (1.x sends code 0)
            log.debug("[%s] dropping an answer to unknown id %r", self.name, msg.id)
            return
        if msg.error is not None:
            error = JsonRpcError(msg.error.code, redact(msg.error.message, secrets), msg.error.data)
            waiter.error = McpServerError("", error.code, error.message, error.data)
            waiter.result = error
        else:
            waiter.result = None if msg.result is msgspec.UNSET else msg.result
        waiter.done.set()

    def fail(self, request_id: int | str, error: Exception) -> None:
        """Fail the request with ``error`` (it cannot get an answer: an HTTP error)."""
        waiter = self._waiters.pop(request_id, None)
        if waiter is not None:
            waiter.error = error
            waiter.done.set()

    def close(self, reason: str) -> None:
        """Fail every request waiting: the connection closed for ``reason``."""
        for waiter in self._waiters.values():
            waiter.error = McpConnectionClosed(self.name, reason)
            waiter.done.set()
        self._waiters.clear()
