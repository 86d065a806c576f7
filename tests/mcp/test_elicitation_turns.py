"""Elicitation as a turn event: the official SDK's server (streamable HTTP, a real
process) asks during a tool call; the turn shows an ``ElicitationRequested`` event, the
host's ``answer_elicitation`` answers it and the tool sees the answer; an unanswered one
is declined after the timeout; a call's progress notifications are turn events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    SessionHost,
    StoreTurns,
    session_elicitor,
    session_progress,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import ChatRequest, ProviderRegistry, ToolMessage, provider_spec
from agcore_actors.mcp import HttpServer, ListTools, ServerConfig, StdioServer, servers_spec
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolExecutor, ToolRegistry
from tests.mcp.servers import CONFIG
from tests.peers.mcp import http_server, stdio_argv

pytestmark = pytest.mark.slow


def model(request: ChatRequest, attempt: int) -> ScriptedReply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return ScriptedReply(text=f"tool said: {last.content}")
    return ScriptedReply(tool_calls=[ScriptedToolCall("srv-ask", {}, id="k1")])


@asynccontextmanager
async def hosted(
    url: str | ServerConfig, approval_timeout: float = 60.0, model: Any = model
) -> AsyncIterator[SessionHost]:
    """A host whose agent's model calls ``model``, with the MCP server at ``url`` (or
    configured by it) as ``srv`` (its elicitations go to the calling session)."""
    server = HttpServer(url) if isinstance(url, str) else url
    registry = ToolRegistry()
    async with ActorSystem() as system:
        config = attrs.evolve(
            CONFIG,
            requests={"elicitation/create": session_elicitor(system)},
            progress=session_progress(system),
        )
        await system.start_supervisor(
            servers_spec({"srv": server}, registry=registry, config=config)
        )
        await system.lookup("mcp:srv").ask(ListTools())
        root = system.root
        llm = await root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(ScriptedProvider(model)))
        )
        tools = await system.spawn(lambda: ToolExecutor(registry), name="tools")
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(tools, registry)
            .store(StoreTurns(store))
            .config(AgentConfig(approval_timeout=approval_timeout))
            .agent(Agent(name="bot"))
            .build()
        )
        async with SessionHost(system, bundle) as host:
            yield host


async def run_turn(
    host: SessionHost, answer: Any, session: str = "s1"
) -> tuple[list[Any], am.TurnResult]:
    events: list[Any] = []
    result: am.TurnResult | None = None
    with trio.fail_after(60):
        async with host.submit(session, "ask me") as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, am.ElicitationRequested) and answer is not None:
                    eid = event.elicitation_id
                    answered = await host.answer_elicitation(session, eid, *answer)
                    assert answered
                if isinstance(event, am.TurnCompleted | am.TurnFailed | am.TurnCancelled):
                    result = event.result
    assert result is not None
    return events, result


async def test_an_elicitation_is_a_turn_event_the_host_answers() -> None:
    with http_server("mcp2") as url:
        async with hosted(url) as host:
            events, result = await run_turn(host, ("accept", {"name": "Ada"}))
    (asked,) = [e for e in events if isinstance(e, am.ElicitationRequested)]
    assert asked.server == "srv" and asked.message == "What is your name?"
    assert "name" in asked.schema
    assert result.status == "completed" and result.text == "tool said: accept Ada"


async def test_an_unanswered_elicitation_is_declined_after_the_timeout() -> None:
    with http_server("mcp2") as url:
        async with hosted(url, approval_timeout=1.0) as host:
            events, result = await run_turn(host, None)
            late = await host.answer_elicitation("s1", "nope", "accept", {"name": "x"})
    assert any(isinstance(e, am.ElicitationRequested) for e in events)
    assert result.text == "tool said: decline"
    assert not late


def chatty(request: ChatRequest, attempt: int) -> ScriptedReply:
    if isinstance(request.messages[-1], ToolMessage):
        return ScriptedReply(text="done")
    return ScriptedReply(tool_calls=[ScriptedToolCall("srv-chatty", {"message": "hi"}, id="p1")])


async def test_progress_of_an_mcp_call_is_a_turn_event() -> None:
    with http_server("mcp2") as url:
        async with hosted(url, model=chatty) as host:
            events, result = await run_turn(host, None)
    progress = [e for e in events if isinstance(e, am.ToolCallProgress)]
    assert result.status == "completed"
    assert [(p.call_id, p.server, p.progress, p.total) for p in progress] == [
        ("p1", "srv", 1.0, 2.0)
    ]
    started = next(i for i, e in enumerate(events) if isinstance(e, am.ToolCallStarted))
    assert started < events.index(progress[0])


@pytest.mark.parametrize("peer", ["mcp2", "mcp1"])
async def test_concurrent_sessions_each_get_their_own_elicitation(peer: str) -> None:
    """Sessions calling the same streamable-HTTP server at once: each call's elicitation
    goes to the session whose call it serves (the response stream it came on says
    which), so each tool gets its own session's answer, never a decline or another's."""
    with http_server(peer) as url:
        await each_session_answers_its_own(url)


async def each_session_answers_its_own(server: str | ServerConfig) -> None:
    """Six sessions' turns at once, three times, each answering its elicitation with its
    own name: every tool sees its own session's answer."""
    sessions = [f"s{i}" for i in range(6)]
    results: dict[str, am.TurnResult] = {}

    async def one(host: SessionHost, session: str) -> None:
        _, results[session] = await run_turn(host, ("accept", {"name": session}), session)

    async with hosted(server) as host:
        for _ in range(3):
            results.clear()
            async with trio.open_nursery() as nursery:
                for session in sessions:
                    nursery.start_soon(one, host, session)
            assert sorted(results) == sessions
            for session, result in results.items():
                assert result.text == f"tool said: accept {session}"


@pytest.mark.parametrize("peer", ["mcp2", "mcp1"])
async def test_concurrent_sessions_on_a_stdio_server_each_get_their_own_elicitation(
    peer: str,
) -> None:
    """The same over stdio, where nothing on the wire relates a server's request to a
    call: the connection runs one session's calls at a time, so each elicitation has one
    possible owner (it was declined when two sessions' calls were in flight)."""
    python, app, mode = stdio_argv(peer)
    await each_session_answers_its_own(StdioServer(command=python, args=[app, mode]))
