"""ScriptedProvider behind the real ProviderActor, in virtual time."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from agcore_actors import ActorRef, ActorSystem
from agcore_actors.llm import (
    AssistantMessage,
    AssistantToolCall,
    Chat,
    ChatRequest,
    ChatStream,
    Content,
    ContentFirst,
    Finish,
    FunctionCall,
    GetUsage,
    LlmTimeoutError,
    ProviderConfig,
    ProviderMsg,
    ProviderRegistry,
    RateLimitError,
    RetryConfig,
    Retrying,
    StreamError,
    StreamEvent,
    Thinking,
    Timeouts,
    ToolCalls,
    Usage,
    provider_spec,
    user,
)
from agcore_actors.testing import ScriptedProvider, ScriptedReply, ScriptedToolCall, elapsed

FAST = RetryConfig(base_delay=0.5, max_delay=1.0, jitter=0.0)
REQUEST = ChatRequest([user("q")])


async def spawn(
    system: ActorSystem, provider: ScriptedProvider, timeouts: Timeouts | None = None
) -> ActorRef[ProviderMsg]:
    registry = ProviderRegistry().register(provider)
    config = ProviderConfig(retry=FAST, timeouts=timeouts or Timeouts(), seed=0)
    return await system.root.start_child(provider_spec("llm", registry=registry, config=config))


async def events_of(llm: ActorRef[ProviderMsg]) -> list[StreamEvent]:
    async with llm.stream(ChatStream(REQUEST)) as events:
        return [event async for event in events]


async def test_a_rate_limit_then_a_reply_is_retried_after_the_servers_wait(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    provider = ScriptedProvider(
        [RateLimitError("scripted", 2.0), ScriptedReply(text="Hello", usage=Usage(10, 2))]
    )
    llm = await spawn(system, provider)
    with elapsed() as took:
        response = await llm.ask(Chat(REQUEST))
    assert response.text == "Hello" and response.attempts == 2 and response.usage == Usage(10, 2)
    assert took.seconds == pytest.approx(2.0)
    assert provider.attempts == 2 and provider.requests == [REQUEST, REQUEST]
    assert (await llm.ask(GetUsage())).total == Usage(10, 2)


async def test_streamed_pieces_arrive_on_the_scripted_clock(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    provider = ScriptedProvider(
        [ScriptedReply(reasoning="hmm", text=["Hel", "lo"], latency=1.0, gap=0.5)]
    )
    llm = await spawn(system, provider)
    times: list[float] = []
    start = trio.current_time()
    async with llm.stream(ChatStream(REQUEST)) as events:
        async for event in events:
            times.append(trio.current_time() - start)
            if isinstance(event, Finish):
                assert event.response.text == "Hello" and event.response.reasoning == "hmm"
    assert times == pytest.approx([1.0, 1.5, 2.0, 2.0])  # the finish comes with "lo"


async def test_tool_calls_keep_malformed_arguments_as_written(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    call = ScriptedToolCall("lookup", '{"q": ', id="c1")
    provider = ScriptedProvider([ScriptedReply(tool_calls=[call, ScriptedToolCall("f", {"a": 1})])])
    llm = await spawn(system, provider)
    response = await llm.ask(Chat(REQUEST))
    assert response.finish_reason == "tool_calls" and response.message.content is None
    assert response.message.tool_calls == [
        AssistantToolCall("c1", FunctionCall("lookup", '{"q": ')),
        AssistantToolCall("call_1_1", FunctionCall("f", '{"a":1}')),
    ]
    events = await events_of(llm)
    assert sum(isinstance(e, ToolCalls) for e in events) == 2


async def test_a_stall_mid_stream_ends_in_an_idle_timeout_not_a_retry(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    provider = ScriptedProvider([ScriptedReply(text=["a", "b"], stall_after=1)])
    llm = await spawn(system, provider, Timeouts(attempt=30, idle=5, call=100))
    got: list[StreamEvent] = []
    with elapsed() as took, pytest.raises(LlmTimeoutError) as info:
        async with llm.stream(ChatStream(REQUEST)) as events:
            async for event in events:
                got.append(event)
    assert info.value.scope == "idle" and info.value.seconds == 5
    assert got == [Content("a")] and took.seconds == pytest.approx(5.0)
    assert provider.attempts == 1


async def test_a_stalled_attempt_before_any_output_times_out_and_is_retried(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    provider = ScriptedProvider([ScriptedReply(stall_after=0), "ok"])
    llm = await spawn(system, provider, Timeouts(attempt=3, idle=60, call=100))
    events = await events_of(llm)
    assert isinstance(events[0], Retrying) and events[0].error_kind == "llm_timeout"
    final = events[-1]
    assert isinstance(final, Finish) and final.response.text == "ok"
    with elapsed() as took:
        assert (await llm.ask(Chat(REQUEST))).text == "ok"  # the last item repeats
    assert took.seconds == 0


async def test_an_error_after_output_reaches_the_caller_unretried(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    cut = StreamError("scripted", "cut", truncated=True)
    provider = ScriptedProvider([ScriptedReply(text=["a", "b"], fail_after=1, error=cut), "x"])
    llm = await spawn(system, provider)
    got: list[StreamEvent] = []
    with pytest.raises(StreamError):
        async with llm.stream(ChatStream(REQUEST)) as events:
            async for event in events:
                got.append(event)
    assert got == [Content("a")] and provider.attempts == 1


async def test_a_function_script_sees_each_request_and_attempt(
    system: ActorSystem, autojump_clock: trio.testing.MockClock
) -> None:
    def answer(request: ChatRequest, attempt: int) -> AssistantMessage:
        return AssistantMessage(f"{request.messages[-1].content} #{attempt}", "why")

    llm = await spawn(system, ScriptedProvider(answer))
    assert (await llm.ask(Chat(REQUEST))).text == "q #1"
    events = await events_of(llm)
    assert [type(e) for e in events] == [Thinking, ContentFirst, Finish]


def test_fail_after_needs_an_error() -> None:
    with pytest.raises(ValueError):
        ScriptedReply(fail_after=1)
