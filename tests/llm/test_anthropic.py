"""The Anthropic provider against the real fault server speaking the Messages API."""

from __future__ import annotations

from typing import Any

import pytest

from agcore_actors.llm import (
    AnthropicConfig,
    AnthropicProvider,
    AssistantMessage,
    AssistantToolCall,
    AuthenticationError,
    ChatRequest,
    ContextLengthError,
    Finish,
    FunctionCall,
    RateLimitError,
    RequestError,
    RetryConfig,
    StreamError,
    Thinking,
    ToolCalls,
    Usage,
    UsageUpdate,
    force_tool,
    system,
    tool_definition,
    tool_result,
    user,
)
from tests.llm.helpers import chat, openai, stream, stream_until_error
from tests.peers.fault_server import (
    FaultServer,
    anthropic_event,
    json_reply,
    sse_reply,
)

KEY = "sk-ant-test-key-456"
ANTHROPIC_USAGE = {
    "input_tokens": 50,
    "output_tokens": 30,
    "cache_read_input_tokens": 200,
    "cache_creation_input_tokens": 10,
}


def anthropic(fault_server: FaultServer, url: str) -> AnthropicProvider:
    return AnthropicProvider(
        AnthropicConfig(base_url=fault_server.root(url), api_key=KEY, model="claude-test")
    )


def message(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": content,
        "stop_reason": stop,
        "usage": ANTHROPIC_USAGE,
    }


async def test_request_conversion_and_reply(fault_server: FaultServer) -> None:
    reply = message(
        [
            {"type": "thinking", "thinking": "Let me see.", "signature": "sig"},
            {"type": "text", "text": "Calling the tool."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
        ],
        stop="tool_use",
    )
    url, scenario = fault_server.script(json_reply(reply))
    earlier = AssistantMessage(
        "", tool_calls=[AssistantToolCall("toolu_0", FunctionCall("lookup", '{"q": "a"}'))]
    )
    request = ChatRequest(
        [
            system("Be brief."),
            user("Look up x"),
            earlier,
            tool_result("toolu_0", "found a"),
            user("and x?"),
        ],
        tools=[tool_definition("lookup", {"type": "object"}, "Look things up")],
        tool_choice=force_tool("lookup"),
        stop="END",
        extra_body={"thinking": {"type": "enabled", "budget_tokens": 1024}},
    )
    response = await chat(anthropic(fault_server, url), request)
    assert response.text == "Calling the tool."
    assert response.reasoning == "Let me see."
    assert response.message.tool_calls == [
        AssistantToolCall("toolu_1", FunctionCall("lookup", '{"q":"x"}'))
    ]
    assert response.finish_reason == "tool_calls"
    # Anthropic's input_tokens excludes cache reads and writes: nothing is subtracted.
    assert response.usage == Usage(50, 30, cache_read_tokens=200, cache_write_tokens=10)
    (req,) = scenario.requests
    assert req.path.endswith("/v1/messages")
    assert req.headers["x-api-key"] == KEY and req.headers["anthropic-version"] == "2023-06-01"
    body = req.body
    assert body["system"] == "Be brief." and body["model"] == "claude-test"
    assert body["max_tokens"] == 4096 and body["stop_sequences"] == ["END"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["tool_choice"] == {"type": "tool", "name": "lookup"}
    assert body["tools"] == [
        {"name": "lookup", "description": "Look things up", "input_schema": {"type": "object"}}
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Look up x"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_0", "name": "lookup", "input": {"q": "a"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_0", "content": "found a"},
                {"type": "text", "text": "and x?"},
            ],
        },
    ]


def _start(index: int, block: dict[str, Any]) -> bytes:
    return anthropic_event("content_block_start", {"index": index, "content_block": block})


def _delta(index: int, kind: str, **fields: str) -> bytes:
    return anthropic_event(
        "content_block_delta", {"index": index, "delta": {"type": kind, **fields}}
    )


def _stop(index: int) -> bytes:
    return anthropic_event("content_block_stop", {"index": index})


def _stream_events(cut: bool = False) -> list[bytes]:
    start_usage = {**ANTHROPIC_USAGE, "output_tokens": 1}
    first = {"id": "msg_2", "model": "claude-test", "content": [], "usage": start_usage}
    tool = {"type": "tool_use", "id": "toolu_9", "name": "f", "input": {}}
    events = [
        anthropic_event("message_start", {"message": first}),
        b'event: ping\ndata: {"type": "ping"}\n\n',
        _start(0, {"type": "thinking", "thinking": ""}),
        _delta(0, "thinking_delta", thinking="Hmm"),
        _stop(0),
        _start(1, {"type": "text", "text": ""}),
        _delta(1, "text_delta", text="Hel"),
        _delta(1, "text_delta", text="lo"),
        _stop(1),
        _start(2, tool),
        _delta(2, "input_json_delta", partial_json='{"a"'),
        _delta(2, "input_json_delta", partial_json=": 1}"),
        _stop(2),
        anthropic_event(
            "message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}}
        ),
    ]
    if not cut:
        events.append(anthropic_event("message_stop", {}))
    return events


async def test_stream_events_and_assembly(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(sse_reply(*_stream_events()))
    events = await stream(anthropic(fault_server, url))
    kinds = [type(e).__name__ for e in events]
    assert kinds[0] == "UsageUpdate" and kinds[-1] == "Finish"
    assert [e.text for e in events if isinstance(e, Thinking)] == ["Hmm"]
    assert "ContentFirst" in kinds and any(isinstance(e, ToolCalls) for e in events)
    final = events[-1]
    assert isinstance(final, Finish)
    r = final.response
    assert r.text == "Hello" and r.reasoning == "Hmm" and r.finish_reason == "tool_calls"
    assert r.message.tool_calls == [AssistantToolCall("toolu_9", FunctionCall("f", '{"a": 1}'))]
    assert r.usage == Usage(50, 30, cache_read_tokens=200, cache_write_tokens=10)
    usages = [e.usage.output_tokens for e in events if isinstance(e, UsageUpdate)]
    assert usages == [1, 30]  # cumulative, not summed
    assert scenario.requests[0].body["stream"] is True


async def test_stream_without_message_stop_or_stop_reason_is_a_stream_error(
    fault_server: FaultServer,
) -> None:
    events = _stream_events(cut=True)[:-1]  # neither message_delta nor message_stop
    url, _ = fault_server.script(sse_reply(*events, framing="close"))
    _, error = await stream_until_error(anthropic(fault_server, url))
    assert isinstance(error, StreamError) and "message_stop" in str(error) and error.truncated


async def test_stream_with_a_stop_reason_that_closes_without_message_stop_is_complete(
    fault_server: FaultServer,
) -> None:
    url, _ = fault_server.script(sse_reply(*_stream_events(cut=True), framing="close"))
    final = (await stream(anthropic(fault_server, url)))[-1]
    assert isinstance(final, Finish) and final.response.finish_reason == "tool_calls"


def _error(kind: str, text: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": text}}


@pytest.mark.parametrize(
    ("status", "kind", "expected"),
    [
        (401, "authentication_error", AuthenticationError),
        (403, "permission_error", AuthenticationError),
        (429, "rate_limit_error", RateLimitError),
        (529, "overloaded_error", RequestError),
    ],
)
async def test_http_errors(
    fault_server: FaultServer, status: int, kind: str, expected: type[Exception]
) -> None:
    url, _ = fault_server.script(
        json_reply(_error(kind, f"bad {KEY}"), status=status, headers={"retry-after": "7"})
    )
    with pytest.raises(expected) as info:
        await chat(anthropic(fault_server, url), retry=RetryConfig(max_retries=0))
    assert KEY not in str(info.value)
    if status == 429:
        assert isinstance(info.value, RateLimitError) and info.value.retry_after == 7
    if status == 529:
        assert isinstance(info.value, RequestError) and info.value.is_retryable()


async def test_prompt_too_long_is_a_context_length_error(fault_server: FaultServer) -> None:
    text = "prompt is too long: 208000 tokens > 200000 maximum"
    url, _ = fault_server.script(json_reply(_error("invalid_request_error", text), status=400))
    with pytest.raises(ContextLengthError) as info:
        await chat(anthropic(fault_server, url))
    assert (info.value.actual, info.value.limit) == (208000, 200000)


async def test_overloaded_error_event_mid_stream(fault_server: FaultServer) -> None:
    events = [
        *_stream_events()[:1],
        anthropic_event("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ]
    ok = _stream_events()
    url, scenario = fault_server.script(sse_reply(*events), sse_reply(*ok))
    got = await stream(anthropic(fault_server, url))
    final = got[-1]
    assert isinstance(final, Finish) and final.response.attempts == 2
    assert len(scenario.requests) == 2


# -- issue 11 regressions ------------------------------------------------------------


def thinking_tool_stream() -> list[bytes]:
    first = {"id": "msg_1", "model": "claude-test", "content": [], "usage": {"input_tokens": 5}}
    return [
        anthropic_event("message_start", {"message": first}),
        anthropic_event(
            "content_block_start",
            {"index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
        ),
        anthropic_event(
            "content_block_delta",
            {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Need the tool."}},
        ),
        anthropic_event(
            "content_block_delta",
            {"index": 0, "delta": {"type": "signature_delta", "signature": "SIG-A"}},
        ),
        anthropic_event(
            "content_block_delta",
            {"index": 0, "delta": {"type": "signature_delta", "signature": "SIG-B"}},
        ),
        anthropic_event("content_block_stop", {"index": 0}),
        anthropic_event(
            "content_block_start",
            {"index": 1, "content_block": {"type": "redacted_thinking", "data": "OPAQUE"}},
        ),
        anthropic_event("content_block_stop", {"index": 1}),
        anthropic_event(
            "content_block_start",
            {
                "index": 2,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}},
            },
        ),
        anthropic_event(
            "content_block_delta",
            {"index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"a": 1}'}},
        ),
        anthropic_event("content_block_stop", {"index": 2}),
        anthropic_event(
            "message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}
        ),
        anthropic_event("message_stop", {}),
    ]


EXPECTED_ASSISTANT = [
    {"type": "thinking", "thinking": "Need the tool.", "signature": "SIG-ASIG-B"},
    {"type": "redacted_thinking", "data": "OPAQUE"},
    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
]


async def test_anthropic_streamed_thinking_blocks_go_back_first_with_their_signatures(
    fault_server: FaultServer,
) -> None:
    reply = message([{"type": "text", "text": "ok"}])
    url, scenario = fault_server.script(sse_reply(*thinking_tool_stream()), json_reply(reply))
    provider = anthropic(fault_server, url)
    tools = [tool_definition("f", {"type": "object"})]
    first = ChatRequest([user("go")], tools=tools)
    final = (await stream(provider, first))[-1]
    assert isinstance(final, Finish)
    follow_up = ChatRequest(
        [user("go"), final.response.message, tool_result("toolu_1", "42")], tools=tools
    )
    await chat(provider, follow_up)
    assert scenario.requests[1].body["messages"][1] == {
        "role": "assistant",
        "content": EXPECTED_ASSISTANT,
    }


async def test_anthropic_plain_reply_keeps_thinking_blocks_in_order(
    fault_server: FaultServer,
) -> None:
    content: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "Need the tool.", "signature": "SIG-ASIG-B"},
        {"type": "redacted_thinking", "data": "OPAQUE"},
        {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}},
    ]
    reply = message(content, stop="tool_use")
    url, scenario = fault_server.script(json_reply(reply))
    provider = anthropic(fault_server, url)
    response = await chat(provider, ChatRequest([user("go")]))
    await chat(provider, ChatRequest([user("go"), response.message, tool_result("toolu_1", "4")]))
    assert scenario.requests[1].body["messages"][1]["content"] == EXPECTED_ASSISTANT


async def test_anthropic_api_error_event_before_output_is_retried(
    fault_server: FaultServer,
) -> None:
    start = {"id": "m", "model": "claude-test", "content": [], "usage": {"input_tokens": 1}}
    bad = sse_reply(
        anthropic_event("message_start", {"message": start}),
        anthropic_event("error", {"error": {"type": "api_error", "message": "Internal error"}}),
    )
    url, scenario = fault_server.script(bad, sse_reply(*thinking_tool_stream()))
    final = (await stream(anthropic(fault_server, url)))[-1]
    assert isinstance(final, Finish) and len(scenario.requests) == 2


async def test_anthropic_message_delta_input_and_cache_counts_are_kept(
    fault_server: FaultServer,
) -> None:
    start = {"id": "m", "model": "claude-test", "content": [], "usage": {"input_tokens": 1}}
    late = {"input_tokens": 40, "cache_read_input_tokens": 100, "output_tokens": 7}
    events = [
        anthropic_event("message_start", {"message": start}),
        anthropic_event(
            "content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}
        ),
        anthropic_event(
            "content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "hi"}}
        ),
        anthropic_event("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": late}),
        anthropic_event("message_stop", {}),
    ]
    url, _ = fault_server.script(sse_reply(*events))
    final = (await stream(anthropic(fault_server, url)))[-1]
    assert isinstance(final, Finish)
    assert final.response.usage == Usage(40, 7, cache_read_tokens=100)


async def test_reasoning_blocks_never_reach_an_openai_compatible_server(
    fault_server: FaultServer,
) -> None:
    url, scenario = fault_server.script(json_reply({"choices": []}))
    anthropic_url, _ = fault_server.script(sse_reply(*thinking_tool_stream()))
    final = (await stream(anthropic(fault_server, anthropic_url)))[-1]
    assert isinstance(final, Finish)
    await chat(openai(url), ChatRequest([user("go"), final.response.message]))
    sent = scenario.requests[0].body["messages"][1]
    assert set(sent) == {"role", "content", "tool_calls"}
