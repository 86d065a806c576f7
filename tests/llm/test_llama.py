"""Conformance against a real OpenAI-compatible server: llama.cpp's server (the embedded
model's runtime, xllamacpp) with Qwen2.5-Coder-0.5B and our tool template.

The session's shared server (the ``local_model`` fixture). Temperature 0 is deterministic
here, so a streamed reply must equal the plain one; the content checks are what this model
answers, each one a property a wrong wiring would break (the right tool, its argument, the
tool result used in the answer).
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import trio

from agcore_actors import ActorSystem
from agcore_actors.llm import (
    AssistantMessage,
    Chat,
    ChatRequest,
    ChatStream,
    Content,
    ContextLengthError,
    Finish,
    OpenAICompatibleProvider,
    ProviderRegistry,
    RetryConfig,
    Timeouts,
    ToolCalls,
    force_tool,
    provider_actor,
    tool_definition,
    tool_result,
    user,
)
from agcore_actors.local.messages import Endpoint
from tests.llm.helpers import chat, stream
from tests.peers.local_model import N_CTX, openai_config

pytestmark = pytest.mark.slow

WEATHER = tool_definition(
    "get_weather",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    "Get the weather of a city",
)
LOCAL_TIMEOUTS = Timeouts(attempt=60, idle=60, call=120)


def provider(endpoint: Endpoint) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(openai_config(endpoint))


def ask(text: str, **kw: object) -> ChatRequest:
    kw.setdefault("max_tokens", 24)
    kw.setdefault("temperature", 0.0)
    return ChatRequest([user(text)], **kw)  # type: ignore[arg-type]


async def test_non_streaming(local_model: Endpoint) -> None:
    response = await chat(provider(local_model), ask("Say hello."), timeouts=LOCAL_TIMEOUTS)
    assert isinstance(response.message.content, str)
    assert "hello" in response.message.content.lower()
    assert response.finish_reason == "stop"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert response.model == local_model.model


async def test_streaming_equals_the_plain_reply_at_temperature_0(local_model: Endpoint) -> None:
    request = ask("Count to three.")
    plain = await chat(provider(local_model), request, timeouts=LOCAL_TIMEOUTS)
    events = await stream(provider(local_model), request, timeouts=LOCAL_TIMEOUTS)
    final = events[-1]
    assert isinstance(final, Finish)
    pieces = [e.text for e in events if isinstance(e, Content)]
    assert len(pieces) > 1 and "".join(pieces) == final.response.text
    assert final.response.text == plain.text
    text = final.response.text
    assert 0 <= text.index("1") < text.index("2") < text.index("3")
    assert final.response.finish_reason == "stop"
    # llama.cpp honours stream_options.include_usage.
    assert final.response.usage.output_tokens > 0


async def test_length(local_model: Endpoint) -> None:
    request = ask("Write a long story about a dragon.", max_tokens=3)
    response = await chat(provider(local_model), request, timeouts=LOCAL_TIMEOUTS)
    assert response.finish_reason == "length"
    assert response.usage.output_tokens == 3
    events = await stream(provider(local_model), request, timeouts=LOCAL_TIMEOUTS)
    final = events[-1]
    assert isinstance(final, Finish) and final.response.finish_reason == "length"
    assert final.response.text == response.text


async def test_context_length_is_a_400_with_both_counts_plain_and_streamed(
    local_model: Endpoint,
) -> None:
    # llama.cpp checks the length before it starts a stream: a plain 400 either way.
    request = ask("hello " * (N_CTX + 500))
    for call in (chat, stream):
        with pytest.raises(ContextLengthError) as info:
            await call(provider(local_model), request, timeouts=LOCAL_TIMEOUTS)
        assert info.value.status == 400
        assert info.value.limit == N_CTX and info.value.actual > N_CTX
        assert not info.value.is_retryable()


def _check_call(message: AssistantMessage) -> str:
    assert message.tool_calls is not None and len(message.tool_calls) == 1
    call = message.tool_calls[0]
    assert call.id and call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    return call.id


@pytest.mark.parametrize("choice", ["forced", "auto"])
async def test_tool_call_plain_and_streamed_then_the_result_is_used(
    local_model: Endpoint, choice: str
) -> None:
    request = ask(
        "What is the weather in Paris?",
        max_tokens=64,
        tools=[WEATHER],
        tool_choice=force_tool("get_weather") if choice == "forced" else "auto",
    )
    response = await chat(provider(local_model), request, timeouts=LOCAL_TIMEOUTS)
    call_id = _check_call(response.message)
    assert response.finish_reason == "tool_calls"
    events = await stream(provider(local_model), request, timeouts=LOCAL_TIMEOUTS)
    final = events[-1]
    assert isinstance(final, Finish)
    _check_call(final.response.message)
    chunks = [c for e in events if isinstance(e, ToolCalls) for c in e.calls]
    assert len(chunks) > 1  # arrived in pieces and was merged by index

    # The reply and its tool result are accepted back, and the answer uses the result.
    follow_up = ChatRequest(
        [*request.messages, response.message, tool_result(call_id, "Sunny, 25 C")],
        max_tokens=48,
        temperature=0.0,
        tools=[WEATHER],
    )
    again = await chat(provider(local_model), follow_up, timeouts=LOCAL_TIMEOUTS)
    assert again.finish_reason == "stop" and not again.message.tool_calls
    assert "25" in again.text


async def test_through_the_provider_actor(local_model: Endpoint) -> None:
    registry = ProviderRegistry().register(provider(local_model))
    factory = provider_actor(registry, retry=RetryConfig(max_retries=1), timeouts=LOCAL_TIMEOUTS)
    async with ActorSystem(strict=True) as system:
        llm = await system.spawn(factory, name="llm")
        async with trio.open_nursery() as nursery:
            replies: list[str] = []

            async def one() -> None:
                replies.append((await llm.ask(Chat(ask("Hi!")))).text)

            for _ in range(2):
                nursery.start_soon(one)
        assert len(replies) == 2 and replies[0] == replies[1] != ""
        async with llm.stream(ChatStream(ask("Hi!"))) as events:
            seen = [e async for e in events]
        assert {"Content", "Finish"} <= {type(e).__name__ for e in seen}
        final = seen[-1]
        assert isinstance(final, Finish) and final.response.text == replies[0]


async def test_cli_against_the_local_server(local_model: Endpoint) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    environ |= {"OPENAI_BASE_URL": local_model.base_url, "OPENAI_API_KEY": local_model.api_key}
    command = [
        sys.executable, "-m", "agcore_actors.cli", "llm", "complete", "Say hello.",
        "--max-tokens", "8", "--json",
    ]  # fmt: skip
    with trio.fail_after(60):
        result = await trio.run_process(
            command, env=environ, capture_stdout=True, capture_stderr=True, check=False
        )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert "hello" in data["text"].lower() and data["finish_reason"] in ("stop", "length")
    # No model configured: the server's only model is named, and asked for.
    assert data["model"] == local_model.model
    assert data["usage"]["input_tokens"] > 0 and data["usage"]["output_tokens"] > 0
