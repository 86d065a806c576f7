"""McpConnection: one actor per MCP server, supervised (protocol: :mod:`.messages`).

Lifecycle of an incarnation:

- **connect** (``on_start``): open the transport, ``initialize``, list the
  tools and publish them in the registry as ``{server}{sep}{tool}``. A
  failure crashes the incarnation, and the supervisor restarts it with
  backoff (:func:`server_spec`).
- **connected**: calls go to the server concurrently. When the server goes
  away (process exit, EOF, HTTP session lost), every waiting call fails
  with :class:`McpConnectionClosed`, then the incarnation crashes so the
  supervisor reconnects; the tools are listed again after a restart and
  whenever the server sends ``notifications/tools/list_changed``.
- **parked**: after ``threshold`` consecutive failures the circuit breaker
  opens (:mod:`._breaker`); the incarnation then starts parked, answers
  :class:`McpUnavailable` (its tools stay registered and say so), and
  probes the server when the breaker allows; a good probe connects.

The breaker state outlives incarnations in a :class:`ServerHealth` owned by
the spec. Each server has its own supervisor: one failing server never
restarts or blocks another.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import attrs
import trio

from ..actor import (
    Actor,
    ActorError,
    ActorRef,
    ActorStopped,
    Backoff,
    ChildSpec,
    Intensity,
    MailboxFull,
    SupervisorSpec,
)
from ..actor.policy import (
    BreakerState,
    CircuitBreaker,
    breaker_failure,
    breaker_retry_in,
    breaker_success,
)
from ..tools import ExecutionFailed, InvalidArguments, ToolContext, ToolError, ToolRegistry
from ._client import ClientOptions, McpClient, open_client
from ._config import ServerConfig
from ._errors import McpConnectionClosed, McpError, McpMethodNotFound, McpUnavailable
from .messages import (
    CallTool,
    GetStatus,
    ListTools,
    McpConnectionMsg,
    McpEvent,
    McpStatus,
    McpToolInfo,
    McpToolList,
    McpToolResult,
    PingServer,
)

log = logging.getLogger("agcore_actors.mcp")

DEFAULT_SEPARATOR = "-"

#: An MCP server's breaker: parked after 3 consecutive failures for 5 s, doubling up
#: to 5 min; a connection that stayed up 30 s clears the count.
DEFAULT_MCP_BREAKER = CircuitBreaker(threshold=3, healthy_after=30.0)


def prefixed_name(server: str, tool: str, separator: str = DEFAULT_SEPARATOR) -> str:
    """The registry name of an MCP tool (seed 002: ``{server}-{tool}``)."""
    return f"{server}{separator}{tool}"


@attrs.define
class ServerHealth:
    """Breaker state shared by the incarnations of one server's connection."""

    config: CircuitBreaker = attrs.field(factory=lambda: DEFAULT_MCP_BREAKER)
    state: BreakerState = attrs.field(factory=BreakerState)


@attrs.frozen
class McpToolAdapter:
    """An MCP tool in a :class:`ToolRegistry`; calls go through the connection actor.

    ``name`` is the prefixed registry name, ``remote_name`` the server's own
    name for the tool (the exact reverse mapping).
    """

    name: str
    remote_name: str
    server: str
    description: str
    parameters: dict[str, Any]
    connection: ActorRef[McpConnectionMsg]
    required_permissions: tuple[str, ...] = ()
    requires_approval: bool = False
    timeout: float | None = None

    async def call(self, args: Any, ctx: ToolContext) -> Any:
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise InvalidArguments(self.name, "MCP tool arguments must be a JSON object")
        try:
            result = await self.connection.ask(CallTool(self.remote_name, args))
        except ActorError as exc:  # stopped or crashed mid-call: the server went away
            raise McpConnectionClosed(self.server, str(exc)) from exc
        if result.is_error:  # Δ seed: an error result with text is an error
            raise ExecutionFailed(self.name, result.text or "the MCP tool reported an error")
        if result.text or result.structured is None:
            return result.text
        return result.structured


@attrs.frozen
class ConnectionOptions:
    client: ClientOptions = attrs.field(factory=ClientOptions)
    separator: str = DEFAULT_SEPARATOR
    #: How long a dying connection lets waiting calls collect their error.
    drain_timeout: float = 1.0


class McpConnection(Actor[McpConnectionMsg]):
    max_concurrency: ClassVar[int] = 32
    expected_errors = (ToolError,)

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        *,
        health: ServerHealth | None = None,
        registry: ToolRegistry | None = None,
        events: ActorRef[McpEvent] | None = None,
        options: ConnectionOptions | None = None,
    ) -> None:
        self.name = name
        self.config = config
        self.health = health or ServerHealth()
        self.registry = registry
        self.events = events
        self.options = options or ConnectionOptions()
        self.client: McpClient | None = None
        self._active = 0
        self._idle = trio.Event()
        self._ready = trio.Event()
        self._parked = False

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
            raise McpConnectionClosed(self.name, f"connect failed: {exc}") from exc

    async def _connect(self) -> None:
        with trio.fail_after(self.options.client.connect_timeout * 2):
            self.client = await self.ctx.nursery.start(self._serve_client)
        self.health.state = breaker_success(
            self.health.config, self.health.state, trio.current_time()
        )
        self._parked = False
        self._ready.set()

    async def _serve_client(self, task_status: trio.TaskStatus[McpClient]) -> None:
        async with open_client(
            self.name, self.config, options=self.options.client, on_event=self._on_event
        ) as client:
            try:
                await client.list_tools()
            except McpMethodNotFound:  # a server without tools (resources only, say)
                client.tools = []
            self._publish(client.tools)
            task_status.started(client)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._follow_tool_changes, client)
                await client.closed.wait()
                nursery.cancel_scope.cancel()
            # Let the calls that just failed hand their typed error to their askers
            # before the crash replaces it with ActorCrashed.
            with trio.move_on_after(self.options.drain_timeout):
                if self._active:
                    self._idle = trio.Event()
                    await self._idle.wait()
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
        if self.registry is None:
            return
        adapters = [
            McpToolAdapter(
                name=prefixed_name(self.name, t.name, self.options.separator),
                remote_name=t.name,
                server=self.name,
                description=t.description,
                parameters=t.input_schema,
                connection=self.ctx.self_ref,
            )
            for t in tools
        ]
        skipped = self.registry.replace_group(f"mcp:{self.name}", adapters)
        for n in skipped:
            log.warning("MCP server %r: tool name %r is taken; not registered", self.name, n)

    def _on_event(self, event: McpEvent) -> None:
        if self.events is None:
            return
        try:
            self.events.tell_nowait(event)
        except (MailboxFull, ActorStopped):
            log.debug("MCP server %r: event %s dropped", self.name, event.method)

    # -- requests ------------------------------------------------------------------

    async def _client(self) -> McpClient:
        """The connected client; waits (bounded) while the first connect runs."""
        if self.client is None and not self._parked:
            with trio.move_on_after(self.options.client.connect_timeout * 2):
                await self._ready.wait()
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

    async def handle(self, msg: McpConnectionMsg) -> Any:
        self._active += 1
        try:
            match msg:
                case CallTool(name=name, arguments=arguments, timeout=timeout):
                    result: McpToolResult = await (await self._client()).call_tool(
                        name, arguments, timeout=timeout
                    )
                    return result
                case ListTools(refresh=refresh):
                    client = await self._client()
                    if refresh:
                        await client.list_tools()
                        self._publish(client.tools)
                    return McpToolList(self.name, list(client.tools))
                case PingServer():
                    await (await self._client()).ping()
                    return self._status()
                case GetStatus():
                    return self._status()
        finally:
            self._active -= 1
            if not self._active:
                self._idle.set()


def server_spec(
    name: str,
    config: ServerConfig,
    *,
    registry: ToolRegistry | None = None,
    events: ActorRef[McpEvent] | None = None,
    options: ConnectionOptions | None = None,
    breaker: CircuitBreaker | None = None,
    backoff: Backoff | None = None,
) -> SupervisorSpec:
    """A supervisor of its own for the connection to server ``name``.

    The connection actor is called ``mcp:{name}``. Its supervisor restarts it
    with ``backoff``; the breaker parks it before the supervisor's intensity
    could give up (``threshold + 2`` restarts are allowed per breaker period).
    """
    health = ServerHealth(breaker or DEFAULT_MCP_BREAKER)
    child: ChildSpec[McpConnectionMsg] = ChildSpec(
        f"mcp:{name}",
        lambda: McpConnection(
            name, config, health=health, registry=registry, events=events, options=options
        ),
        shutdown=(options or ConnectionOptions()).client.shutdown_grace * 3 + 1,
    )
    return SupervisorSpec(
        f"mcp-supervisor:{name}",
        children=[child],
        intensity=Intensity(
            max_restarts=health.config.threshold + 2, period=max(health.config.backoff.initial, 1e-3)
        ),
        backoff=backoff or Backoff(initial=0.2, cap=5.0),
    )


def servers_spec(
    servers: dict[str, ServerConfig],
    *,
    registry: ToolRegistry | None = None,
    events: ActorRef[McpEvent] | None = None,
    options: ConnectionOptions | None = None,
    breaker: CircuitBreaker | None = None,
    backoff: Backoff | None = None,
    name: str = "mcp",
) -> SupervisorSpec:
    """One supervisor holding a :func:`server_spec` per configured server."""
    return SupervisorSpec(
        name,
        children=[
            server_spec(
                n,
                c,
                registry=registry,
                events=events,
                options=options,
                breaker=breaker,
                backoff=backoff,
            )
            for n, c in servers.items()
        ],
        intensity=Intensity(max_restarts=max(10, 3 * len(servers)), period=60.0),
    )
