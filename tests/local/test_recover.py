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
from agcore_actors.local import ToolCallRecovery
from tests.cli.agent_server import PEG_ERROR
from tests.peers.fault_server import FaultServer, completion, error_reply, json_reply

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
