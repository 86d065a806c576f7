"""``serve --mcp`` beyond tools, over real streamable HTTP with the official SDK's
client: stored sessions are resources (listed, read as transcripts, completed by id,
subscribed to), and a client that sets a log level hears of each turn at that level."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
import trio
from mcp import Client

from agcore_actors import ActorSystem
from agcore_actors.actor import ActorRef
from agcore_actors.agent import Agent, AgentBuilder, SessionHost, StoreTurns
from agcore_actors.llm import ProviderRegistry, provider_spec
from agcore_actors.mcp import HttpServer, McpEvent, McpServerError, open_client
from agcore_actors.mcp import messages as mm
from agcore_actors.serve._mcp import McpHttpConfig, serve_mcp_http
from agcore_actors.store import InMemorySessions, session_store_spec
from agcore_actors.testing import ScriptedProvider
from tests.mcp.servers import running, wait_for
from tests.serve.runtime import model


@asynccontextmanager
async def serving() -> AsyncIterator[tuple[str, ActorRef[Any]]]:
    """``serve --mcp --http``'s server over a host of one agent ``bot``; its URL and store."""
    async with ActorSystem() as system:
        root = system.root
        registry = ProviderRegistry().register(ScriptedProvider(model))
        llm = await root.start_child(provider_spec("llm", registry=registry))
        store = await root.start_child(session_store_spec("store", backend=InMemorySessions()))
        bundle = AgentBuilder().provider(llm).store(StoreTurns(store)).agent(Agent(name="bot"))
        async with SessionHost(system, bundle.build()) as host, trio.open_nursery() as nursery:
            serve = functools.partial(serve_mcp_http, {"bot": host}, McpHttpConfig(), store=store)
            url = await nursery.start(serve)
            yield url, store
            nursery.cancel_scope.cancel()


async def test_stored_sessions_are_resources_read_as_transcripts() -> None:
    async with serving() as (url, _), Client(url) as client:
        called = await client.call_tool("bot", {"text": "hi"})
        session = called.structured_content["session"]
        listed = await client.list_resources()
        assert [r.uri for r in listed.resources] == [f"agcore://sessions/{session}"]
        read = await client.read_resource(f"agcore://sessions/{session}")
        text = read.contents[0].text  # type: ignore[union-attr]
        assert "**user:** hi" in text and "**assistant:** hello" in text
        (template,) = (await client.list_resource_templates()).resource_templates
        assert template.uri_template == "agcore://sessions/{session}"
        ref = types.ResourceTemplateReference(type="ref/resource", uri=template.uri_template)
        completed = await client.complete(ref, {"name": "session", "value": session[:6]})
        assert completed.completion.values == [session]
        assert (
            await client.complete(ref, {"name": "session", "value": "zz"})
        ).completion.values == []
        for uri, code in (("agcore://sessions/nobody", -32002), ("test://static-text", -32602)):
            with pytest.raises(Exception) as info:
                await client.read_resource(uri)
            assert getattr(info.value, "code", None) == code, info.value
        prompt = types.PromptReference(type="ref/prompt", name="anything")
        with pytest.raises(Exception) as info:
            await client.complete(prompt, {"name": "a", "value": ""})
        assert getattr(info.value, "code", None) == -32602


async def test_a_stored_session_is_a_prompt_of_its_conversation() -> None:
    async with serving() as (url, _), Client(url) as client:
        first = await client.call_tool("bot", {"text": "hi"})
        session = first.structured_content["session"]
        await client.call_tool("bot", {"text": "and again", "session": session})
        (prompt,) = (await client.list_prompts()).prompts
        assert prompt.name == "session" and prompt.description
        assert [(a.name, a.required) for a in prompt.arguments or []] == [("session", True)]
        got = await client.get_prompt("session", {"session": session})
        said = [(m.role, m.content.text) for m in got.messages]  # type: ignore[union-attr]
        assert said == [
            ("user", "hi"),
            ("assistant", "hello"),
            ("user", "and again"),
            ("assistant", "hello"),
        ]
        ref = types.PromptReference(type="ref/prompt", name="session")
        completed = await client.complete(ref, {"name": "session", "value": session[:6]})
        assert completed.completion.values == [session]
        for name, arguments in (("session", {"session": "nobody"}), ("other", {}), ("session", {})):
            with pytest.raises(Exception) as info:
                await client.get_prompt(name, arguments)
            assert getattr(info.value, "code", None) == -32602, info.value


async def test_a_log_level_and_a_subscription_tell_the_client_of_turns() -> None:
    """With our own client (the initialize handshake of 2025-11-25: the 2026-07-28 spec
    has neither logging/setLevel nor resources/subscribe)."""
    seen: list[McpEvent] = []
    async with (
        serving() as (url, _),
        open_client("us", HttpServer(url), on_event=seen.append) as client,
    ):
        first = (await client.call_tool("bot", {"text": "hi"})).structured
        assert isinstance(first, dict)
        session = first["session"]
        uri = f"agcore://sessions/{session}"

        def logs() -> list[Any]:
            return [e.params for e in seen if e.method == "notifications/message"]

        def updates() -> list[Any]:
            return [e.params["uri"] for e in seen if e.method == "notifications/resources/updated"]

        assert logs() == []  # no level set: no log
        await client.request("logging/setLevel", {"level": "info"})
        await client.subscribe_resource(uri)
        await client.call_tool("bot", {"text": "hi", "session": session})
        await wait_for(lambda: len(logs()) == 1 and updates() == [uri])
        (log,) = logs()
        assert log["level"] == "info" and log["logger"] == "agcore"
        assert log["data"]["session"] == session and log["data"]["status"] == "completed"
        await client.request("logging/setLevel", {"level": "error"})  # above "completed"
        await client.unsubscribe_resource(uri)
        await client.call_tool("bot", {"text": "hi", "session": session})
        await client.ping()  # what the server sent before this answer has arrived
        assert len(logs()) == 1 and updates() == [uri]
        with pytest.raises(McpServerError) as info:
            await client.subscribe_resource("test://watched-resource")
        assert info.value.code == -32602


async def test_a_subscription_through_the_connection_actor_reaches_its_event_sink() -> None:
    async with (
        serving() as (url, _),
        running({"srv": HttpServer(url)}) as (system, _, _, seen),
    ):
        connection = system.lookup("mcp:srv")
        first = await connection.ask(mm.CallTool(name="bot", arguments={"text": "hi"}))
        assert isinstance(first.structured, dict)
        uri = f"agcore://sessions/{first.structured['session']}"
        took = await connection.ask(mm.SubscribeResource(uri))
        assert took == mm.McpSubscription(server="srv", uri=uri, subscribed=True)

        def updates() -> list[Any]:
            return [e.params["uri"] for e in seen if e.method == "notifications/resources/updated"]

        more = {"text": "again", "session": first.structured["session"]}
        await connection.ask(mm.CallTool(name="bot", arguments=more))
        await wait_for(lambda: updates() == [uri])
        await connection.ask(mm.SubscribeResource(uri, subscribe=False))
        await connection.ask(mm.CallTool(name="bot", arguments=more))
        await connection.ask(mm.PingServer())  # what the server sent before has arrived
        assert updates() == [uri]
        with pytest.raises(McpServerError) as info:
            await connection.ask(mm.SubscribeResource("test://watched-resource"))
        assert info.value.code == -32602
