"""Sampling answered through the session: the official SDK's server (a real process,
over streamable HTTP and stdio) asks the client's model during a tool call; the session
asks its person first (an approval) unless the policy allows or denies outright, and
the session's own provider answers."""

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
    SamplingPolicy,
    SessionHost,
    StoreTurns,
    session_approver,
    session_sampler,
)
from agcore_actors.agent import messages as am
from agcore_actors.agent._sampling import chat_request
from agcore_actors.llm import (
    ChatRequest,
    ProviderRegistry,
    SystemMessage,
    ToolMessage,
    UserMessage,
    provider_spec,
)
from agcore_actors.mcp import HttpServer, ListTools, ServerConfig, StdioServer, servers_spec
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolRegistry, tool_executor_spec
from tests.mcp.servers import CONFIG
from tests.peers.mcp import http_server, stdio_argv

pytestmark = pytest.mark.slow


def model(request: ChatRequest, attempt: int) -> ScriptedReply:
    last = request.messages[-1]
    if isinstance(last, ToolMessage):
        return ScriptedReply(text=f"tool said: {last.content}")
    if isinstance(last, UserMessage) and last.content == "Say hi":  # the server's request
        assert isinstance(request.messages[0], SystemMessage) and request.tools is None
        return ScriptedReply(text="hi from the session's model")
    return ScriptedReply(tool_calls=[ScriptedToolCall("srv-sample", {"prompt": "Say hi"})])


@asynccontextmanager
async def hosted(server: ServerConfig, policy: SamplingPolicy) -> AsyncIterator[SessionHost]:
    registry = ToolRegistry()
    async with ActorSystem() as system:
        root = system.root
        llm = await root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(ScriptedProvider(model)))
        )
        config = attrs.evolve(
            CONFIG, requests={"sampling/createMessage": session_sampler(system, llm, policy=policy)}
        )
        await system.start_supervisor(
            servers_spec({"srv": server}, registry=registry, config=config)
        )
        await system.lookup("mcp:srv").ask(ListTools())
        tools = await root.start_child(
            tool_executor_spec("tools", registry=registry, approver=session_approver(system))
        )
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(tools, registry)
            .store(StoreTurns(store))
            .config(AgentConfig(approval_timeout=30))
            .agent(Agent(name="bot"))
            .build()
        )
        async with SessionHost(system, bundle) as host:
            yield host


async def run_turn(host: SessionHost, allow: bool | None) -> tuple[list[Any], str]:
    events: list[Any] = []
    text = ""
    with trio.fail_after(60):
        async with host.submit("s1", "sample") as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, am.ApprovalRequested):
                    assert allow is not None, "the policy should not ask"
                    assert await host.approve("s1", event.call_id, allow, "not now")
                if isinstance(event, am.TurnCompleted):
                    text = event.result.text
    return events, text


def asked(events: list[Any]) -> list[am.ApprovalRequested]:
    return [e for e in events if isinstance(e, am.ApprovalRequested)]


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_an_approved_sampling_request_is_answered_by_the_sessions_model(
    transport: str,
) -> None:
    with http_server("mcp2") as url:
        server: ServerConfig = HttpServer(url)
        if transport == "stdio":
            python, *args = stdio_argv("mcp2")
            server = StdioServer(python, list(args))
        async with hosted(server, "ask") as host:
            events, text = await run_turn(host, allow=True)
    (approval,) = asked(events)
    assert approval.name == "sampling:srv" and "Say hi" in approval.arguments
    assert text == "tool said: scripted/endTurn: hi from the session's model"


async def test_a_refused_sampling_request_is_a_user_rejection_to_the_server() -> None:
    with http_server("mcp2") as url:
        async with hosted(HttpServer(url), "ask") as host:
            events, text = await run_turn(host, allow=False)
        assert len(asked(events)) == 1
        assert text == "tool said: refused (-1): the user rejected the request: not now"
        async with hosted(HttpServer(url), "deny") as host:
            events, text = await run_turn(host, allow=None)
        assert text.startswith("tool said: refused (-1): sampling is not allowed")
        async with hosted(HttpServer(url), "allow") as host:
            events, text = await run_turn(host, allow=None)
        assert text.endswith("hi from the session's model") and not asked(events)


def test_only_a_text_conversation_becomes_a_provider_request() -> None:
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "systemPrompt": "be brief",
        "maxTokens": 99999,
        "stopSequences": ["END"],
    }
    request = chat_request(params, max_tokens=100)
    assert request.max_tokens == 100 and request.stop == ["END"]
    assert [type(m).__name__ for m in request.messages] == ["SystemMessage", "UserMessage"]
    image = {"role": "user", "content": {"type": "image", "data": "", "mimeType": "image/png"}}
    with pytest.raises(ValueError, match="text content only"):
        chat_request({"messages": [image]}, max_tokens=100)
    with pytest.raises(ValueError):
        chat_request({"messages": []}, max_tokens=100)
