"""Images through ``serve --http`` (and ``--stdio``): a turn's image and a tool's image reach a fake
OpenAI-compatible and a fake Anthropic server on 127.0.0.1 in their real wire shapes; a
model that takes no images fails the turn with ``unsupported_content`` before any
request; an image over the limit is ``content_too_large``; bad base64 is a 400; no base64
of an image reaches the turn's events."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import trio

from agcore_actors import ActorSystem
from agcore_actors.agent import Agent, AgentBuilder, AgentConfig, SessionHost, StoreTurns
from agcore_actors.llm import (
    AnthropicConfig,
    AnthropicProvider,
    ContentPart,
    MediaLimits,
    OpenAICompatibleProvider,
    OpenAIConfig,
    Provider,
    ProviderRegistry,
    TextPart,
    UserMessage,
    image_part_of,
    provider_spec,
)
from agcore_actors.serve import HttpConfig, serve_http
from agcore_actors.store import SqliteSessions, session_store_spec
from agcore_actors.tools import ToolRegistry, function_tool, tool_executor_spec
from tests.peers.fault_server import (
    FaultServer,
    Reply,
    anthropic_event,
    chunk,
    sse,
    sse_reply,
)
from tests.serve.helpers import commands, lines, start_serve, stored

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
PNG_B64 = base64.b64encode(PNG).decode()
SHOT = b"\x89PNG\r\n\x1a\n" + bytes(reversed(range(256))) * 8
SHOT_B64 = base64.b64encode(SHOT).decode()
JSON = {"accept": "application/json"}
IMAGE_PART = {"type": "image", "media_type": "image/png", "data": PNG_B64}
IMAGE_TURN: dict[str, Any] = {"text": "what is this?", "parts": [IMAGE_PART]}


@function_tool
async def screenshot() -> list[str | ContentPart]:
    """Take a screenshot."""
    return ["the screen", image_part_of(SHOT, "image/png")]


@asynccontextmanager
async def served(
    provider: Provider, db: Path, config: AgentConfig | None = None
) -> AsyncIterator[httpx2.AsyncClient]:
    """serve --http in this process over ``provider``, a SQLite store and a tool."""
    async with ActorSystem() as system:
        root = system.root
        llm = await root.start_child(
            provider_spec("llm", registry=ProviderRegistry().register(provider))
        )
        registry = ToolRegistry([screenshot])
        tools = await root.start_child(tool_executor_spec("tools", registry=registry))
        store = await root.start_child(session_store_spec("store", backend=SqliteSessions(str(db))))
        builder = AgentBuilder().provider(llm).tools(tools, registry).store(StoreTurns(store))
        if config is not None:
            builder = builder.config(config)
        bundle = builder.agent(Agent(name="bot")).build()
        async with SessionHost(system, bundle) as host, trio.open_nursery() as nursery:
            stop = trio.Event()
            http = HttpConfig(port=0, max_body=1 << 22)
            url = await nursery.start(_serve, host, http, stop)
            headers = {"authorization": f"Bearer {http.token}"}
            async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=30) as client:
                yield client
            stop.set()


async def _serve(
    host: SessionHost,
    config: HttpConfig,
    stop: trio.Event,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    await serve_http(host, config, shutdown=stop.wait, task_status=task_status)


# -- the fake servers' replies (streamed: serve submits) ---------------------------------


def openai_text(text: str) -> Reply:
    return sse_reply(*sse(chunk({"role": "assistant", "content": text}), chunk({}, "stop")))


def openai_call() -> Reply:
    call = {"index": 0, "id": "c1", "type": "function"}
    call["function"] = {"name": "screenshot", "arguments": "{}"}
    return sse_reply(
        *sse(chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls"))
    )


def _anthropic(block: dict[str, Any], delta: dict[str, Any] | None, stop: str) -> Reply:
    usage = {"input_tokens": 5, "output_tokens": 1}
    first = {"id": "msg_1", "model": "c", "content": [], "usage": usage}
    events = [
        anthropic_event("message_start", {"message": first}),
        anthropic_event("content_block_start", {"index": 0, "content_block": block}),
    ]
    if delta is not None:
        events.append(anthropic_event("content_block_delta", {"index": 0, "delta": delta}))
    events += [
        anthropic_event("content_block_stop", {"index": 0}),
        anthropic_event("message_delta", {"delta": {"stop_reason": stop}, "usage": usage}),
        anthropic_event("message_stop", {}),
    ]
    return sse_reply(*events)


def anthropic_text(text: str) -> Reply:
    block = {"type": "text", "text": ""}
    return _anthropic(block, {"type": "text_delta", "text": text}, "end_turn")


def anthropic_call() -> Reply:
    block = {"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}
    return _anthropic(block, None, "tool_use")


def openai(url: str, **kw: Any) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        OpenAIConfig(name="oa", base_url=url, api_key="sk-test-1", model="m", **kw)
    )


def anthropic(fault_server: FaultServer, url: str) -> AnthropicProvider:
    root = fault_server.root(url)
    return AnthropicProvider(AnthropicConfig(base_url=root, api_key="sk-ant-test-1", model="c"))


async def turn(client: httpx2.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    r = await client.post("/v1/sessions/s/turns", json=body, headers=JSON)
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


# -- a user's image ---------------------------------------------------------------------


async def test_an_image_turn_reaches_an_openai_server_as_an_image_url_part(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(openai_text("a test pattern"))
    async with served(openai(url), tmp_path / "s.db") as client:
        result = await turn(client, IMAGE_TURN)
    assert (result["status"], result["text"]) == ("completed", "a test pattern")
    assert scenario.requests[0].body["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_B64}"}},
        ],
    }


async def test_an_image_turn_reaches_an_anthropic_server_as_a_base64_image_block(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(anthropic_text("a test pattern"))
    async with served(anthropic(fault_server, url), tmp_path / "s.db") as client:
        result = await turn(client, IMAGE_TURN)
    assert (result["status"], result["text"]) == ("completed", "a test pattern")
    assert scenario.requests[0].body["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is this?"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64},
            },
        ],
    }


async def test_an_image_by_url_reaches_both_servers_as_a_url(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    body = {"text": "and this?", "parts": [{"type": "image", "url": "https://x.test/a.png"}]}
    url, oa = fault_server.script(openai_text("ok"))
    async with served(openai(url), tmp_path / "a.db") as client:
        await turn(client, body)
    url, an = fault_server.script(anthropic_text("ok"))
    async with served(anthropic(fault_server, url), tmp_path / "b.db") as client:
        await turn(client, body)
    assert oa.requests[0].body["messages"][-1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "https://x.test/a.png"},
    }
    assert an.requests[0].body["messages"][-1]["content"][1] == {
        "type": "image",
        "source": {"type": "url", "url": "https://x.test/a.png"},
    }


# -- a tool's image ---------------------------------------------------------------------


async def test_a_tools_image_reaches_an_openai_server_in_a_user_message_after_the_results(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(openai_call(), openai_text("I see the screen"))
    async with served(openai(url), tmp_path / "s.db") as client:
        async with client.stream("POST", "/v1/sessions/s/turns", json={"text": "look"}) as r:
            raw = "".join([piece async for piece in r.aiter_text()])
        observed = (await client.get("/observer/state")).text
    assert "I see the screen" in raw and SHOT_B64 not in raw  # no base64 in the events
    assert '"tool_calls":1' in observed and SHOT_B64[:64] not in observed
    finished = [
        json.loads(line[6:])
        for line in raw.splitlines()
        if line.startswith("data: ") and '"tool_call_finished"' in line
    ]
    assert finished[0]["content"] == "the screen"
    assert finished[0]["media"][0].startswith("[image image/png 2056 bytes sha256:")
    messages = scenario.requests[1].body["messages"]
    assert messages[-2:] == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [
                {"type": "text", "text": "the screen"},
                {"type": "text", "text": "(attached below)"},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{SHOT_B64}"}}
            ],
        },
    ]


async def test_a_tools_image_reaches_an_anthropic_server_inside_its_tool_result(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(anthropic_call(), anthropic_text("I see the screen"))
    async with served(anthropic(fault_server, url), tmp_path / "s.db") as client:
        result = await turn(client, {"text": "look"})
    assert result["text"] == "I see the screen"
    assert scenario.requests[1].body["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": [
                    {"type": "text", "text": "the screen"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": SHOT_B64},
                    },
                ],
            }
        ],
    }


async def test_the_stored_transcript_keeps_the_images_for_the_next_turn(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    """The second turn's prompt (history loaded from the store) still carries both."""
    url, scenario = fault_server.script(openai_call(), openai_text("one"), openai_text("two"))
    async with served(openai(url), tmp_path / "s.db") as client:
        await turn(client, IMAGE_TURN)
        await turn(client, {"text": "and now?"})
    sent = json.dumps(scenario.requests[2].body)
    assert PNG_B64 in sent and SHOT_B64 in sent


# -- refusals -----------------------------------------------------------------------------


async def test_a_model_that_takes_no_images_fails_the_turn_before_any_request(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(openai_text("garbled"))
    provider = openai(url, input_media=frozenset())  # the local model's setting
    async with served(provider, tmp_path / "s.db") as client:
        result = await turn(client, IMAGE_TURN)
    assert (result["status"], result["error_kind"]) == ("failed", "unsupported_content")
    assert "image" in result["error"]
    assert scenario.requests == []


async def test_an_image_over_the_limit_is_content_too_large_and_nothing_is_sent(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    url, scenario = fault_server.script(openai_text("no"))
    config = AgentConfig(media_limits=MediaLimits(max_part_bytes=1000))
    async with served(openai(url), tmp_path / "s.db", config) as client:
        result = await turn(client, IMAGE_TURN)
        stored = await client.get("/v1/sessions/s")
    assert (result["status"], result["error_kind"]) == ("failed", "content_too_large")
    assert scenario.requests == [] and stored.status_code == 404  # nothing begun


async def test_bad_parts_are_a_400_naming_the_part(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    url, _ = fault_server.script(openai_text("no"))
    async with served(openai(url), tmp_path / "s.db") as client:
        bad = {"text": "x", "parts": [{"type": "image", "media_type": "image/png", "data": "@@"}]}
        r = await client.post("/v1/sessions/s/turns", json=bad, headers=JSON)
        assert r.status_code == 400 and "parts[0]" in r.text
        odd = {"text": "x", "parts": [{"type": "video", "data": "AA=="}]}
        r = await client.post("/v1/sessions/s/turns", json=odd, headers=JSON)
        assert r.status_code == 400 and "parts" in r.text


# -- serve --stdio --------------------------------------------------------------------------


def test_stdio_takes_an_image_line_up_to_max_body_and_stores_it(
    fault_server: FaultServer, tmp_path: Path
) -> None:
    """``serve --stdio`` as a child process: a turn line with an image reaches the fake
    OpenAI server and the store; with ``--max-body`` under its size, it is refused."""
    big = {"session": "b", **IMAGE_TURN, "parts": [{**IMAGE_PART, "data": PNG_B64 * 4}]}
    url, scenario = fault_server.script(openai_text("a test pattern"))
    db = tmp_path / "s.db"
    process = start_serve(url, "--stdio", "--store", str(db), "--max-body", "6000")
    out, err = process.communicate(commands({"session": "a", **IMAGE_TURN}, big), timeout=120)
    assert process.returncode == 0, err.decode()
    parsed = lines(out)
    assert [line["event"] for line in parsed if line.get("session") == "a"][-1] == "turn_completed"
    (refused,) = [line for line in parsed if line["event"] == "error"]
    assert "longer than 6000" in refused["error"]
    assert len(scenario.requests) == 1
    assert scenario.requests[0].body["messages"][-1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG_B64}"},
    }
    (snapshot,) = stored(db, ["a"]).values()
    assert snapshot.entries[0].message == UserMessage(
        [TextPart("what is this?"), image_part_of(PNG, "image/png")]
    )
