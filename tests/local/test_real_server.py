"""The real embedded model: xllamacpp with Qwen2.5-Coder-0.5B and our chat template.

HTTP behaviour is checked against the session's shared server (the ``local_model``
fixture); the actor's life cycle against its own servers. Structure is asserted, never
exact text.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import trio

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.llm import (
    Chat,
    ChatRequest,
    ChatStream,
    Content,
    LlmError,
    OpenAICompatibleProvider,
    OpenAIConfig,
    ProviderRegistry,
    RetryConfig,
    Timeouts,
    provider_actor,
    user,
)
from agcore_actors.local import CatalogModel, GgufFile, local_model_spec, qwen_tool_template
from agcore_actors.local.messages import Endpoint, GetEndpoint, LocalModelMsg
from tests.peers.local_model import small_model_config

pytestmark = pytest.mark.slow

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
        },
    },
}
LOCAL_TIMEOUTS = Timeouts(attempt=60, idle=60, call=120)
ASK_WEATHER: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris?"}]


def body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"messages": messages, "temperature": 0, "max_tokens": 128, **extra}


@pytest.fixture
async def client(local_model: Endpoint) -> AsyncIterator[httpx2.AsyncClient]:
    headers = {**local_model.headers, "Authorization": f"Bearer {local_model.api_key}"}
    async with httpx2.AsyncClient(
        base_url=local_model.base_url, headers=headers, timeout=120, trust_env=False
    ) as client:
        yield client


async def sse(response: httpx2.Response) -> list[dict[str, Any]]:
    """The JSON events of a whole stream, which must end with ``[DONE]``."""
    lines = [line async for line in response.aiter_lines() if line.startswith("data: ")]
    assert lines and lines[-1] == "data: [DONE]", lines[-3:]
    return [json.loads(line[6:]) for line in lines[:-1]]


async def test_a_chat_completion_answers_in_text(client: httpx2.AsyncClient) -> None:
    response = await client.post(
        "/chat/completions", json=body([{"role": "user", "content": "Say hi."}])
    )
    assert response.status_code == 200
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert choice["message"]["content"].strip()
    assert response.json()["usage"]["completion_tokens"] > 0


async def test_the_v1_routes_need_the_api_key_and_health_does_not(local_model: Endpoint) -> None:
    async with httpx2.AsyncClient(trust_env=False) as anonymous:
        refused = await anonymous.post(
            local_model.base_url + "/chat/completions", json=body(ASK_WEATHER)
        )
        health = await anonymous.get(local_model.base_url.removesuffix("/v1") + "/health")
    assert refused.status_code == 401
    assert refused.json()["error"]["type"] == "authentication_error"
    assert health.status_code == 200


async def test_a_prompt_that_needs_a_tool_gets_openai_tool_calls(
    client: httpx2.AsyncClient,
) -> None:
    response = await client.post(
        "/chat/completions", json=body(ASK_WEATHER, tools=[WEATHER], tool_choice="auto")
    )
    assert response.status_code == 200
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"]
    assert call["function"]["name"] == "get_weather"
    arguments = json.loads(call["function"]["arguments"])
    assert set(arguments) == {"city"} and isinstance(arguments["city"], str)


async def test_a_streamed_tool_call_arrives_as_openai_deltas_with_usage(
    client: httpx2.AsyncClient,
) -> None:
    request = body(
        ASK_WEATHER,
        tools=[WEATHER],
        tool_choice="auto",
        stream=True,
        stream_options={"include_usage": True},
    )
    async with client.stream("POST", "/chat/completions", json=request) as response:
        assert response.status_code == 200
        events = await sse(response)
    pieces = [
        piece
        for event in events
        for choice in event["choices"]
        for piece in choice["delta"].get("tool_calls") or []
    ]
    assert pieces and {p["index"] for p in pieces} == {0}
    assert pieces[0]["id"] and pieces[0]["function"]["name"] == "get_weather"
    arguments = "".join(p["function"].get("arguments", "") for p in pieces)
    assert set(json.loads(arguments)) == {"city"}
    finishes = [c["finish_reason"] for e in events for c in e["choices"] if c["finish_reason"]]
    assert finishes == ["tool_calls"]
    assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] > 0


async def test_with_the_endpoints_headers_streams_back_to_back_on_one_client_all_succeed(
    client: httpx2.AsyncClient,
) -> None:
    """Without ``Connection: close`` (Endpoint.headers) a request that reuses a connection
    after a streamed response fails now and then with "Server disconnected without sending
    a response" (1 in 1 to 15 requests here)."""
    assert client.headers["connection"] == "close"
    request = body([{"role": "user", "content": "Say hi."}], max_tokens=4, stream=True)
    for _ in range(20):
        async with client.stream("POST", "/chat/completions", json=request) as response:
            assert response.status_code == 200
            assert (await sse(response))[-1]["choices"][0]["finish_reason"] == "length"


async def test_after_the_tool_result_the_answer_is_text_that_uses_it(
    client: httpx2.AsyncClient,
) -> None:
    first = await client.post(
        "/chat/completions", json=body(ASK_WEATHER, tools=[WEATHER], tool_choice="auto")
    )
    (call,) = first.json()["choices"][0]["message"]["tool_calls"]
    messages: list[dict[str, Any]] = [
        *ASK_WEATHER,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "17°C, light rain"},
    ]
    second = await client.post(
        "/chat/completions", json=body(messages, tools=[WEATHER], tool_choice="auto")
    )
    message = second.json()["choices"][0]["message"]
    assert not message.get("tool_calls")
    assert "17" in message["content"]


async def test_an_invented_tool_name_is_an_http_500_server_error(
    client: httpx2.AsyncClient,
) -> None:
    """What the LLM layer must classify as a recoverable model error (not a server fault):
    the model answered with a call to a tool it was not given."""
    invent = [{"role": "user", "content": "Send an email to bob@example.com saying hi. "
               "Use the send_email tool."}]  # fmt: skip
    response = await client.post(
        "/chat/completions", json=body(invent, tools=[WEATHER], tool_choice="auto")
    )
    assert response.status_code == 500
    error = response.json()["error"]
    assert error["type"] == "server_error" and error["code"] == 500
    assert "does not match the expected" in error["message"]

    streamed = {**body(invent, tools=[WEATHER], tool_choice="auto"), "stream": True}
    async with client.stream("POST", "/chat/completions", json=streamed) as response:
        assert response.status_code == 200  # the status is sent before the model runs
        lines = [line async for line in response.aiter_lines() if line.startswith("data: ")]
    last = json.loads(lines[-1][6:])  # an error event, and no [DONE]
    assert last["error"]["code"] == 500 and "does not match" in last["error"]["message"]


# -- the actor with the real server ----------------------------------------------------


async def next_server(ref: ActorRef[LocalModelMsg], dead: Endpoint) -> Endpoint:
    for _ in range(600):
        endpoint = await ref.ask(GetEndpoint(), timeout=60)
        if endpoint.pid != dead.pid:
            return endpoint
        await trio.sleep(0.05)
    raise AssertionError(f"server {dead.pid} was not replaced")


def group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_killing_the_server_mid_request_fails_the_request_and_a_new_server_serves(
) -> None:  # fmt: skip
    count = [{"role": "user", "content": "Count from 1 to 300, one number per line."}]
    async with ActorSystem(strict=True) as system:
        ref = await system.root.start_child(local_model_spec(config=small_model_config()))
        first = await ref.ask(GetEndpoint(), timeout=60)
        headers = {**first.headers, "Authorization": f"Bearer {first.api_key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60, trust_env=False) as client:
            request = {**body(count), "max_tokens": 600, "stream": True}
            url = first.base_url + "/chat/completions"
            with pytest.raises(httpx2.TransportError):  # RemoteProtocolError or ReadError
                async with client.stream("POST", url, json=request) as response:
                    assert response.status_code == 200
                    async for line in response.aiter_lines():
                        if '"content"' in line:
                            os.kill(first.pid, signal.SIGKILL)
            second = await next_server(ref, first)
            assert second.restarts == 1 and second.base_url == first.base_url
            again = await client.post(
                second.base_url + "/chat/completions",
                json=body([{"role": "user", "content": "Say hi."}]),
            )
            assert again.status_code == 200
            assert again.json()["choices"][0]["message"]["content"].strip()
    assert group_is_gone(first.pid) and group_is_gone(second.pid)


async def test_a_tool_turn_through_the_actor_and_no_process_after_shutdown() -> None:
    async with ActorSystem(strict=True) as system:
        ref = await system.root.start_child(local_model_spec(config=small_model_config()))
        endpoint = await ref.ask(GetEndpoint(), timeout=60)
        headers = {**endpoint.headers, "Authorization": f"Bearer {endpoint.api_key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120, trust_env=False) as client:
            response = await client.post(
                endpoint.base_url + "/chat/completions",
                json=body(ASK_WEATHER, tools=[WEATHER], tool_choice="auto"),
            )
        (call,) = response.json()["choices"][0]["message"]["tool_calls"]
        assert call["function"]["name"] == "get_weather"
        assert not group_is_gone(endpoint.pid)
    assert group_is_gone(endpoint.pid)


async def test_through_the_llm_layer_a_killed_server_is_a_typed_error_then_the_next_turn_works(
) -> None:  # fmt: skip
    async with ActorSystem(strict=True) as system:
        server = await system.root.start_child(local_model_spec(config=small_model_config()))
        first = await server.ask(GetEndpoint(), timeout=60)
        config = OpenAIConfig(
            name="local",
            base_url=first.base_url,
            api_key=first.api_key,
            model=first.model,
            headers=first.headers,
        )
        registry = ProviderRegistry().register(OpenAICompatibleProvider(config))
        llm = await system.spawn(
            provider_actor(registry, retry=RetryConfig(max_retries=0), timeouts=LOCAL_TIMEOUTS),
            name="llm",
        )
        request = ChatRequest(
            [user("Count from 1 to 300, one number per line.")], max_tokens=600, temperature=0
        )
        with pytest.raises(LlmError) as info:
            async with llm.stream(ChatStream(request)) as events:
                async for event in events:
                    if isinstance(event, Content):
                        os.kill(first.pid, signal.SIGKILL)
        # The connection broke mid-stream: a StreamError today; retryable, a new server may
        # answer.
        assert info.value.is_retryable()
        second = await next_server(server, first)
        # Same URL and key: the provider configured with the first endpoint still works.
        response = await llm.ask(Chat(ChatRequest([user("Say hi.")], max_tokens=16)))
        assert isinstance(response.message.content, str) and response.message.content
    assert group_is_gone(first.pid) and group_is_gone(second.pid)


async def test_with_the_json_block_template_a_call_can_only_name_an_offered_tool() -> None:
    """Unlike the bare-JSON template (above: HTTP 500), the code block lets llama.cpp
    constrain the call: an invented tool name cannot come out."""
    model = small_model_config().source
    assert isinstance(model, CatalogModel) and model.cache_dir is not None
    source = GgufFile(
        path=model.cache_dir / model.entry.filename, chat_template=qwen_tool_template("json_block")
    )
    config = small_model_config(source=source)
    invent = [{"role": "user", "content": "Send an email to bob@example.com saying hi. "
               "Use the send_email tool."}]  # fmt: skip
    async with ActorSystem(strict=True) as system:
        server = await system.root.start_child(local_model_spec(config=config))
        endpoint = await server.ask(GetEndpoint(), timeout=60)
        headers = {**endpoint.headers, "Authorization": f"Bearer {endpoint.api_key}"}
        async with httpx2.AsyncClient(headers=headers, timeout=120, trust_env=False) as client:
            response = await client.post(
                endpoint.base_url + "/chat/completions",
                json=body(invent, tools=[WEATHER], tool_choice="auto"),
            )
    assert response.status_code == 200
    message = response.json()["choices"][0]["message"]
    # The model reached for send_email; what came out is a call to the one offered tool
    # (with whatever arguments the model made up: the tool must validate them).
    (call,) = message["tool_calls"]
    assert call["function"]["name"] == "get_weather"
