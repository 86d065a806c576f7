"""The malformed-tool-call recovery of a non-streamed call against the fault server over
real HTTP (llama.cpp's HTTP 500 when the model's call does not parse)."""

from __future__ import annotations

import httpx2
import pytest

from agcore_actors.llm import (
    ChatRequest,
    FunctionDefinition,
    InvalidResponseError,
    OpenAICompatibleProvider,
    OpenAIConfig,
    RequestError,
    ToolDefinition,
    user,
)
from agcore_actors.llm.wire import NO_READ_LIMITS as NO_LIMITS
from agcore_actors.llm.wire import ChatDelta
from agcore_actors.local import ToolCallRecovery
from tests.cli.agent_server import PEG_ERROR
from tests.peers.fault_server import (
    FaultServer,
    chunk,
    completion,
    error_reply,
    json_reply,
    sse,
    sse_reply,
)

TOOLS = [ToolDefinition(FunctionDefinition("f", "F.", {"type": "object"}))]


def provider(url: str) -> ToolCallRecovery:
    return ToolCallRecovery(
        OpenAICompatibleProvider(OpenAIConfig(name="local", base_url=url, model="m"))
    )


async def test_a_malformed_call_is_asked_again_without_tools_once(
    fault_server: FaultServer,
) -> None:
    url, scenario = fault_server.script(
        json_reply(PEG_ERROR, status=500), json_reply(completion("Hi."))
    )
    request = ChatRequest(messages=[user("hi")], tools=TOOLS)
    async with httpx2.AsyncClient() as client:
        response = await provider(url).chat(client, request)
    assert response.message.text == "Hi."
    first, second = (r.body for r in scenario.requests)
    assert first["tools"] and "tools" not in second


async def test_a_second_malformed_answer_is_final_and_other_errors_pass_untouched(
    fault_server: FaultServer,
) -> None:
    url, scenario = fault_server.script(json_reply(PEG_ERROR, status=500))
    request = ChatRequest(messages=[user("hi")], tools=TOOLS)
    async with httpx2.AsyncClient() as client:
        with pytest.raises(InvalidResponseError) as final:
            await provider(url).chat(client, request)
        assert not final.value.is_retryable() and len(scenario.requests) == 2
        url, scenario = fault_server.script(error_reply(500, "out of memory"))
        with pytest.raises(RequestError) as other:
            await provider(url).chat(client, request)
        assert other.value.is_retryable() and len(scenario.requests) == 1


# -- streamed: the real server's error event after the 200 -------------------------------


async def streamed(url: str, request: ChatRequest) -> list[ChatDelta]:
    async with httpx2.AsyncClient() as client:
        deltas = provider(url).stream(client, request, NO_LIMITS)
        return [delta async for delta in deltas]


async def test_a_streamed_parser_error_before_anything_shown_is_asked_again_without_tools(
    fault_server: FaultServer,
) -> None:
    url, scenario = fault_server.script(
        sse_reply(*sse(chunk({"role": "assistant"}), PEG_ERROR, done=False)),
        sse_reply(*sse(chunk({"content": "Hi."}, "stop"))),
    )
    deltas = await streamed(url, ChatRequest(messages=[user("hi")], tools=TOOLS))
    assert "".join(d.content or "" for d in deltas) == "Hi."
    first, second = (r.body for r in scenario.requests)
    assert first["tools"] and "tools" not in second


async def test_a_streamed_parser_error_after_text_ends_the_reply_as_a_plain_answer(
    fault_server: FaultServer,
) -> None:
    """Failed on the old code: the 500 reached the caller, and the turn failed."""
    url, scenario = fault_server.script(
        sse_reply(
            *sse(chunk({"role": "assistant", "content": "It is 391."}), PEG_ERROR, done=False)
        )
    )
    deltas = await streamed(url, ChatRequest(messages=[user("hi")], tools=TOOLS))
    assert "".join(d.content or "" for d in deltas) == "It is 391."
    assert deltas[-1].finish_reason == "stop" and len(scenario.requests) == 1


async def test_a_streamed_parser_error_after_a_whole_call_keeps_the_calls_delivered(
    fault_server: FaultServer,
) -> None:
    """A reply of several calls whose second does not parse: the first call is kept."""
    call = {"index": 0, "id": "c1", "type": "function",
            "function": {"name": "f", "arguments": "{}"}}  # fmt: skip
    url, scenario = fault_server.script(
        sse_reply(*sse(chunk({"role": "assistant", "tool_calls": [call]}), PEG_ERROR, done=False))
    )
    deltas = await streamed(url, ChatRequest(messages=[user("hi")], tools=TOOLS))
    names = [c.name for d in deltas for c in d.tool_calls or [] if c.name]
    assert names == ["f"] and deltas[-1].finish_reason == "tool_calls"
    assert len(scenario.requests) == 1
