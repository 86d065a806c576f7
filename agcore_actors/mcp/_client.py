"""McpClient: the MCP protocol over one transport, owned by one task.

``async with open_client(name, config) as client:`` starts the transport,
runs ``initialize`` (offering the newest protocol version and accepting any
version in :data:`PROTOCOL_VERSIONS`), sends ``notifications/initialized``
and yields. Leaving the block shuts the transport down (bounded, shielded).

Every request has a deadline (``request_timeout`` unless given). A request
that times out or is cancelled is withdrawn: ``notifications/cancelled`` is
sent for it and a late answer is dropped. When the server goes away every
waiting request fails with :class:`McpConnectionClosed` and ``closed`` is
set. Server requests are answered: ``ping``, and the methods given handlers in
``requests`` (elicitation, sampling, roots: see :mod:`._requests`); anything else
-32601.

Whose a server request is (the session and call its handler is told of): see
:mod:`._routing`; the requests waiting for an answer, and what each got: see
:mod:`._pending`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, nullcontext, suppress
from typing import Any

import httpx2
import trio

from .._decode import DECODE_ERRORS
from . import _resources
from ._client_options import ClientOptions as ClientOptions  # re-exported
from ._client_options import make_transport as make_transport
from ._config import HttpServer, ServerConfig, StdioServer
from ._errors import McpConnectionClosed, McpError, McpProtocolError, McpTimeout
from ._jsonrpc import (
    LATEST_PROTOCOL_VERSION,
    METHOD_NOT_FOUND,
    PROTOCOL_VERSIONS,
    Incoming,
    JsonRpcError,
    JsonRpcNotification,
    JsonRpcRequest,
    JsonRpcResponse,
    decode,
    encode,
    parse_tools,
    tool_result,
)
from ._pending import PendingRequests
from ._policy import redact, secret_values
from ._requests import (
    ELICIT,
    REQUESTING_CALL,
    REQUESTING_SESSION,
    SAMPLE,
    ProgressCallback,
    ServerRequests,
    answer,
    client_capabilities,
)
from ._resources import McpPrompt, McpPromptMessage, McpResource, McpResourceContent
from ._routing import Routing
from ._session_gate import SessionGate
from ._transport import Transport
from .messages import McpEvent, McpToolInfo, McpToolResult

log = logging.getLogger("agcore_actors.mcp")

CLIENT_INFO = {"name": "agcore-actors", "version": "0.1.0"}
#: Pages of ``tools/list`` followed at most (a server looping on cursors ends here).
MAX_PAGES = 100


class McpClient:
    def __init__(
        self,
        name: str,
        transport: Transport,
        options: ClientOptions,
        on_event: Callable[[McpEvent], None] | None,
        requests: ServerRequests | None = None,
    ) -> None:
        self.name = name
        self.requests: ServerRequests = dict(requests or {})
        self.transport = transport
        self.options = options
        self.on_event = on_event
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.tools: list[McpToolInfo] = []
        self.tools_changed = trio.Event()
        self.closed = trio.Event()
        self.closed_reason = ""
        #: Configured values (headers, env) kept out of every error this client raises.
        self.secrets: tuple[str, ...] = ()
        #: Whose each tool call in flight is (and its progress callback).
        self._routing = Routing()
        #: Over stdio with session-asking handlers: the calls of one session at a time.
        self.gate: SessionGate | None = None
        #: The requests waiting for an answer.
        self._pending = PendingRequests(name)
        self._nursery: trio.Nursery | None = None

    # -- transport callbacks (synchronous: no queue between transport and client)

    def _deliver(self, data: bytes, related: int | str | None = None) -> None:
        try:
            messages = decode(data)
        except DECODE_ERRORS as exc:
            log.warning("[%s] ignoring a malformed message: %s", self.name, exc)
            return
        for msg in messages:
            if msg.is_response:
                self._pending.answer(msg, self.secrets)
            elif msg.method is not None and msg.id is not None:
                self._on_server_request(msg, related)
            elif msg.method is not None:
                self._on_notification(msg)

    def _fail(self, request_id: int | str, error: Exception) -> None:
        self._pending.fail(request_id, error)

    def _waiting(self, request_id: int | str) -> bool:
        return request_id in self._pending

    def _closed(self, reason: str) -> None:
        self.closed_reason = reason
        self._pending.close(reason)
        self.closed.set()

    def _on_server_request(self, msg: Incoming, related: int | str | None) -> None:
        assert msg.id is not None and msg.method is not None
        if self._nursery is None:
            return
        if msg.method == "ping":
            reply = JsonRpcResponse(id=msg.id, result={})
        elif msg.method not in self.requests:
            reply = JsonRpcResponse(
                id=msg.id,
                error=JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {msg.method}"),
            )
        else:
            owner, call = self._routing.owner(msg.params, related, self._pending)
            self._nursery.start_soon(self._answer, msg.method, msg.id, msg.params, owner, call)
            return
        self._nursery.start_soon(self._send_quietly, encode(reply))

    async def _answer(
        self, method: str, request_id: int | str, params: Any, owner: str, call: str = ""
    ) -> None:
        timeout = self.options.server_request_timeout
        REQUESTING_SESSION.set(owner)
        REQUESTING_CALL.set(call)
        reply = await answer(self.name, self.requests, method, request_id, params, timeout)
        await self._send_quietly(encode(reply))

    def _on_notification(self, msg: Incoming) -> None:
        assert msg.method is not None
        if msg.method == "notifications/tools/list_changed":
            self.tools_changed.set()
        elif msg.method == "notifications/progress" and isinstance(msg.params, dict):
            self._routing.progress(msg.params, self.secrets)
        elif msg.method == "notifications/message" and isinstance(msg.params, dict):
            data = redact(str(msg.params.get("data")), self.secrets)
            log.info("[%s] %s: %s", self.name, msg.params.get("level"), data)
        if self.on_event is not None:
            self.on_event(McpEvent(server=self.name, method=msg.method, params=msg.params))

    async def _send_quietly(self, data: bytes) -> None:
        with trio.move_on_after(self.options.request_timeout):
            try:
                await self.transport.send(data, None)
            except McpError as exc:
                log.info("[%s] could not send: %s", self.name, exc)

    # -- requests --------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        session: str | None = None,
        call: str = "",
    ) -> Any:
        """Send a request and return its result; raise a typed :class:`McpError`.
        ``session``: whose server requests related to this one are (see the module doc);
        ``call``: the turn's id of the tool call it makes, if any."""
        if self.closed.is_set():
            raise McpConnectionClosed(self.name, self.closed_reason)
        request_id, waiter = self._pending.add()
        message = JsonRpcRequest(id=request_id, method=method)
        if params is not None:
            message.params = params
        self._routing.track(request_id, session, call)
        seconds = self.options.request_timeout if timeout is None else timeout
        answered = False
        try:
            with trio.move_on_after(seconds):
                await self.transport.send(encode(message), request_id)
                await waiter.done.wait()
                answered = True
        finally:
            self._routing.untrack(request_id)
            if not answered:
                self._pending.withdraw(request_id)
                if method != "initialize" and not self.closed.is_set():
                    await self._cancel_remote(request_id)
        if not answered:
            raise McpTimeout(method, seconds)
        return waiter.outcome(method)

    async def _cancel_remote(self, request_id: int) -> None:
        note = JsonRpcNotification(
            method="notifications/cancelled",
            params={"requestId": request_id, "reason": "cancelled by the client"},
        )
        with (
            trio.CancelScope(shield=True),
            trio.move_on_after(self.options.shutdown_grace),
            suppress(McpError),
        ):
            await self.transport.send(encode(note), None)

    async def notify(
        self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None
    ) -> None:
        """Send a notification; raise :class:`McpTimeout` when it cannot be sent in time."""
        note = JsonRpcNotification(method=method)
        if params is not None:
            note.params = params
        seconds = self.options.request_timeout if timeout is None else timeout
        with trio.move_on_after(seconds) as scope:
            await self.transport.send(encode(note), None)
        if scope.cancelled_caught:
            raise McpTimeout(method, seconds)

    async def initialize(self) -> None:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": client_capabilities(self.requests),
                "clientInfo": CLIENT_INFO,
            },
            timeout=self.options.connect_timeout,
        )
        if not isinstance(result, dict):
            raise McpProtocolError(redact(f"initialize answered {result!r}", self.secrets))
        version = result.get("protocolVersion")
        if version not in PROTOCOL_VERSIONS:
            raise McpProtocolError(
                f"MCP server '{self.name}' speaks protocol {version!r}; "
                f"supported: {', '.join(PROTOCOL_VERSIONS)}"
            )
        self.protocol_version = version
        self.server_info = result.get("serverInfo") or {}
        self.capabilities = result.get("capabilities") or {}
        self.transport.negotiated(version)
        await self.notify("notifications/initialized", timeout=self.options.connect_timeout)
        await self.transport.initialized()

    async def list_tools(self) -> list[McpToolInfo]:
        """All tools, following ``nextCursor``; replaces the cache."""
        self.tools_changed = trio.Event()
        tools: list[McpToolInfo] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page, cursor = parse_tools(
                await self.request("tools/list", {"cursor": cursor} if cursor else None)
            )
            tools.extend(page)
            if cursor is None or cursor in seen:
                break
            seen.add(cursor)
        self.tools = tools
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None = None,
        session: str = "",
        on_progress: ProgressCallback | None = None,
        call: str = "",
    ) -> McpToolResult:
        """Call a tool; ``session``: whose turn calls it (the server requests related to
        the call are that session's: see the module docstring); ``on_progress``:
        called with each ``notifications/progress`` of the call (a progress token is
        sent only then); ``call``: the turn's id of the call (its server requests name it:
        :func:`~._requests.requesting_call`)."""
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        async with self.gate.enter(session) if self.gate else nullcontext():
            raw = await self._call(params, timeout, session, on_progress, call)
        return tool_result(raw)

    async def _call(
        self,
        params: dict[str, Any],
        timeout: float | None,
        session: str,
        on_progress: ProgressCallback | None,
        call: str,
    ) -> Any:
        token = self._routing.begin_call(params, session, on_progress, call)
        try:
            return await self.request(
                "tools/call", params, timeout=timeout, session=session, call=call
            )
        finally:
            self._routing.end_call(token, session)

    async def ping(self) -> None:
        await self.request("ping")

    # -- resources and prompts (see ._resources) -------------------------------------

    async def list_resources(self) -> list[McpResource]:
        return await _resources.list_resources(self)

    async def read_resource(self, uri: str) -> list[McpResourceContent]:
        return await _resources.read_resource(self, uri)

    async def subscribe_resource(self, uri: str) -> None:
        """Hear of changes to ``uri``: ``notifications/resources/updated`` as events."""
        await _resources.subscribe_resource(self, uri)

    async def unsubscribe_resource(self, uri: str) -> None:
        await _resources.subscribe_resource(self, uri, subscribe=False)

    async def list_prompts(self) -> list[McpPrompt]:
        return await _resources.list_prompts(self)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> list[McpPromptMessage]:
        return await _resources.get_prompt(self, name, arguments)


@asynccontextmanager
async def open_client(
    name: str,
    config: ServerConfig,
    *,
    options: ClientOptions | None = None,
    on_event: Callable[[McpEvent], None] | None = None,
    requests: ServerRequests | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[McpClient]:
    """Connect and initialize; see the module docstring. Must stay in one task.

    ``requests``: handlers of server requests by method (see :mod:`._requests`).
    ``auth``: the HTTP authentication of an HTTP server (default: its ``oauth`` entry's,
    see :mod:`._oauth`, which an actor cannot complete when a person must log in)."""
    options = options or ClientOptions()
    transport = make_transport(name, config, options, auth)
    client = McpClient(name, transport, options, on_event, requests)
    client.secrets = secret_values(config)
    unrelated = (isinstance(config, StdioServer) and not config.parallel_sessions) or (
        isinstance(config, HttpServer) and config.sse
    )
    if unrelated and (ELICIT in client.requests or SAMPLE in client.requests):
        client.gate = SessionGate()
    try:
        async with trio.open_nursery() as nursery:
            client._nursery = nursery
            try:
                await transport.start(
                    nursery, client._deliver, client._fail, client._closed, client._waiting
                )
                await client.initialize()
                yield client
            finally:
                await transport.aclose()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # surface the one real error, not a group
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
