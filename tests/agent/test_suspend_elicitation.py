"""A turn suspended by an MCP server's question (``elicitations = "suspend"``), through
``SessionHost`` and ``serve --http``/``--stdio`` with the official SDK's server (a real
process): the turn ends ``suspended`` with an awaited ``elicitation``; after the host is
restarted on the same store an answer (``action``, ``content``) resumes it — the call
runs again and the server's question gets the stored answer; the same answer again is a
``duplicate``; an answer for a cancelled turn is refused; the transcript stays valid."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx2
import pytest
import trio
import trio.testing

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.agent import (
    Agent,
    AgentBuilder,
    AgentConfig,
    HostConfig,
    SessionHost,
    StaleAnswer,
    StoreTurns,
    session_elicitor,
    transcript_errors,
)
from agcore_actors.agent import messages as am
from agcore_actors.llm import (
    ChatRequest,
    ProviderRegistry,
    ToolMessage,
    UserMessage,
    provider_actor,
)
from agcore_actors.mcp import HttpServer, ListTools, servers_spec
from agcore_actors.serve import HttpConfig, StdioConfig, serve_http, serve_stdio
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolExecutor, ToolRegistry
from tests.agent.stores import transcript
from tests.mcp.servers import CONFIG
from tests.peers.mcp import http_server

pytestmark = pytest.mark.slow

SUSPEND = AgentConfig(elicitations="suspend", turn_timeout=None)


def model(request: ChatRequest, attempt: int) -> ScriptedReply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return ScriptedReply(text=f"tool said: {last.content}")
    turn = str(next(m for m in reversed(request.messages) if isinstance(m, UserMessage)).content)
    return ScriptedReply(tool_calls=[ScriptedToolCall("srv-ask", {}, id=f"{turn}-k")])


@attrs.define
class Rig:
    """One actor system with the MCP server connected and a session store; each
    :meth:`host` is a new host, provider and executor over that store (a restart)."""

    system: ActorSystem
    store: ActorRef[Any]
    registry: ToolRegistry
    generation: int = 0

    @asynccontextmanager
    async def host(self) -> AsyncIterator[SessionHost]:
        self.generation += 1
        g = self.generation
        providers = ProviderRegistry().register(ScriptedProvider(model))
        llm = await self.system.spawn(provider_actor(providers), name=f"llm{g}")
        registry = self.registry
        tools = await self.system.spawn(lambda: ToolExecutor(registry), name=f"tools{g}")
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(tools, registry)
            .store(StoreTurns(self.store))
            .config(SUSPEND)
            .agent(Agent(name="bot"))
            .build()
        )
        try:
            async with SessionHost(
                self.system, bundle, HostConfig(max_sessions=8), name=f"sessions{g}"
            ) as host:
                yield host
        finally:
            await self.system.stop(f"llm{g}")
            await self.system.stop(f"tools{g}")


@asynccontextmanager
async def rigged(url: str) -> AsyncIterator[Rig]:
    registry = ToolRegistry()
    async with ActorSystem() as system:
        config = attrs.evolve(CONFIG, requests={"elicitation/create": session_elicitor(system)})
        await system.start_supervisor(
            servers_spec({"srv": HttpServer(url)}, registry=registry, config=config)
        )
        await system.lookup("mcp:srv").ask(ListTools())
        store = await system.root.start_child(
            session_store_spec("store", backend=InMemorySessions())
        )
        yield Rig(system, store, registry)


async def test_an_elicitation_suspends_the_turn_and_an_answer_after_a_restart_resumes_it() -> None:
    with http_server("mcp2") as url:
        async with rigged(url) as r:
            events: list[am.TurnEvent] = []
            async with r.host() as host:
                with trio.fail_after(60):
                    async with host.submit("s", "t1", turn="t1") as stream:
                        events = [event async for event in stream]
                final = events[-1]
                assert isinstance(final, am.TurnSuspended)
                (waiting,) = final.result.awaiting
                assert waiting.kind == "elicitation" and waiting.call_id == "t1-k.e1"
                assert waiting.tool_call == "t1-k" and waiting.name == "srv-ask"
                assert waiting.message == "What is your name?" and "name" in waiting.schema
                (asked,) = [e for e in events if isinstance(e, am.ElicitationRequested)]
                assert asked.suspends and asked.elicitation_id == "t1-k.e1"
                assert asked.call_id == "t1-k"
                info = await host.ask("s", am.GetSessionInfo())
                assert info.suspended_turn == "t1" and info.awaiting == [waiting]
            async with r.host() as host:  # a restart: only the store is left
                with trio.fail_after(60):
                    got = await host.answer(
                        "s", "t1", "t1-k.e1", action="accept", content={"name": "Ada"}
                    )
                assert got.status == "resumed"
                assert got.result is not None and got.result.text == "tool said: accept Ada"
                again = await host.answer("s", "t1", "t1-k.e1", action="decline")
                assert again.status == "duplicate" and again.allow
                # A second turn suspends; cancelled, its answer is refused.
                with trio.fail_after(60):
                    assert (await host.run("s", "t2", turn="t2")).status == "suspended"
                assert await host.cancel("s")
                with pytest.raises(StaleAnswer) as caught:
                    await host.answer("s", "t2", "t2-k.e1", action="accept", content={})
                assert caught.value.why == "cancelled"
            log = await transcript(r.store, "s")
    assert transcript_errors(log) == []
    results = [m for m in log if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in results if m.tool_call_id == "t1-k"] == [
        ("t1-k", "accept Ada")
    ]


async def test_a_suspended_elicitation_is_answered_through_serve_http_and_stdio() -> None:
    with http_server("mcp2") as url:
        async with rigged(url) as r:
            async with r.host() as host, trio.open_nursery() as nursery:
                config = HttpConfig(port=0)
                base = await nursery.start(serve_http, host, config)
                headers = {"authorization": f"Bearer {config.token}", "accept": "application/json"}
                async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=60) as c:
                    reply = await c.post("/v1/sessions/a/turns", json={"text": "t1", "turn": "t1"})
                    body = reply.json()
                    assert body["status"] == "suspended", body
                    assert body["awaiting"][0]["kind"] == "elicitation"
                    path = "/v1/sessions/a/turns/t1/answers/t1-k.e1"
                    bad = await c.post(path, json={"action": "decline", "content": {"x": 1}})
                    assert bad.status_code == 400
                    answer = {"action": "accept", "content": {"name": "Bo"}}
                    reply = await c.post(path, json=answer)
                    assert reply.status_code == 200, reply.text
                    assert reply.json()["result"]["text"] == "tool said: accept Bo"
                nursery.cancel_scope.cancel()
            async with r.host() as host:
                lines = await _stdio(
                    host,
                    {"session": "b", "text": "t1", "turn": "t1"},
                    {
                        "session": "b",
                        "answer": "t1-k.e1",
                        "turn": "t1",
                        "action": "accept",
                        "content": {"name": "Cy"},
                    },
                )
    suspended = next(x for x in lines if x["event"] == "turn_suspended")
    assert suspended["result"]["awaiting"][0]["call_id"] == "t1-k.e1"
    answered = next(x for x in lines if x["event"] == "answer")
    assert answered["status"] == "resumed"
    assert answered["result"]["text"] == "tool said: accept Cy"


async def _stdio(host: SessionHost, first: dict[str, Any], then: dict[str, Any]) -> list[Any]:
    """Send ``first`` over stdio, wait for its turn's final line, then send ``then`` and
    read to end of input; every line written."""
    to_serve, source = trio.testing.memory_stream_one_way_pair()
    sink, from_serve = trio.testing.memory_stream_one_way_pair()
    lines: list[dict[str, Any]] = []
    buffer = b""

    async def until(done: Any) -> None:
        nonlocal buffer
        while not any(done(x) for x in lines):
            chunk = await from_serve.receive_some()
            assert chunk, "serve ended early"
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            lines.extend(json.loads(raw) for raw in complete)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_stdio, host, source, sink, StdioConfig(signals=False))
        with trio.fail_after(60):
            await to_serve.send_all(json.dumps(first).encode() + b"\n")
            await until(lambda x: x["event"].startswith("turn_") and "status" in x)
            await to_serve.send_all(json.dumps(then).encode() + b"\n")
            await until(lambda x: x["event"] in ("answer", "error"))
        await to_serve.aclose()
    return lines
