"""The OpenAI-compatible provider against the real fault server: every fault ends in
the right typed error or the right assembled message."""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import attrs
import pytest
import trio

from agcore_actors.llm import (
    AssistantMessage,
    AssistantToolCall,
    AuthenticationError,
    ChatRequest,
    Content,
    ContentFirst,
    ContextLengthError,
    Finish,
    FunctionCall,
    HookContext,
    HookEvent,
    HookExecutor,
    InvalidResponseError,
    LlmConnectionError,
    LlmTimeoutError,
    Message,
    OpenAICompatibleProvider,
    OpenAIConfig,
    RateLimitError,
    Refusal,
    RequestError,
    RetryConfig,
    Retrying,
    StreamError,
    Thinking,
    Timeouts,
    ToolCalls,
    Usage,
    deepseek_preset,
    tool_definition,
    tool_result,
    user,
)
from agcore_actors.llm.wire import openai_request_body
from tests.llm.helpers import chat, openai, stream, stream_until_error, text_stream
from tests.peers.fault_server import (
    FaultServer,
    Reply,
    chunk,
    completion,
    dumps,
    error_reply,
    json_reply,
    sse,
    sse_reply,
    usage_chunk,
)

NO_RETRY = RetryConfig(max_retries=0)
KEY = "sk-test-secret-key-123"


# -- success and the exact wire format ----------------------------------------------------


async def test_plain_completion_and_usage_convention(fault_server: FaultServer) -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 20,
        "total_tokens": 120,
        "prompt_tokens_details": {"cached_tokens": 40},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }
    url, scenario = fault_server.script(json_reply(completion("Hi there", usage=usage)))
    response = await chat(openai(url + "/"))  # a trailing slash is trimmed
    assert response.text == "Hi there"
    assert response.finish_reason == "stop"
    # prompt_tokens INCLUDES the cached tokens: they are taken out of input.
    assert response.usage == Usage(60, 20, cache_read_tokens=40, reasoning_tokens=5)
    assert response.usage.total_input_tokens == 100
    assert response.attempts == 1 and response.provider == "fault"
    (req,) = scenario.requests
    assert req.path.endswith("/v1/chat/completions") and "//" not in req.path
    assert req.headers["authorization"] == f"Bearer {KEY}"


async def test_request_body_is_exact(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(json_reply(completion()))
    request = ChatRequest(
        [user("Hi")],
        stop=["END"],
        tool_choice="auto",  # without tools: must not be sent
        extra_body={"enable_thinking": True},
        extra_headers={"X-Trace": "abc"},
    )
    await chat(openai(url), request)
    (req,) = scenario.requests
    assert req.body == {
        "messages": [{"role": "user", "content": "Hi"}],
        "model": "test-model",
        "stop": ["END"],
        "enable_thinking": True,
    }
    assert req.headers["x-trace"] == "abc"


async def test_content_null_and_missing_usage_are_accepted(fault_server: FaultServer) -> None:
    calls = [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    url, _ = fault_server.script(
        json_reply(completion(None, tool_calls=calls, finish="tool_calls"))
    )
    response = await chat(openai(url))
    assert response.message.content is None
    assert response.message.tool_calls is not None
    assert response.message.tool_calls[0].id == "call_1"
    assert response.usage == Usage()
    assert response.finish_reason == "tool_calls"


# -- HTTP errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_are_typed_not_retried_and_never_show_the_key(
    fault_server: FaultServer, status: int
) -> None:
    url, scenario = fault_server.script(error_reply(status, f"Incorrect API key provided: {KEY}"))
    with pytest.raises(AuthenticationError) as info:
        await chat(openai(url))
    assert info.value.status == status
    assert KEY not in str(info.value) and KEY not in info.value.body
    assert "fault" in str(info.value) and str(status) in str(info.value)
    assert len(scenario.requests) == 1


async def test_404_is_a_request_error_and_not_retried(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(error_reply(404, "model not found"))
    with pytest.raises(RequestError) as info:
        await chat(openai(url))
    assert info.value.status == 404 and not info.value.is_retryable()
    assert len(scenario.requests) == 1


@pytest.mark.parametrize("status", [500, 503])
async def test_5xx_is_retried_then_succeeds(fault_server: FaultServer, status: int) -> None:
    url, scenario = fault_server.script(
        error_reply(status, "boom"), error_reply(status, "boom"), json_reply(completion("ok"))
    )
    response = await chat(openai(url))
    assert response.text == "ok" and response.attempts == 3
    assert len(scenario.requests) == 3


async def test_5xx_gives_up_after_max_retries(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(error_reply(500, "still broken"))
    seen: list[HookContext] = []

    async def record(ctx: HookContext) -> None:
        seen.append(ctx)

    hooks = HookExecutor().register(HookEvent.ON_RETRY, record)
    hooks.register(HookEvent.ON_ERROR, record)
    with pytest.raises(RequestError) as info:
        await chat(openai(url), hooks=hooks)
    assert info.value.status == 500
    assert len(scenario.requests) == 4  # 1 + max_retries (3)
    assert [c.attempt for c in seen if c.event is HookEvent.ON_RETRY] == [1, 2, 3]
    assert [c.event for c in seen][-1] is HookEvent.ON_ERROR


async def test_429_retry_after_seconds_is_honoured(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(
        error_reply(429, "slow down", headers={"Retry-After": "0.3"}), json_reply(completion())
    )
    delays: list[float] = []

    async def record(ctx: HookContext) -> None:
        assert ctx.delay is not None
        delays.append(ctx.delay)

    start = trio.current_time()
    response = await chat(openai(url), hooks=HookExecutor().register(HookEvent.ON_RETRY, record))
    assert response.attempts == 2
    assert delays[0] >= 0.3 and trio.current_time() - start >= 0.3
    assert len(scenario.requests) == 2


@pytest.mark.parametrize("form", ["seconds", "http-date"])
async def test_429_retry_after_is_parsed_from_the_current_error(
    fault_server: FaultServer, form: str
) -> None:
    value = "30" if form == "seconds" else email.utils.formatdate(time.time() + 30, usegmt=True)
    url, _ = fault_server.script(error_reply(429, "slow down", headers={"Retry-After": value}))
    with pytest.raises(RateLimitError) as info:
        await chat(openai(url), retry=NO_RETRY)
    assert info.value.retry_after is not None and 28 <= info.value.retry_after <= 30


async def test_429_asking_for_too_long_a_wait_is_not_waited_for(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(error_reply(429, "later", headers={"Retry-After": "3600"}))
    with trio.fail_after(2):
        with pytest.raises(RateLimitError):
            await chat(openai(url))
    assert len(scenario.requests) == 1


async def test_context_length_400(fault_server: FaultServer) -> None:
    message = (
        "This model's maximum context length is 2048 tokens. However, you requested "
        "3000 tokens (2900 in the messages, 100 in the completion)."
    )
    url, scenario = fault_server.script(error_reply(400, message, code="context_length_exceeded"))
    with pytest.raises(ContextLengthError) as info:
        await chat(openai(url))
    assert (info.value.actual, info.value.limit) == (3000, 2048)
    assert len(scenario.requests) == 1


async def test_malformed_json_body_is_an_invalid_response(fault_server: FaultServer) -> None:
    url, _ = fault_server.script(Reply(body=[b'{"id": "x", "choices": [']))
    with pytest.raises(InvalidResponseError):
        await chat(openai(url))


async def test_connection_refused_is_a_retryable_connection_error() -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = openai(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(LlmConnectionError) as info:
        await chat(provider)
    assert info.value.is_retryable()


# -- timeouts --------------------------------------------------------------------------------


async def test_slow_response_past_the_attempt_timeout_is_retried(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(
        Reply(delay=5.0, body=[dumps(completion())]), json_reply(completion("fast"))
    )
    response = await chat(openai(url), timeouts=Timeouts(attempt=0.3, call=10))
    assert response.text == "fast" and response.attempts == 2
    await trio.sleep(0.2)
    assert scenario.disconnects == 1  # the slow attempt's connection was closed


async def test_call_deadline_is_final(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(Reply(delay=5.0, body=[dumps(completion())]))
    start = trio.current_time()
    with pytest.raises(LlmTimeoutError) as info:
        await chat(openai(url), timeouts=Timeouts(attempt=0.3, call=0.8))
    elapsed = trio.current_time() - start
    # Attempts of 0.3 s were retried until the 0.8 s deadline; never past it.
    assert info.value.scope == "call" and not info.value.is_retryable()
    assert len(scenario.requests) >= 2
    assert 0.8 <= elapsed < 1.3


async def test_stream_stalling_between_events_times_out(fault_server: FaultServer) -> None:
    body = [*sse(chunk({"role": "assistant", "content": "a"}), done=False), 5.0]
    url, _ = fault_server.script(sse_reply(*body, framing="chunked"))
    events, error = await stream_until_error(
        openai(url), timeouts=Timeouts(attempt=2, idle=0.3, call=10)
    )
    assert isinstance(error, LlmTimeoutError)
    assert [type(e) for e in events] == [Content]  # delivered: so not retried


# -- streams ----------------------------------------------------------------------------------


def _text_stream(*texts: str, usage: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": t}) for t in texts]
    events.append(chunk({}, "stop"))
    if usage is not None:
        events.append(usage_chunk(usage))
    return events


async def test_stream_assembles_text_and_usage(fault_server: FaultServer) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}
    url, scenario = fault_server.script(
        sse_reply(*sse(*_text_stream("He", "ll", "o", usage=usage)))
    )
    events = await stream(openai(url))
    assert [e.text for e in events if isinstance(e, Content)] == ["He", "ll", "o"]
    final = events[-1]
    assert isinstance(final, Finish)
    assert final.response.text == "Hello" and final.response.usage == Usage(10, 3)
    (req,) = scenario.requests
    assert req.body["stream"] is True and req.body["stream_options"] == {"include_usage": True}


async def test_comments_crlf_event_lines_and_no_space_after_data(
    fault_server: FaultServer,
) -> None:
    first = dumps(chunk({"role": "assistant", "content": "A"}))
    second = dumps(chunk({"content": "B"}, "stop"))
    body = (
        b": keep-alive\r\n\r\n"
        b"event: message\r\nid: 1\r\ndata:" + first + b"\r\n\r\n"
        b": another comment\r\n"
        b"data: " + second[:20] + b"\r\ndata: " + second[20:] + b"\r\n\r\n"
        b"data: [DONE]\r\n\r\n"
    )
    url, _ = fault_server.script(sse_reply(body))
    events = await stream(openai(url))
    final = events[-1]
    assert isinstance(final, Finish) and final.response.text == "AB"


async def test_utf8_split_across_network_chunks(fault_server: FaultServer) -> None:
    raw = b"".join(p for p in sse(*_text_stream("你好, ", "wörld 🎉")) if isinstance(p, bytes))
    cut = raw.index("好".encode()) + 1  # inside the 3-byte character
    cut2 = raw.index("🎉".encode()) + 2
    url, _ = fault_server.script(
        sse_reply(raw[:cut], 0.05, raw[cut:cut2], 0.05, raw[cut2:], framing="chunked")
    )
    events = await stream(openai(url))
    final = events[-1]
    assert isinstance(final, Finish) and final.response.text == "你好, wörld 🎉"


async def test_tool_call_deltas_in_many_pieces_openai_and_llama_styles(
    fault_server: FaultServer,
) -> None:
    def piece(index: int, args: str, first: bool, repeat: bool) -> dict[str, Any]:
        call: dict[str, Any] = {"index": index, "function": {"arguments": args}}
        if first or repeat:
            call |= {"id": f"call_{index}", "type": "function"}
            call["function"]["name"] = ["get_weather", "get_time"][index]
        return chunk({"tool_calls": [call]})

    for repeat in (False, True):  # OpenAI sends id/name once, llama.cpp every time
        args0 = ['{"ci', 'ty": "Pa', 'ris"}']
        args1 = ['{"tz"', ': "UTC"}']
        events = [chunk({"role": "assistant", "content": None})]
        events += [piece(0, args0[0], True, repeat), piece(1, args1[0], True, repeat)]
        events += [piece(0, a, False, repeat) for a in args0[1:]]
        events += [piece(1, a, False, repeat) for a in args1[1:]]
        events.append(chunk({}, "tool_calls"))
        url, _ = fault_server.script(sse_reply(*sse(*events)))
        got = await stream(openai(url))
        final = got[-1]
        assert isinstance(final, Finish)
        calls = final.response.message.tool_calls
        assert calls is not None
        assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
            ("call_0", "get_weather", '{"city": "Paris"}'),
            ("call_1", "get_time", '{"tz": "UTC"}'),
        ]
        assert final.response.message.content is None
        assert final.response.finish_reason == "tool_calls"
        chunks = [c for e in got if isinstance(e, ToolCalls) for c in e.calls]
        assert [c.name for c in chunks if c.name] == ["get_weather", "get_time"]


async def test_streamed_reply_equals_the_non_streamed_one(fault_server: FaultServer) -> None:
    calls = [
        {"id": "call_9", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]
    usage = {"prompt_tokens": 7, "completion_tokens": 4, "total_tokens": 11}
    whole = completion(
        "Sure.", tool_calls=calls, reasoning="think", finish="tool_calls", usage=usage
    )
    pieces = [
        chunk({"role": "assistant", "reasoning_content": "thi"}),
        chunk({"reasoning_content": "nk"}),
        chunk({"content": "Su"}),
        chunk({"content": "re."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_9",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"a"'},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}),
        chunk({}, "tool_calls"),
        usage_chunk(usage),
    ]
    url, _ = fault_server.script(json_reply(whole), sse_reply(*sse(*pieces)))
    provider = openai(url)
    plain = await chat(provider)
    events = await stream(provider)
    final = events[-1]
    assert isinstance(final, Finish)
    assert final.response == plain


async def test_stream_cut_mid_event_after_output_is_not_retried(fault_server: FaultServer) -> None:
    first = sse(chunk({"role": "assistant", "content": "partial"}), done=False)
    half = dumps(chunk({"content": "more"}))[:15]
    url, scenario = fault_server.script(
        sse_reply(*first, b"data: " + half, framing="chunked", cut=True)
    )
    events, error = await stream_until_error(openai(url))
    assert isinstance(error, StreamError) and error.truncated
    assert [type(e) for e in events] == [Content]
    assert len(scenario.requests) == 1  # output was delivered: never retried


async def test_stream_cut_before_output_is_retried(fault_server: FaultServer) -> None:
    head = sse(chunk({"role": "assistant"}), done=False)
    url, scenario = fault_server.script(
        sse_reply(*head, framing="chunked", cut=True), sse_reply(*sse(*_text_stream("ok")))
    )
    events = await stream(openai(url))
    assert isinstance(events[0], Retrying) and events[0].error_kind == "llm_stream"
    final = events[-1]
    assert isinstance(final, Finish) and final.response.text == "ok"
    assert final.response.attempts == 2 and len(scenario.requests) == 2


async def test_eof_without_done_or_finish_reason_is_a_truncated_stream(
    fault_server: FaultServer,
) -> None:
    body = sse(*_text_stream("abc")[:-1], done=False)  # no finish_reason, no [DONE]
    url, _ = fault_server.script(sse_reply(*body, framing="close"))
    events, error = await stream_until_error(openai(url))
    assert isinstance(error, StreamError) and error.truncated and "incomplete" in str(error)
    assert any(isinstance(e, Content) for e in events)


async def test_malformed_json_in_a_stream(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(sse_reply(*sse(chunk({"content": "a"}), "{not json")))
    events, error = await stream_until_error(openai(url))
    assert isinstance(error, StreamError) and "parse failed" in str(error)
    assert not error.is_retryable()
    assert [e.text for e in events if isinstance(e, Content)] == ["a"]
    assert len(scenario.requests) == 1


async def test_empty_stream_body_is_a_stream_error_not_retried(fault_server: FaultServer) -> None:
    url, scenario = fault_server.script(sse_reply())
    _, error = await stream_until_error(openai(url))
    assert isinstance(error, StreamError) and "no events" in str(error)
    assert len(scenario.requests) == 1


@pytest.mark.parametrize("status", [401, 429, 503])
async def test_stream_http_errors_are_mapped_like_plain_calls(
    fault_server: FaultServer, status: int
) -> None:
    url, _ = fault_server.script(error_reply(status, "nope"))
    _, error = await stream_until_error(openai(url), retry=NO_RETRY)
    expected = {401: AuthenticationError, 429: RateLimitError, 503: RequestError}[status]
    assert type(error) is expected


async def test_server_answering_a_stream_with_json_is_accepted(fault_server: FaultServer) -> None:
    url, _ = fault_server.script(json_reply(completion("whole")))
    events = await stream(openai(url))
    assert [type(e) for e in events] == [Content, Finish]


async def test_reasoning_then_content_gives_content_first(fault_server: FaultServer) -> None:
    pieces = [
        chunk({"role": "assistant", "reasoning_content": "hmm"}),
        chunk({"content": "A"}),
        chunk({"content": "B"}, "stop"),
    ]
    url, _ = fault_server.script(sse_reply(*sse(*pieces)))
    events = await stream(openai(url))
    assert [type(e) for e in events] == [Thinking, ContentFirst, Content, Finish]


def test_assistant_tool_call_messages_are_sent_with_empty_content() -> None:
    config = OpenAIConfig(model="m")
    message = AssistantMessage(
        None,
        reasoning_content="secret thoughts",
        tool_calls=[AssistantToolCall("c1", FunctionCall("f"))],
    )
    request = ChatRequest(
        [user("q"), message, tool_result("c1", "42")],
        tools=[tool_definition("f")],
        tool_choice="auto",
    )
    body, _ = openai_request_body(request, config, stream=False)
    sent = json.loads(body)
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "id": "c1", "function": {"name": "f", "arguments": ""}}
        ],
    }
    assert sent["messages"][2] == {"role": "tool", "content": "42", "tool_call_id": "c1"}
    assert sent["tools"] == [{"type": "function", "function": {"name": "f"}}]
    assert sent["tool_choice"] == "auto"


# -- issue 11 regressions ------------------------------------------------------------


USAGE = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}


async def test_deepseek_preset_sends_reasoning_back_on_tool_call_turns_only(
    fault_server: FaultServer,
) -> None:
    url, scenario = fault_server.script(json_reply({"choices": []}))
    provider = OpenAICompatibleProvider(
        attrs.evolve(deepseek_preset("sk-deepseek-key"), base_url=url)
    )
    called = AssistantMessage(
        None,
        reasoning_content="think A",
        tool_calls=[AssistantToolCall("c1", FunctionCall("f", "{}"))],
    )
    answered = AssistantMessage("done", reasoning_content="think B")
    messages: list[Message] = [user("q"), called, tool_result("c1", "1"), answered, user("q")]
    await chat(provider, ChatRequest(messages))
    sent = scenario.requests[0].body["messages"]
    assert sent[1]["reasoning_content"] == "think A"
    assert "reasoning_content" not in sent[3]


@pytest.mark.parametrize(
    "event",
    [
        # OpenRouter: a chunk with a top-level error and finish_reason "error"
        {**chunk({"content": ""}, "error"), "error": {"code": 502, "message": "upstream died"}},
        # vLLM
        {"object": "error", "message": "engine failure", "type": "InternalError", "code": 400},
        # finish_reason "error" alone
        chunk({}, "error"),
    ],
)
async def test_mid_stream_error_shapes_are_errors_not_partial_answers(
    fault_server: FaultServer, event: dict[str, Any]
) -> None:
    url, _ = fault_server.script(sse_reply(*sse(*text_stream("partial"), event)))
    events, error = await stream_until_error(openai(url))
    assert not any(isinstance(e, Finish) for e in events)
    assert "partial" in [e.text for e in events if isinstance(e, Content)]
    assert isinstance(error, RequestError | StreamError)


async def test_error_object_with_a_space_after_the_brace_is_an_error(
    fault_server: FaultServer,
) -> None:
    raw = '{ "error": {"message": "quota exceeded", "type": "insufficient_quota"}}'
    url, _ = fault_server.script(sse_reply(*sse(*text_stream("partial"), raw)))
    events, error = await stream_until_error(openai(url))
    assert isinstance(error, StreamError) and "quota exceeded" in str(error)
    assert not any(isinstance(e, Finish) for e in events)


async def test_choices_null_and_delta_null_are_accepted(fault_server: FaultServer) -> None:
    pieces = [
        *text_stream("He", "llo"),
        {**chunk({}, "stop"), "choices": [{"index": 0, "delta": None, "finish_reason": "stop"}]},
        {**usage_chunk(USAGE), "choices": None},
    ]
    url, _ = fault_server.script(sse_reply(*sse(*pieces)))
    final = (await stream(openai(url)))[-1]
    assert isinstance(final, Finish)
    assert final.response.text == "Hello" and final.response.usage == Usage(10, 3)
    assert final.response.finish_reason == "stop"


async def test_finish_and_usage_then_a_clean_close_without_done_is_complete(
    fault_server: FaultServer,
) -> None:
    pieces = [*text_stream("abc"), chunk({}, "stop"), usage_chunk(USAGE)]
    url, _ = fault_server.script(sse_reply(*sse(*pieces, done=False), framing="close"))
    final = (await stream(openai(url)))[-1]
    assert isinstance(final, Finish) and final.response.text == "abc"
    assert final.response.usage == Usage(10, 3)


async def test_done_without_any_finish_reason_is_a_truncation_error(
    fault_server: FaultServer,
) -> None:
    url, scenario = fault_server.script(sse_reply(*sse(*text_stream("interrupted"))))
    events, error = await stream_until_error(openai(url))
    assert isinstance(error, StreamError) and error.truncated
    assert not any(isinstance(e, Finish) for e in events)
    assert len(scenario.requests) == 1  # output was delivered: not retried


@pytest.mark.parametrize("kind", ["server_error", "overloaded_error"])
async def test_openai_server_error_event_before_output_is_retried(
    fault_server: FaultServer, kind: str
) -> None:
    bad = sse_reply(*sse({"error": {"message": "try again", "type": kind}}))
    good = sse_reply(*sse(*text_stream("ok"), chunk({}, "stop")))
    url, scenario = fault_server.script(bad, good)
    final = (await stream(openai(url)))[-1]
    assert isinstance(final, Finish) and final.response.text == "ok"
    assert len(scenario.requests) == 2


async def test_refusal_text_has_its_own_stream_event(fault_server: FaultServer) -> None:
    pieces = [
        chunk({"role": "assistant", "refusal": ""}),
        chunk({"refusal": "I can't "}),
        chunk({"refusal": "help with that."}),
        chunk({}, "stop"),
    ]
    url, _ = fault_server.script(sse_reply(*sse(*pieces)))
    events = await stream(openai(url))
    assert [e.text for e in events if isinstance(e, Refusal)] == ["I can't ", "help with that."]
    final = events[-1]
    assert isinstance(final, Finish) and final.response.message.refusal == "I can't help with that."


async def test_a_404_from_a_base_url_without_v1_hints_at_the_path(
    fault_server: FaultServer,
) -> None:
    url, _ = fault_server.script(error_reply(404, "Not Found"))
    with pytest.raises(RequestError) as info:
        await chat(openai(url.removesuffix("/v1")), retry=RetryConfig(max_retries=0))
    assert "/v1" in str(info.value)


async def test_an_sse_line_over_the_cap_is_a_typed_error(fault_server: FaultServer) -> None:
    huge = b"data: " + b"x" * 5000  # no newline: a line that never ends
    url, _ = fault_server.script(sse_reply(huge, 2.0, framing="chunked"))
    provider = OpenAICompatibleProvider(
        OpenAIConfig(name="fault", base_url=url, model="m", max_event_bytes=1024)
    )
    with trio.fail_after(1):
        _, error = await stream_until_error(provider)
    assert isinstance(error, StreamError) and "1024" in str(error)


async def test_a_server_that_names_no_model_reports_the_model_asked_for(
    fault_server: FaultServer,
) -> None:
    nameless = [{**c, "model": ""} for c in [*text_stream("hi"), chunk({}, "stop")]]
    url, _ = fault_server.script(sse_reply(*sse(*nameless)), json_reply(completion("hi", model="")))
    final = (await stream(openai(url), ChatRequest([user("q")], model="smollm2")))[-1]
    assert isinstance(final, Finish) and final.response.model == "smollm2"
    assert (await chat(openai(url))).model == "test-model"  # the config's model
