"""An in-process runtime for the HTTP tests: a scripted model (``slow ...`` answers in
pieces over ~0.5 s, ``hold ...`` runs until cancelled, ``delete ...`` calls a tool that
needs approval, ``fail ...`` fails with an authentication error, anything else answers
at once), a real ToolExecutor asking the session for approvals, the in-memory session
store, a SessionHost, and :func:`serve_http` on a free port with a fresh token
(``Served.client()`` is an httpx2 client that sends it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx2
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns, session_approver
from agcore_actors.llm import (
    AssistantMessage,
    AuthenticationError,
    ChatRequest,
    FunctionCall,
    ProviderRegistry,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    provider_spec,
)
from agcore_actors.serve import HttpConfig, serve_http
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolRegistry, function_tool, tool_executor_spec


@function_tool(requires_approval=True)
async def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@function_tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


USAGE = Usage(input_tokens=20, output_tokens=5, cache_read_tokens=4)


def model(request: ChatRequest, attempt: int) -> ScriptedReply | AssistantMessage:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return ScriptedReply(text="done", usage=USAGE)
    text = last.content if isinstance(last, UserMessage) else ""
    if isinstance(text, str) and text.startswith("delete"):
        call = ToolCall("d1", FunctionCall("delete", '{"path": "/x"}'))
        return AssistantMessage(None, tool_calls=[call])
    if isinstance(text, str) and text.startswith("add"):
        adding = ScriptedToolCall("add", {"a": 2, "b": 3}, id="a1")
        return ScriptedReply(tool_calls=[adding], usage=USAGE)
    if isinstance(text, str) and text.startswith("hold"):
        return ScriptedReply(text=["held"], stall_after=0)  # runs until cancelled
    if isinstance(text, str) and text.startswith("fail"):
        return ScriptedReply(fail_after=0, error=AuthenticationError("scripted", 401, "bad key"))
    if isinstance(text, str) and text.startswith("slow"):
        return ScriptedReply(text=["one ", "two ", "three ", "four ", "five"], gap=0.1)
    return ScriptedReply(text="hello")


@attrs.define
class Served:
    url: str
    host: SessionHost
    stop: trio.Event
    config: HttpConfig

    @property
    def headers(self) -> dict[str, str]:
        """The server's own token as a header (every scope)."""
        return {"authorization": f"Bearer {self.config.token}"}

    def client(self, **kwargs: Any) -> httpx2.AsyncClient:
        """A client of the server that sends its token."""
        headers = {**self.headers, **kwargs.pop("headers", {})}
        return httpx2.AsyncClient(base_url=self.url, headers=headers, **kwargs)


@asynccontextmanager
async def served(
    tracer: object = None, forward: object = None, **config: object
) -> AsyncIterator[Served]:
    async with ActorSystem() as system:
        root = system.root
        llm = await root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(ScriptedProvider(model)))
        )
        registry = ToolRegistry([delete, add])
        tools = await root.start_child(
            tool_executor_spec("tools", registry=registry, approver=session_approver(system))
        )
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(tools, registry)
            .store(StoreTurns(store))
            .agent(Agent(name="bot"))
            .build()
        )
        async with SessionHost(system, bundle) as host, trio.open_nursery() as nursery:
            stop = trio.Event()
            http = HttpConfig(port=0, **config)  # type: ignore[arg-type]
            url = await nursery.start(_serve, host, http, stop, tracer, forward)
            yield Served(url, host, stop, http)
            stop.set()


async def _serve(
    host: SessionHost,
    config: HttpConfig,
    stop: trio.Event,
    tracer: object,
    forward: object,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    await serve_http(
        host, config, shutdown=stop.wait, tracer=tracer, forward=forward, task_status=task_status
    )
