"""McpConnection: one actor per MCP server, and :func:`connection_spec` that builds it.

Its protocol is :mod:`agcore_actors.mcp.messages`; its tools reach a registry through
:mod:`._adapter`; the circuit breaker is :class:`agcore_actors.actor.policy.CircuitBreaker`.
Its configuration and the breaker state shared across incarnations are in
:mod:`._connection_config`; the supervisors that restart it (one per server) in
:mod:`._supervision`.
"""

from __future__ import annotations

import logging
from typing import ClassVar, assert_never

import trio

from ..actor import Actor, ActorRef, ActorStopped, ChildSpec, MailboxFull
from ..actor.policy import breaker_failure, breaker_retry_in, breaker_success
from ..tools import ToolError, ToolRegistry
from ._adapter import publish_tools
from ._client import McpClient, open_client
from ._config import ServerConfig
from ._connection_config import ConnectionConfig, ServerHealth
from ._content_requests import answer_content, tool_resources
from ._errors import (
    McpConnectionClosed,
    McpError,
    McpMethodNotFound,
    McpTimeout,
    McpUnavailable,
)
from ._policy import secret_values
from ._requests import ProgressCallback
from ._resources import McpResource
from .messages import (
    CallTool,
    GetPrompt,
    GetStatus,
    ListPrompts,
    ListResources,
    ListTools,
    McpConnectionMsg,
    McpConnectionReply,
    McpEvent,
    McpStatus,
    McpToolInfo,
    McpToolList,
    McpToolResult,
    PingServer,
    ReadResource,
    SubscribeResource,
)

__all__ = ["McpConnection", "connection_spec"]

log = logging.getLogger("agcore_actors.mcp")


class McpConnection(Actor[McpConnectionMsg]):
    """The connection to MCP server ``name``; its tools are published in ``registry``.

    Semantics:
        An incarnation connects in the background (``on_start`` returns at once, so a
        server that is down never fails its supervisor's start): it opens the
        transport, runs ``initialize``, lists the tools and publishes them in
        ``registry`` under :func:`~agcore_actors.mcp.policy.registry_names`
        (``{name}{separator}{tool}``, made valid for every model API). Requests that
        arrive meanwhile wait for the connect (at most twice
        ``client.connect_timeout``); :func:`~agcore_actors.mcp.wait_ready` waits for it
        across restarts. Once connected,
        calls go to the server concurrently (up to 32 at once); the tools are listed
        again whenever the server sends ``notifications/tools/list_changed``. Server
        notifications go to ``events`` (dropped when its mailbox is full).

        When the connect fails or the server goes away (process exit, EOF, HTTP session
        lost) every waiting call, and every call that comes in before the incarnation
        ends, fails with :class:`~agcore_actors.mcp.McpConnectionClosed`, never with an
        actor error; then the incarnation crashes so the supervisor reconnects with
        backoff (calls sent meanwhile wait in the mailbox for the next incarnation). One
        message over ``client.max_message_bytes`` fails only the call it answers. After
        ``config.breaker.threshold`` consecutive failures the breaker opens: the next
        incarnation starts *parked*, answers :class:`~agcore_actors.mcp.McpUnavailable`
        (its tools stay registered and say so) and probes the server when the breaker
        allows; a good probe connects. The breaker state outlives incarnations in a
        :class:`ServerHealth` owned by the spec.

    Cancellation:
        A cancelled ask withdraws its request (``notifications/cancelled``); the
        connection stays up. Stopping the actor shuts the server down within a bounded
        time (stdin EOF, then signals for stdio; DELETE of the session for HTTP).

    Errors:
        Every :class:`~agcore_actors.tools.ToolError` (so every MCP error) goes to the
        asker only. A lost connection crashes the incarnation after its waiting calls
        have their :class:`~agcore_actors.mcp.McpConnectionClosed`.
    """

    # Until ChildSpec takes max_concurrency, the limit stays a class attribute.
    max_concurrency: ClassVar[int] = 32
    expected_errors = (ToolError,)

    def __init__(
        self,
        name: str,
        server: ServerConfig,
        *,
        health: ServerHealth | None = None,
        registry: ToolRegistry | None = None,
        events: ActorRef[McpEvent] | None = None,
        config: ConnectionConfig | None = None,
    ) -> None:
        self.name = name
        self.server = server
        self.config = config or ConnectionConfig()
        self.health = health or ServerHealth(self.config.breaker)
        self.registry = registry
        self.events = events
        self.client: McpClient | None = None
        #: What the ``read_resource`` tool offers (None: no such tool).
        self._resources: list[McpResource] | None = None
        self._active = 0
        self._idle = trio.Event()
        self._ready = trio.Event()
        self._parked = False
        # Why this incarnation is about to crash; requests then fail at once.
        self._failure: str | None = None

    # -- lifecycle ---------------------------------------------------------------

    async def on_start(self) -> None:
        # Connecting happens in the background: a server that is down at start
        # must not fail the supervisor's start (and with it every other server).
        if self.health.state.open_until is not None:
            log.warning("MCP server %r is parked by its circuit breaker", self.name)
            self._parked = True
            self.ctx.nursery.start_soon(self._probe)
        else:
            self.ctx.nursery.start_soon(self._connect_or_crash)

    async def _connect_or_crash(self) -> None:
        try:
            await self._connect()
        except Exception as exc:
            self._record_failure()
            log.warning("MCP server %r: connect failed: %s", self.name, exc)
            await self._fail_waiting(f"connect failed: {exc}")
            raise McpConnectionClosed(self.name, f"connect failed: {exc}") from exc

    async def _fail_waiting(self, reason: str) -> None:
        """Before the incarnation crashes: every request waiting for the server, and
        every one that comes in meanwhile, fails with ``McpConnectionClosed(reason)``;
        wait (bounded) until they have handed it to their askers, which the crash would
        otherwise answer with an actor error."""
        self._failure = reason
        self._ready.set()
        with trio.move_on_after(self.config.drain_timeout):
            if self._active:
                self._idle = trio.Event()
                await self._idle.wait()

    async def _connect(self) -> None:
        seconds = self.config.client.connect_timeout * 2
        with trio.move_on_after(seconds) as scope:
            self.client = await self.ctx.nursery.start(self._serve_client)
        if scope.cancelled_caught:
            raise McpTimeout("connect", seconds)
        self.health.state = breaker_success(
            self.health.config, self.health.state, trio.current_time()
        )
        self._parked = False
        self._ready.set()

    async def _serve_client(self, task_status: trio.TaskStatus[McpClient]) -> None:
        async with open_client(
            self.name,
            self.server,
            options=self.config.client,
            on_event=self._on_event,
            requests=self.config.server_requests(),
        ) as client:
            try:
                await client.list_tools()
            except McpMethodNotFound:  # a server without tools (resources only, say)
                client.tools = []
            self._resources = await tool_resources(self.name, self.server, client)
            self._publish(client.tools)
            task_status.started(client)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._follow_tool_changes, client)
                await client.closed.wait()
                nursery.cancel_scope.cancel()
            await self._fail_waiting(client.closed_reason)
            self._record_failure()
            self.client = None
            raise McpConnectionClosed(self.name, client.closed_reason)

    async def _follow_tool_changes(self, client: McpClient) -> None:
        while True:
            await client.tools_changed.wait()
            try:
                await client.list_tools()
            except McpError as exc:
                log.warning("MCP server %r: re-listing tools failed: %s", self.name, exc)
                await trio.sleep(1.0)
                continue
            self._publish(client.tools)

    async def _probe(self) -> None:
        while True:
            until = self.health.state.open_until
            if until is not None:
                await trio.sleep_until(until)
            try:
                await self._connect()
            except Exception as exc:
                log.warning("MCP server %r: probe failed: %s", self.name, exc)
                self._record_failure()
                continue
            log.info("MCP server %r: probe succeeded, connected", self.name)
            return

    def _record_failure(self) -> None:
        self.health.state = breaker_failure(
            self.health.config, self.health.state, trio.current_time()
        )

    def _publish(self, tools: list[McpToolInfo]) -> None:
        if self.registry is not None:
            publish_tools(
                self.registry,
                self.name,
                tools,
                self.ctx.self_ref,
                self.config.separator,
                secret_values(self.server),
                self.server.require_approval,
                resources=self._resources,
            )

    def _on_event(self, event: McpEvent) -> None:
        if self.events is None:
            return
        try:
            self.events.tell_nowait(event)
        except (MailboxFull, ActorStopped):
            log.debug("MCP server %r: event %s dropped", self.name, event.method)

    # -- requests ------------------------------------------------------------------

    async def handle(self, msg: McpConnectionMsg) -> McpConnectionReply:
        self._active += 1
        try:
            match msg:
                case CallTool():
                    return await self._on_call_tool(msg)
                case ListTools():
                    return await self._on_list_tools(msg)
                case PingServer():
                    return await self._on_ping(msg)
                case GetStatus():
                    return self._on_get_status(msg)
                case (
                    ListResources()
                    | ReadResource()
                    | SubscribeResource()
                    | ListPrompts()
                    | GetPrompt()
                ):
                    return await answer_content(self.name, await self._client(), msg)
                case _:
                    assert_never(msg)
        finally:
            self._active -= 1
            if not self._active:
                self._idle.set()

    async def _on_call_tool(self, msg: CallTool) -> McpToolResult:
        client = await self._client()
        handler = self.config.progress
        on_progress: ProgressCallback | None = None
        if handler is not None and msg.session_id:

            def on_progress(progress: float, total: float | None, message: str | None) -> None:
                assert handler is not None
                handler(msg.session_id, msg.call_id, self.name, progress, total, message)

        return await client.call_tool(
            msg.name,
            msg.arguments,
            timeout=msg.timeout,
            session=msg.session_id,
            on_progress=on_progress,
            call=msg.call_id,
        )

    async def _on_list_tools(self, msg: ListTools) -> McpToolList:
        client = await self._client()
        if msg.refresh:
            await client.list_tools()
            self._publish(client.tools)
        return McpToolList(self.name, list(client.tools))

    async def _on_ping(self, msg: PingServer) -> McpStatus:
        await (await self._client()).ping()
        return self._status()

    def _on_get_status(self, msg: GetStatus) -> McpStatus:
        return self._status()

    async def _client(self) -> McpClient:
        """The connected client; waits (bounded) while the first connect runs."""
        if self.client is None and not self._parked and self._failure is None:
            with trio.move_on_after(self.config.client.connect_timeout * 2):
                await self._ready.wait()
        if self._failure is not None:
            raise McpConnectionClosed(self.name, self._failure)
        return self._require()

    def _require(self) -> McpClient:
        client = self.client
        if client is None:
            raise McpUnavailable(
                self.name, breaker_retry_in(self.health.state, trio.current_time())
            )
        if client.closed.is_set():
            raise McpConnectionClosed(self.name, client.closed_reason)
        return client

    def _status(self) -> McpStatus:
        client = self.client
        return McpStatus(
            server=self.name,
            state="connected" if client is not None else "parked" if self._parked else "connecting",
            protocol_version=client.protocol_version if client else None,
            server_name=client.server_info.get("name") if client else None,
            tools=len(client.tools) if client else 0,
            failures=self.health.state.failures,
            retry_in=breaker_retry_in(self.health.state, trio.current_time()),
        )


def connection_spec(
    name: str,
    *,
    server: ServerConfig,
    registry: ToolRegistry | None = None,
    events: ActorRef[McpEvent] | None = None,
    config: ConnectionConfig | None = None,
) -> ChildSpec[McpConnectionMsg]:
    """A child spec for the connection to server ``name``, called ``mcp:{name}``.

    Its incarnations share one :class:`ServerHealth`, so the breaker counts failures
    across restarts. Put it under a supervisor of its own (:func:`server_spec` does),
    so that one failing server never restarts another.
    """
    config = config or ConnectionConfig()
    health = ServerHealth(config.breaker)

    def factory() -> McpConnection:
        return McpConnection(
            name, server, health=health, registry=registry, events=events, config=config
        )

    return ChildSpec(
        name=f"mcp:{name}", factory=factory, shutdown=config.client.shutdown_grace * 3 + 1
    )
