"""Conformance against a real OpenAI-compatible server: llama-cpp-python + SmolLM2-135M.

Structure is asserted, never exact text (the tiny model is not deterministic here).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator

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
    OpenAIConfig,
    ProviderRegistry,
    RetryConfig,
    StreamError,
    Timeouts,
    ToolCalls,
    force_tool,
    provider_actor,
    tool_definition,
    tool_result,
    user,
)
from tests.llm.helpers import chat, stream, stream_until_error
from tests.peers.llama import llama_server

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
LLAMA_TIMEOUTS = Timeouts(attempt=60, idle=60, call=120)


@pytest.fixture(scope="module")
def llama() -> Iterator[str]:
    with llama_server() as base:
        yield base


def provider(base: str) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(OpenAIConfig(name="llama", base_url=base, model="smollm2"))


def ask(text: str, **kw: object) -> ChatRequest:
    kw.setdefault("max_tokens", 24)
    kw.setdefault("temperature", 0.0)
    return ChatRequest([user(text)], **kw)  # type: ignore[arg-type]


async def test_non_streaming(llama: str) -> None:
    response = await chat(provider(llama), ask("Say hello."), timeouts=LLAMA_TIMEOUTS)
    assert isinstance(response.message.content, str) and response.message.content
    assert response.finish_reason in ("stop", "length")
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert response.model == "smollm2"


async def test_streaming(llama: str) -> None:
    events = await stream(provider(llama), ask("Count to three."), timeouts=LLAMA_TIMEOUTS)
    final = events[-1]
    assert isinstance(final, Finish)
    pieces = [e.text for e in events if isinstance(e, Content)]
    assert len(pieces) > 1 and "".join(pieces) == final.response.text
    assert final.response.finish_reason in ("stop", "length")


async def test_length(llama: str) -> None:
    request = ask("Write a long story about a dragon.", max_tokens=3)
    response = await chat(provider(llama), request, timeouts=LLAMA_TIMEOUTS)
    assert response.finish_reason == "length"
    assert 0 < response.usage.output_tokens <= 3
    events = await stream(provider(llama), request, timeouts=LLAMA_TIMEOUTS)
    final = events[-1]
    assert isinstance(final, Finish) and final.response.finish_reason == "length"


async def test_context_length_400(llama: str) -> None:
    request = ask("hello " * 3000)
    with pytest.raises(ContextLengthError) as info:
        await chat(provider(llama), request, timeouts=LLAMA_TIMEOUTS)
    assert info.value.status == 400
    # llama-cpp-python checks the length only once the stream has started: it answers 200
    # with an empty event stream. That is a typed, non-retryable stream error here.
    _, error = await stream_until_error(provider(llama), request, timeouts=LLAMA_TIMEOUTS)
    assert isinstance(error, StreamError) and "no events" in str(error)
    assert not error.is_retryable()


def _check_call(message: AssistantMessage) -> None:
    assert message.tool_calls is not None and len(message.tool_calls) >= 1
    call = message.tool_calls[0]
    assert call.id and call.function.name == "get_weather"
    assert isinstance(json.loads(call.function.arguments), dict)


async def test_forced_tool_call_plain_and_streamed(llama: str) -> None:
    request = ask(
        "What is the weather in Paris?",
        max_tokens=64,
        tools=[WEATHER],
        tool_choice=force_tool("get_weather"),
    )
    response = await chat(provider(llama), request, timeouts=LLAMA_TIMEOUTS)
    _check_call(response.message)
    events = await stream(provider(llama), request, timeouts=LLAMA_TIMEOUTS)
    final = events[-1]
    assert isinstance(final, Finish)
    _check_call(final.response.message)
    chunks = [c for e in events if isinstance(e, ToolCalls) for c in e.calls]
    assert len(chunks) > 1  # arrived in pieces and was merged by index
    assert sum(1 for c in chunks if c.name) == len(final.response.message.tool_calls or [])

    # The reply and its tool result are accepted back (content "" not null).
    call = (response.message.tool_calls or [])[0]
    follow_up = ChatRequest(
        [*request.messages, response.message, tool_result(call.id, "Sunny, 25 C")],
        max_tokens=16,
        tools=[WEATHER],
    )
    again = await chat(provider(llama), follow_up, timeouts=LLAMA_TIMEOUTS)
    assert again.finish_reason in ("stop", "length", "tool_calls")


async def test_through_the_provider_actor(llama: str) -> None:
    registry = ProviderRegistry().register(provider(llama))
    factory = provider_actor(registry, retry=RetryConfig(max_retries=1), timeouts=LLAMA_TIMEOUTS)
    async with ActorSystem(strict=True) as system:
        llm = await system.spawn(factory, name="llm")
        async with trio.open_nursery() as nursery:
            replies: list[str] = []

            async def one() -> None:
                replies.append((await llm.ask(Chat(ask("Hi!")))).text)

            for _ in range(2):
                nursery.start_soon(one)
        assert len(replies) == 2
        async with llm.stream(ChatStream(ask("Hello!"))) as events:
            kinds = {type(e).__name__ async for e in events}
        assert {"Content", "Finish"} <= kinds


async def test_cli_against_llama(llama: str) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    environ |= {"OPENAI_BASE_URL": llama, "OPENAI_MODEL": "smollm2"}
    command = [
        sys.executable, "-m", "agcore_actors.cli", "llm", "complete", "Say hi.",
        "--max-tokens", "8", "--json",
    ]  # fmt: skip
    with trio.fail_after(60):
        result = await trio.run_process(
            command, env=environ, capture_stdout=True, capture_stderr=True, check=False
        )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["text"] and data["finish_reason"] in ("stop", "length")
    # llama-cpp-python ignores stream_options.include_usage: a streamed call has no usage.
    assert set(data["usage"]) == {
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
        "reasoning_tokens",
    }  # fmt: skip
