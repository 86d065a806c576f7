"""Streamable HTTP transport (MCP 2025-03-26 and later).

Every message is POSTed to the endpoint. A request's answer comes back as a
JSON body or as an SSE stream (which may carry notifications and server
requests before the response: those are delivered as related to that request);
notifications and responses get 202. The
``Mcp-Session-Id`` the server assigns at ``initialize`` and the negotiated
``MCP-Protocol-Version`` are sent on every later request. A request's POST
lives exactly as long as the request (its timeout or cancellation closes
the stream). :meth:`aclose` ends the session with DELETE. An HTTP error
answer fails its request with :class:`McpHttpError` (its body cut to 500 bytes, with
configured header values redacted); a JSON answer over ``max_message_bytes`` fails
its request with :class:`McpMessageTooLarge`; a 404 on an established session (the server
forgot it) closes the connection, so the supervisor reconnects.

Resumption: a response stream that ends before the answer, after the server gave its
events ids, is resumed with a GET carrying ``Last-Event-ID`` once the server's
``retry`` hint (else one second) has passed, up to :data:`MAX_RESUMES` times without
progress; a stream without event ids cannot be resumed and fails its request.

The listening stream: once the session is initialized, a GET stream stays open for the
messages the server sends outside any request (``notifications/tools/list_changed``,
server requests). A server that does not offer one (405, or any other non-SSE answer)
is not asked again; a stream that ends or breaks is reopened with ``Last-Event-ID``
after the server's ``retry`` hint or a backoff (1 s doubling to 30 s).
"""

from __future__ import annotations

import logging

import httpx2
import trio

from ._config import HttpServer
from ._errors import (
    McpAuthError,
    McpConnectionClosed,
    McpError,
    McpHttpError,
    McpMessageTooLarge,
    McpProtocolError,
)
from ._policy import redact, secret_values
from ._transport import Closed, Deliver, Fail, Waiting

log = logging.getLogger("agcore_actors.mcp.http")

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
#: Resumptions of one request's stream in a row that bring no event.
MAX_RESUMES = 5
#: Seconds before a stream is resumed when the server gave no ``retry`` hint.
DEFAULT_RETRY = 1.0
#: The listening stream's backoff cap, in seconds.
LISTEN_BACKOFF_CAP = 30.0


class _Stream:
    """Where one SSE stream stands: the last event id and the server's retry hint."""

    __slots__ = ("last_id", "progressed", "retry")

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.retry: float | None = None
        self.progressed = False


def http_client(
    config: HttpServer, connect_timeout: float, auth: httpx2.Auth | None
) -> httpx2.AsyncClient:
    """The HTTP client of a remote MCP server (streamable HTTP or legacy SSE). Reads have
    no httpx timeout: each MCP request has its own deadline in the client, which cancels
    the exchange that serves it."""
    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(connect_timeout, read=None, write=connect_timeout, pool=None),
        headers=dict(config.headers),
        auth=auth,
    )


class HttpTransport:
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
        self._connect_timeout = connect_timeout
        self.max_message_bytes = max_message_bytes
        self._client = http_client(config, connect_timeout, auth)
        self._auth = auth
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._secrets = secret_values(config)
        self._nursery: trio.Nursery | None = None
        self._deliver: Deliver | None = None
        self._fail: Fail | None = None
        self._closed: Closed | None = None
        self._waiting: Waiting | None = None
        self._listener = trio.CancelScope()

    async def start(
        self, nursery: trio.Nursery, deliver: Deliver, fail: Fail, closed: Closed, waiting: Waiting
    ) -> None:
        self._nursery, self._deliver, self._fail, self._closed = nursery, deliver, fail, closed
        self._waiting = waiting

    def negotiated(self, protocol_version: str) -> None:
        self.protocol_version = protocol_version

    async def initialized(self) -> None:
        """Open the listening stream; returns once the server has answered its GET (so
        nothing the server sends after ``initialize`` is missed), or after
        ``connect_timeout`` without one."""
        if self._nursery is not None:
            with trio.move_on_after(self._connect_timeout):
                await self._nursery.start(self._listen)

    def _headers(self, accept: str = "application/json, text/event-stream") -> dict[str, str]:
        headers = {"accept": accept, "content-type": "application/json"}
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
            except Exception as exc:
                raise self._auth_failure(exc) from None
            if response.status_code >= 400:
                log.warning("[%s] notification refused: HTTP %s", self.name, response.status_code)
            return
        # Inline, not in a background task: the request's deadline or cancellation
        # then closes the HTTP stream that would carry its answer.
        await self._post_request(data, request_id)

    async def _post_request(self, data: bytes, request_id: int | str) -> None:
        assert self._fail is not None and self._waiting is not None
        stream = _Stream()
        try:
            async with self._client.stream(
                "POST", self.config.url, content=data, headers=self._headers()
            ) as response:
                if SESSION_HEADER in response.headers and self.session_id is None:
                    self.session_id = response.headers[SESSION_HEADER]
                if not await self._answer(response, request_id, stream):
                    return
            resumes = 0
            while self._waiting(request_id) and stream.last_id is not None:
                if resumes >= MAX_RESUMES:
                    break
                await trio.sleep(DEFAULT_RETRY if stream.retry is None else stream.retry)
                stream.progressed = False
                headers = self._headers("text/event-stream") | {"last-event-id": stream.last_id}
                async with self._client.stream("GET", self.config.url, headers=headers) as response:
                    if not await self._answer(response, request_id, stream, resumed=True):
                        return
                resumes = 0 if stream.progressed else resumes + 1
            # If the answer was in there, the request is done and this is ignored.
            self._fail(request_id, McpProtocolError("the HTTP answer held no JSON-RPC response"))
        except httpx2.HTTPError as exc:
            self._fail(request_id, McpConnectionClosed(self.name, self._http_error(exc)))
        except Exception as exc:
            self._fail(request_id, self._auth_failure(exc))

    def _auth_failure(self, exc: Exception) -> McpError:
        """The typed error of an exception out of the OAuth flow; re-raise any other."""
        if isinstance(exc, McpError):  # McpAuthRequired from an unattended flow
            return exc
        if self._auth is None or not type(exc).__module__.startswith("mcp."):
            raise exc
        # The SDK's OAuth flow failed (OAuthFlowError, OAuthTokenError, ...).
        return McpAuthError(self.name, self._text(exc))

    async def _answer(
        self,
        response: httpx2.Response,
        request_id: int | str,
        stream: _Stream,
        *,
        resumed: bool = False,
    ) -> bool:
        """Read one answer to a request; False when it failed the request (or the
        connection) and nothing may follow. A POST's stream is read to its end (the
        server ends it after the answer, and the connection goes back to the pool); a
        resumed GET stream is left as soon as the answer is in, since a server may keep
        it open."""
        assert self._deliver is not None and self._fail is not None and self._closed is not None
        if response.status_code == 404 and self.session_id is not None:
            self._closed("the server ended the HTTP session (404)")
            return False
        if response.status_code >= 400:
            # Redact before cutting, so that no secret is cut in half and kept.
            room = 500 + max((len(s) for s in self._secrets), default=0)
            text = (await response.aread())[:room].decode("utf-8", "replace")
            body = redact(text, self._secrets)[:500]
            asks_oauth = response.status_code == 401 and "www-authenticate" in response.headers
            if asks_oauth and self._auth is None:
                body += ' (the server asks for OAuth: give its entry an "oauth" object)'
            self._fail(request_id, McpHttpError(self.name, response.status_code, body))
            return False
        kind = response.headers.get("content-type", "").split(";")[0].strip()
        if kind == "text/event-stream":
            try:
                await self._read_events(response, stream, request_id, stop=resumed)
            except httpx2.SSEError:
                # The content type was checked above: the event was over the cap.
                self._fail(request_id, McpMessageTooLarge(self.name, self.max_message_bytes))
                return False
            return True
        answer = bytearray()
        async for part in response.aiter_bytes():
            answer += part
            if len(answer) > self.max_message_bytes:
                self._fail(request_id, McpMessageTooLarge(self.name, self.max_message_bytes))
                return False
        self._deliver(bytes(answer), request_id)
        stream.last_id = None  # a JSON answer is whole: nothing to resume
        return True

    async def _read_events(
        self,
        response: httpx2.Response,
        stream: _Stream,
        request_id: int | str | None = None,
        *,
        stop: bool = False,
    ) -> None:
        """Deliver the stream's messages, as related to ``request_id`` (the request whose
        stream it is; None: the listening stream), until it ends, or with ``stop`` until
        ``request_id`` is answered."""
        assert self._deliver is not None and self._waiting is not None
        events = httpx2.EventSource(response, max_event_size=self.max_message_bytes)
        # Stopping by cancellation, not by leaving the loop: the exception then ends
        # every generator under the event source (a ``break`` would leave them to the GC).
        with trio.CancelScope() as answered:
            async for event in events:
                if event.id:
                    stream.last_id = event.id
                if event.retry is not None:
                    stream.retry = max(0.0, event.retry / 1000)
                if event.event in ("message", "") and event.data:
                    stream.progressed = True
                    self._deliver(event.data.encode("utf-8"), request_id)
                    if stop and request_id is not None and not self._waiting(request_id):
                        answered.cancel()

    async def _listen(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The listening GET stream; see the module docstring. Started once the first
        GET is answered (or failed)."""
        stream = _Stream()
        backoff = DEFAULT_RETRY
        started = False
        with self._listener:
            while True:
                headers = self._headers("text/event-stream")
                if stream.last_id is not None:
                    headers["last-event-id"] = stream.last_id
                try:
                    async with self._client.stream(
                        "GET", self.config.url, headers=headers
                    ) as response:
                        kind = response.headers.get("content-type", "").split(";")[0].strip()
                        if not started:
                            started = True
                            task_status.started()
                        if response.status_code != 200 or kind != "text/event-stream":
                            log.debug(
                                "[%s] no listening stream (HTTP %s)",
                                self.name,
                                response.status_code,
                            )
                            return
                        stream.progressed = False
                        await self._read_events(response, stream)
                except (httpx2.HTTPError, httpx2.SSEError) as exc:
                    log.info("[%s] the listening stream broke: %s", self.name, self._text(exc))
                except Exception as exc:
                    error = self._auth_failure(exc)
                    log.warning("[%s] no listening stream: %s", self.name, error)
                    if not started:
                        task_status.started()
                    return
                if not started:
                    started = True
                    task_status.started()
                if stream.progressed:
                    backoff = DEFAULT_RETRY
                wait = stream.retry if stream.retry is not None and stream.progressed else backoff
                await trio.sleep(wait)
                backoff = min(backoff * 2, LISTEN_BACKOFF_CAP)

    def _text(self, exc: Exception) -> str:
        return redact(str(exc), self._secrets)

    def _http_error(self, exc: httpx2.HTTPError) -> str:
        return redact(f"HTTP error: {exc}", self._secrets)

    async def aclose(self) -> None:
        self._listener.cancel()
        with trio.CancelScope(shield=True):
            with trio.move_on_after(self.grace):
                if self.session_id is not None:
                    try:
                        await self._client.delete(self.config.url, headers=self._headers())
                    except httpx2.HTTPError as exc:
                        log.info("[%s] DELETE of the session failed: %s", self.name, exc)
            await self._client.aclose()
