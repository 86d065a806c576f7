"""The legacy HTTP+SSE transport (MCP 2024-11-05), for servers configured with
``"type": "sse"``.

The client opens one GET stream on the server's URL; its first ``endpoint`` event names
the URL (resolved against the stream's) every message is POSTed to. Every message the
server sends, answers included, comes back on that one stream as a ``message`` event
(delivered unrelated to any request: the wire says nothing more, as over stdio). A POST
answered with an error status fails its request with :class:`McpHttpError`; a POST that
cannot be sent closes the connection, as does the stream's end, so the supervisor
reconnects. An event over ``max_message_bytes`` breaks the one stream, so it closes the
connection too (over streamable HTTP it fails only its request). :meth:`start` returns
once the endpoint is known, or raises :class:`McpConnectionClosed` when it is not within
``connect_timeout``.

Cancellation: a request's deadline or cancellation ends its POST (its answer, which comes
on the stream, is then dropped by the client); :meth:`aclose` ends the stream and the
HTTP client, bounded by ``grace`` under a shield.
"""

from __future__ import annotations

import contextlib
import logging
import urllib.parse

import httpx2
import trio

from ._config import HttpServer
from ._errors import McpConnectionClosed, McpHttpError
from ._http import http_client
from ._policy import redact, secret_values
from ._transport import Closed, Deliver, Fail, Waiting

log = logging.getLogger("agcore_actors.mcp.sse")

__all__ = ["SseTransport"]


class SseTransport:
    def __init__(
        self,
        name: str,
        config: HttpServer,
        *,
        connect_timeout: float = 10.0,
        grace: float = 2.0,
        max_message_bytes: int = 16 * 1024 * 1024,
        auth: httpx2.Auth | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.grace = grace
        self.max_message_bytes = max_message_bytes
        self._connect_timeout = connect_timeout
        self._client = http_client(config, connect_timeout, auth)
        self._secrets = secret_values(config)
        self._fail: Fail | None = None
        self._stream = trio.CancelScope()
        #: Where messages are POSTed (from the stream's ``endpoint`` event).
        self.endpoint: str | None = None
        #: Why the stream ended (or that it did not name the endpoint in time).
        self.reason = "the SSE stream named no endpoint in time"

    async def start(
        self, nursery: trio.Nursery, deliver: Deliver, fail: Fail, closed: Closed, waiting: Waiting
    ) -> None:
        self._fail = fail
        # RuntimeError: the stream ended before it named the endpoint.
        with trio.move_on_after(self._connect_timeout), contextlib.suppress(RuntimeError):
            await nursery.start(self._read, deliver, closed)
        if self.endpoint is None:
            self._stream.cancel()
            raise McpConnectionClosed(self.name, f"no endpoint: {self.reason}")

    async def _read(
        self,
        deliver: Deliver,
        closed: Closed,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """The GET stream: the endpoint first (then ``started``), every message after."""
        self.reason = "the SSE stream ended"
        with self._stream:
            try:
                headers = {"accept": "text/event-stream"}
                async with self._client.stream("GET", self.config.url, headers=headers) as r:
                    if r.status_code != 200:
                        self.reason = f"the SSE stream was answered HTTP {r.status_code}"
                        return
                    events = httpx2.EventSource(r, max_event_size=self.max_message_bytes)
                    async for event in events:
                        if event.event == "endpoint" and self.endpoint is None:
                            self.endpoint = urllib.parse.urljoin(self.config.url, event.data)
                            task_status.started()
                        elif event.event in ("message", "") and event.data:
                            deliver(event.data.encode("utf-8"), None)
            except (httpx2.HTTPError, httpx2.SSEError) as exc:
                self.reason = redact(f"the SSE stream broke: {exc}", self._secrets)
            finally:
                if not self._stream.cancel_called:
                    closed(self.reason)

    async def send(self, data: bytes, request_id: int | str | None) -> None:
        assert self.endpoint is not None and self._fail is not None
        headers = {"content-type": "application/json"}
        try:
            response = await self._client.post(self.endpoint, content=data, headers=headers)
        except httpx2.HTTPError as exc:
            raise McpConnectionClosed(
                self.name, redact(f"HTTP error: {exc}", self._secrets)
            ) from None
        if response.status_code >= 400:
            body = redact(response.text[:2000], self._secrets)[:500]
            if request_id is not None:
                self._fail(request_id, McpHttpError(self.name, response.status_code, body))
            else:
                log.warning("[%s] message refused: HTTP %s", self.name, response.status_code)

    def negotiated(self, protocol_version: str) -> None:
        return None

    async def initialized(self) -> None:
        return None

    async def aclose(self) -> None:
        self._stream.cancel()
        with trio.CancelScope(shield=True), trio.move_on_after(self.grace):
            await self._client.aclose()
