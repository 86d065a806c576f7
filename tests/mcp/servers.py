"""Running MCP servers under real actors, for the connection tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import trio

from agcore_actors import Actor, ActorRef, ActorSystem
from agcore_actors.actor import ActorError, Backoff
from agcore_actors.mcp import (
    ClientOptions,
    ConnectionConfig,
    ListTools,
    McpConnectionClosed,
    McpEvent,
    McpUnavailable,
    ServerConfig,
    servers_spec,
)
from agcore_actors.tools import ExecuteTools, ToolCall, ToolExecutor, ToolRegistry

CONFIG = ConnectionConfig(
    client=ClientOptions(request_timeout=20.0, shutdown_grace=2.0),
    backoff=Backoff(initial=0.05, cap=0.2, jitter=0.0),
)


class EventSink(Actor[McpEvent]):
    def __init__(self, seen: list[McpEvent]) -> None:
        self.seen = seen

    async def handle(self, msg: McpEvent) -> None:
        self.seen.append(msg)


@asynccontextmanager
async def running(
    servers: dict[str, ServerConfig], config: ConnectionConfig | None = None
) -> AsyncIterator[tuple[ActorSystem, ToolRegistry, ActorRef[Any], list[McpEvent]]]:
    registry = ToolRegistry()
    seen: list[McpEvent] = []
    async with ActorSystem(strict=True, seed=0) as system:
        sink = await system.spawn(lambda: EventSink(seen), name="events")
        await system.start_supervisor(
            servers_spec(servers, registry=registry, events=sink, config=config or CONFIG)
        )
        executor = await system.spawn(lambda: ToolExecutor(registry), name="tools")
        for name in servers:  # wait until each server is connected or parked
            with contextlib.suppress(McpUnavailable, McpConnectionClosed, ActorError):
                await system.lookup(f"mcp:{name}").ask(ListTools())
        yield system, registry, executor, seen


async def run_tools(executor: ActorRef[Any], *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    batch = [
        ToolCall(id=f"c{i}", name=n, arguments=msgspec.json.encode(a).decode())
        for i, (n, a) in enumerate(calls)
    ]
    return list((await executor.ask(ExecuteTools(batch_id="b", calls=batch))).results)


async def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    # Polling: the state lives in a real server process, no event to wait on.
    with trio.fail_after(timeout):
        while not predicate():  # noqa: ASYNC110
            await trio.sleep(0.05)
