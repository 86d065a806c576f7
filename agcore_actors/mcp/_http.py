"""Streamable HTTP transport (MCP 2025-03-26 and later).

Every message is POSTed to the endpoint. A request's answer comes back as a
JSON body or as an SSE stream (which may carry notifications and server
requests before the response); notifications and responses get 202. The
``Mcp-Session-Id`` the server assigns at ``initialize`` and the negotiated
``MCP-Protocol-Version`` are sent on every later request. A request's POST
lives exactly as long as the request (its timeout or cancellation closes
the stream). :meth:`aclose` ends the session with DELETE. An HTTP error
answer fails its request with :class:`McpHttpError` (its body cut to 500 bytes, with
configured header values redacted); a JSON answer over ``max_message_bytes`` fails
its request with :class:`McpMessageTooLarge`; a 404 on an established session (the server
forgot it) closes the connection, so the supervisor reconnects. The
optional GET stream for unsolicited server messages is not opened:
everything arrives on POST answers.
"""

from __future__ import annotations

import logging

import httpx2
import trio

from ._config import HttpServer
from ._errors import McpConnectionClosed, McpHttpError, McpMessageTooLarge, McpProtocolError
from ._policy import redact, secret_values
from ._transport import Closed, Deliver, Fail

log = logging.getLogger("agcore_actors.mcp.http")

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"


class HttpTransport:
    def __init__(
        self,
        name: str,
        config: HttpServer,
        *,
        connect_timeout: float = 10.0,
        grace: float = 2.0,
        max_message_bytes: int = 16 * 1024 * 1024,
    ) -> None:
        self.name = name
        self.config = config
        self.grace = grace
        self.max_message_bytes = max_message_bytes
        # Reads have no httpx timeout: each MCP request has its own deadline in the
        # client, which cancels the POST that serves it.
        self._client = httpx2.AsyncClient(
            timeout=httpx2.Timeout(connect_timeout, read=None, write=connect_timeout, pool=None),
            headers=dict(config.headers),
        )
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._secrets = secret_values(config)
        self._nursery: trio.Nursery | None = None
        self._deliver: Deliver | None = None
        self._fail: Fail | None = None
        self._closed: Closed | None = None

    async def start(
        self, nursery: trio.Nursery, deliver: Deliver, fail: Fail, closed: Closed
    ) -> None:
        self._nursery, self._deliver, self._fail, self._closed = nursery, deliver, fail, closed

    def negotiated(self, protocol_version: str) -> None:
        self.protocol_version = protocol_version

    def _headers(self) -> dict[str, str]:
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers[VERSION_HEADER] = self.protocol_version
        return headers

    async def send(self, data: bytes, request_id: int | str | None) -> None:
        if request_id is None:  # a notification or our response: 202, nothing to read
            try:
                response = await self._client.post(
                    self.config.url, content=data, headers=self._headers()
                )
            except httpx2.HTTPError as exc:
                raise McpConnectionClosed(self.name, self._http_error(exc)) from None
            if response.status_code >= 400:
                log.warning("[%s] notification refused: HTTP %s", self.name, response.status_code)
            return
        # Inline, not in a background task: the request's deadline or cancellation
        # then closes the HTTP stream that would carry its answer.
        await self._post_request(data, request_id)

    async def _post_request(self, data: bytes, request_id: int | str) -> None:
        assert self._deliver is not None and self._fail is not None and self._closed is not None
        try:
            async with self._client.stream(
                "POST", self.config.url, content=data, headers=self._headers()
            ) as response:
                if SESSION_HEADER in response.headers and self.session_id is None:
                    self.session_id = response.headers[SESSION_HEADER]
                if response.status_code == 404 and self.session_id is not None:
                    self._closed("the server ended the HTTP session (404)")
                    return
                if response.status_code >= 400:
                    # Redact before cutting, so that no secret is cut in half and kept.
                    room = 500 + max((len(s) for s in self._secrets), default=0)
                    text = (await response.aread())[:room].decode("utf-8", "replace")
                    body = redact(text, self._secrets)[:500]
                    self._fail(request_id, McpHttpError(self.name, response.status_code, body))
                    return
                kind = response.headers.get("content-type", "").split(";")[0].strip()
                if kind == "text/event-stream":
                    events = httpx2.EventSource(response, max_event_size=self.max_message_bytes)
                    try:
                        async for event in events:
                            if event.event in ("message", "") and event.data:
                                self._deliver(event.data.encode("utf-8"))
                    except httpx2.SSEError:
                        # The content type was checked above: the event was over the cap.
                        self._fail(
                            request_id, McpMessageTooLarge(self.name, self.max_message_bytes)
                        )
                        return
                else:
                    answer = bytearray()
                    async for part in response.aiter_bytes():
                        answer += part
                        if len(answer) > self.max_message_bytes:
                            self._fail(
                                request_id, McpMessageTooLarge(self.name, self.max_message_bytes)
                            )
                            return
                    self._deliver(bytes(answer))
            # If the answer was in there, the request is done and this is ignored.
            self._fail(request_id, McpProtocolError("the HTTP answer held no JSON-RPC response"))
        except httpx2.HTTPError as exc:
            self._fail(request_id, McpConnectionClosed(self.name, self._http_error(exc)))

    def _http_error(self, exc: httpx2.HTTPError) -> str:
        return redact(f"HTTP error: {exc}", self._secrets)

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self.grace):
                if self.session_id is not None:
                    try:
                        await self._client.delete(self.config.url, headers=self._headers())
                    except httpx2.HTTPError as exc:
                        log.info("[%s] DELETE of the session failed: %s", self.name, exc)
            await self._client.aclose()
