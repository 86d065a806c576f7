"""``serve --mcp``: the official SDK's client calls our agent as an MCP tool, in process
and over real streamable HTTP; a session id continues a session; a turn that does not
complete, a bad argument and an unknown tool are tool errors that start nothing; a
client's cancellation cancels the turn (committed as cancelled)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
from mcp import Client

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns, session_approver
from agcore_actors.agent import messages as am
from agcore_actors.llm import ChatRequest, ProviderRegistry, ToolMessage, provider_spec
from agcore_actors.serve._mcp import McpHttpConfig, mcp_server, serve_mcp_http
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall
from agcore_actors.tools import ToolRegistry, tool_executor_spec
from tests.mcp.servers import wait_for
from tests.mcp.test_elicitation_turns import hosted as elicit_hosted
from tests.serve.runtime import add, delete, model


@asynccontextmanager
async def hosted() -> AsyncIterator[SessionHost]:
    async with ActorSystem() as system:
        root = system.root
        registry = ProviderRegistry().register(ScriptedProvider(model))
        llm = await root.start_child(provider_spec("llm", registry=registry))
        tools_registry = ToolRegistry([delete, add])
        tools = await root.start_child(
            tool_executor_spec("tools", registry=tools_registry, approver=session_approver(system))
        )
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        bundle = (
            AgentBuilder()
            .provider(llm)
            .tools(tools, tools_registry)
            .store(StoreTurns(store))
            .agent(Agent(name="bot"))
            .build()
        )
        async with SessionHost(system, bundle) as host:
            yield host


def structured(result: Any) -> dict[str, Any]:
    data = result.structured_content
    assert isinstance(data, dict), result
    return data


async def test_the_sdk_client_lists_and_calls_the_agent_in_process() -> None:
    async with hosted() as host, Client(mcp_server({"bot": host})) as client:
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["bot"]
        assert tools.tools[0].input_schema["required"] == ["text"]
        result = await client.call_tool("bot", {"text": "hi"})
        assert not result.is_error
        assert result.content[0].text == "hello"  # type: ignore[union-attr]
        data = structured(result)
        assert data["status"] == "completed" and data["text"] == "hello"
        again = structured(
            await client.call_tool("bot", {"text": "add", "session": data["session"]})
        )
        assert again["session"] == data["session"] and again["text"] == "done"
        info = await host.ask(data["session"], am.GetSessionInfo())
        assert info.turns == 2


async def test_bad_arguments_and_unknown_tools_are_tool_errors_that_start_nothing() -> None:
    async with hosted() as host, Client(mcp_server({"bot": host})) as client:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("nobody", {"text": "hi"}),
            ("bot", {}),
            ("bot", {"text": 3}),
            ("bot", {"text": "hi", "colour": "red"}),
            ("bot", {"text": "hi", "session": "bad id with spaces/../"}),
        ]
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert result.is_error, (name, arguments)
        assert host.snapshot().activated == 0


async def test_cancelling_the_client_call_cancels_the_turn() -> None:
    async with hosted() as host, Client(mcp_server({"bot": host})) as client:
        with trio.move_on_after(1):
            await client.call_tool("bot", {"text": "hold on", "session": "s1"})
        # The SDK client sends notifications/cancelled when its call is cancelled.
        with trio.fail_after(10):
            while True:
                snapshot = host.snapshot()
                if snapshot.turns_in_flight == 0:
                    break
                await trio.sleep(0.05)


async def test_the_sdk_client_calls_the_agent_over_streamable_http() -> None:
    async with hosted() as host, trio.open_nursery() as nursery:
        url = await nursery.start(serve_mcp_http, {"bot": host}, McpHttpConfig())
        async with Client(url) as client:
            result = await client.call_tool("bot", {"text": "slow please"})
            assert structured(result)["text"] == "one two three four five"
        nursery.cancel_scope.cancel()


def delegating(request: ChatRequest, attempt: int) -> ScriptedReply:
    """Call the other host's agent (``srv-bot``) with a turn that runs until cancelled."""
    if isinstance(request.messages[-1], ToolMessage):
        return ScriptedReply(text="unexpected: the delegated turn ended")
    return ScriptedReply(tool_calls=[ScriptedToolCall("srv-bot", {"text": "hold on"})])


async def test_cancelling_a_turn_cancels_the_mcp_call_and_the_remote_turn() -> None:
    """Our agent calls another host's agent through serve --mcp over HTTP; cancelling our
    turn withdraws the call (notifications/cancelled), which cancels the remote turn."""
    async with hosted() as remote, trio.open_nursery() as nursery:
        url = await nursery.start(serve_mcp_http, {"bot": remote}, McpHttpConfig())
        async with elicit_hosted(url, model=delegating) as host:
            async with host.submit("s1", "delegate") as events:
                async for event in events:
                    if isinstance(event, am.ToolCallStarted):
                        await wait_for(lambda: remote.snapshot().turns_in_flight == 1)
                        assert await host.cancel("s1")
                    if isinstance(event, am.TurnCancelled | am.TurnCompleted | am.TurnFailed):
                        assert isinstance(event, am.TurnCancelled), event
            await wait_for(lambda: remote.snapshot().turns_in_flight == 0)
        nursery.cancel_scope.cancel()
