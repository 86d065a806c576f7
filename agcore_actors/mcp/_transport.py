"""The transport interface the MCP client drives.

A transport moves encoded JSON-RPC messages. It is started in the client's
nursery with four callbacks: ``deliver(data, related)`` for each message received
(``related``: the id of the request whose response stream carried it, when the
transport has one per request, else None),
``fail(request_id, error)`` when a request cannot get an answer (an HTTP
error status), ``closed(error)`` once the peer is gone for good, and
``waiting(request_id)``, true while a request still waits for its answer (so a
transport can tell whether a stream that ended must be resumed).
``await initialized()`` is called once the session is initialized.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import trio

Deliver = Callable[[bytes, int | str | None], None]
Fail = Callable[[int | str, Exception], None]
Closed = Callable[[str], None]
Waiting = Callable[[int | str], bool]


class Transport(Protocol):
    async def start(
        self, nursery: trio.Nursery, deliver: Deliver, fail: Fail, closed: Closed, waiting: Waiting
    ) -> None: ...

    async def send(self, data: bytes, request_id: int | str | None) -> None: ...

    def negotiated(self, protocol_version: str) -> None: ...

    async def initialized(self) -> None:
        """The session is initialized; bounded in time."""
        ...

    async def aclose(self) -> None:
        """Shut down; bounded in time; runs under a shield when cancelled."""
        ...
