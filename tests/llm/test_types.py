"""Wire types, errors, registry, hooks, stream assembly and usage: no network."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.llm import (
    AssistantMessage,
    AssistantToolCall,
    AuthenticationError,
    ChatRequest,
    ChatResponse,
    Content,
    ContentFirst,
    FunctionCall,
    HookContext,
    HookEvent,
    HookExecutor,
    HookResult,
    ImagePart,
    ImageUrl,
    JsonSchema,
    Message,
    OpenAIConfig,
    Pricing,
    ProviderRegistry,
    ResponseFormatJsonSchema,
    TextPart,
    Thinking,
    ToolCalls,
    UnknownProviderError,
    Usage,
    UserMessage,
    block,
    force_tool,
    message_from_json,
    message_to_json,
    preset,
    response_summary,
    tool_definition,
    tool_result,
    user,
)
from agcore_actors.llm import (
    OpenAICompatibleProvider as Openai,
)
from agcore_actors.llm.policy import (
    DEFAULT_BLOCK_REASON,
    CostTracker,
    cost,
    usage_from_anthropic,
    usage_from_openai,
)
from agcore_actors.llm.wire import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatDelta,
    DeltaToolCall,
    StreamAssembler,
    finish_reason,
    merge_chunks,
    openai_request_body,
)


def body_of(request: ChatRequest, **config: object) -> dict[str, object]:
    body, _ = openai_request_body(request, OpenAIConfig(model="m", **config), stream=False)  # type: ignore[arg-type]
    result: dict[str, object] = json.loads(body)
    return result


def test_openai_shapes_are_exact() -> None:
    image = UserMessage([TextPart("look"), ImagePart(ImageUrl("https://x/y.png", "low"))])
    schema = ResponseFormatJsonSchema(JsonSchema("answer", {"type": "object"}, strict=True))
    body = body_of(ChatRequest([image], stop="END", response_format=schema, temperature=0.0))
    assert body == {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
                ],
            }
        ],
        "model": "m",
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": True},
        },
        "stop": "END",
        "temperature": 0.0,
    }


def test_reasoning_is_stripped_unless_asked_for() -> None:
    request = ChatRequest([user("q"), AssistantMessage("a", reasoning_content="r"), user("q2")])
    assert "reasoning_content" not in body_of(request)["messages"][1]  # type: ignore[index]
    kept = body_of(request, send_reasoning=True)["messages"][1]  # type: ignore[index]
    assert kept["reasoning_content"] == "r"


def test_extra_body_from_config_and_request_merge_into_the_top_level() -> None:
    request = ChatRequest([user("q")], extra_body={"enable_thinking": True, "top_k": 5})
    body = body_of(request, extra_body={"top_k": 1, "seed": 3})
    assert body["enable_thinking"] is True and body["top_k"] == 5 and body["seed"] == 3
    assert "extra_body" not in body and "extra_headers" not in body


def test_lenient_decoding() -> None:
    raw = {
        "id": "x",
        "choices": [
            {
                "message": {"role": "assistant", "content": None, "annotations": [], "audio": None},
                "finish_reason": "weird_new_reason",
                "extra": 1,
            }
        ],
        "brand_new_field": {"a": 1},
    }
    completion = msgspec.json.decode(json.dumps(raw), type=ChatCompletion)
    assert completion.choices is not None
    assert completion.usage is None and completion.choices[0].message.content is None
    assert finish_reason(completion.choices[0].finish_reason) == "other"
    chunk = msgspec.json.decode(
        b'{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"x"}}]}}]}',
        type=ChatCompletionChunk,
    )
    assert chunk.choices is not None and chunk.choices[0].delta is not None
    call = (chunk.choices[0].delta.tool_calls or [])[0]
    assert call.index == 1 and call.id is None and call.function is not None


def test_messages_round_trip_as_json_lines() -> None:
    messages: list[Message] = [
        user("hi 你好"),
        AssistantMessage(None, tool_calls=[AssistantToolCall("c1", FunctionCall("f", "{}"))]),
        tool_result("c1", "ok"),
    ]
    lines = [message_to_json(m) for m in messages]
    assert all("\n" not in line for line in lines)
    assert [message_from_json(line) for line in lines] == messages
    with pytest.raises(ValueError, match="not a chat message"):
        message_from_json('{"role": "robot"}')


def test_presets_and_unknown_kind() -> None:
    assert preset("DeepSeek", "k").base_url.startswith("https://api.deepseek.com")
    assert preset("tongyi", "k").name == "qwen" and preset("openai", "k", "gpt-x").model == "gpt-x"
    with pytest.raises(ValueError, match="unknown provider type"):
        preset("nope", "k")


def test_error_messages_name_provider_and_status_never_the_key() -> None:
    error = AuthenticationError("openai", 401, "bad key")
    assert str(error).startswith("openai:") and "401" in str(error)
    assert error.kind == "llm_authentication" and not error.is_retryable()
    provider = Openai(OpenAIConfig(api_key="sk-abcdef"))
    assert "sk-abcdef" not in repr(provider.config)


def test_registry_semantics() -> None:
    registry = ProviderRegistry()
    assert registry.get_default() is None
    with pytest.raises(UnknownProviderError):
        registry.set_default("x")
    a, b = Openai(OpenAIConfig(name="a")), Openai(OpenAIConfig(name="a"))
    registry.register(a)
    assert registry.get_default() is None  # the first one does not become the default
    registry.register(b)  # silently overwrites
    assert registry.get("a") is b and registry.names() == ["a"]
    registry.set_default("a")
    assert registry.get_default() is b and registry.resolve(None) == ("a", b)
    with pytest.raises(UnknownProviderError):
        registry.resolve("missing")


async def test_hooks_run_in_order_and_block_with_the_default_reason() -> None:
    order: list[str] = []

    def hook(name: str, result: HookResult | None) -> object:
        async def run(ctx: HookContext) -> HookResult | None:
            order.append(name)
            return result

        return run

    hooks = HookExecutor()
    hooks.register(HookEvent.PRE_REQUEST, hook("a", None))  # type: ignore[arg-type]
    hooks.register(HookEvent.PRE_REQUEST, hook("b", block()))  # type: ignore[arg-type]
    hooks.register(HookEvent.PRE_REQUEST, hook("c", block("second")))  # type: ignore[arg-type]
    hooks.register(HookEvent.ON_ERROR, hook("x", None))  # type: ignore[arg-type]
    reason = await hooks.block_reason(HookContext(HookEvent.PRE_REQUEST))
    assert reason == DEFAULT_BLOCK_REASON and order == ["a", "b", "c"]  # no short-circuit


def test_classification_of_seed_004() -> None:
    assembler = StreamAssembler()
    feed = assembler.feed
    assert feed(ChatDelta(content="")) == []
    assert feed(ChatDelta(reasoning="r1")) == [Thinking("r1")]
    assert feed(ChatDelta(reasoning="r2", content="c1")) == [Thinking("r2"), ContentFirst("c1")]
    assert feed(ChatDelta(content="c2")) == [Content("c2")]
    both = feed(ChatDelta(content="c3", tool_calls=[DeltaToolCall(0, "id", "f", "{")]))
    assert [type(e) for e in both] == [ToolCalls, Content]
    message = assembler.message()
    assert message.content == "c1c2c3" and message.reasoning_content == "r1r2"


def test_a_call_reusing_index_zero_with_a_new_id_is_a_new_call() -> None:
    message = merge_chunks(
        [
            ChatDelta(tool_calls=[DeltaToolCall(0, "a", "f", "{}")]),
            ChatDelta(tool_calls=[DeltaToolCall(0, "b", "g", "{}")]),
        ]
    )
    assert message is not None and message.tool_calls is not None
    assert [c.id for c in message.tool_calls] == ["a", "b"]


def test_merge_chunks_without_data_is_none() -> None:
    assert merge_chunks([]) is None
    assert merge_chunks([ChatDelta(usage=Usage(1, 1), model="m")]) is None


@given(st.lists(st.text(max_size=5), max_size=20), st.integers(0, 3))
def test_merged_arguments_are_the_concatenation(pieces: list[str], index: int) -> None:
    deltas = [ChatDelta(tool_calls=[DeltaToolCall(index, "id1", "fn", "")])]
    deltas += [ChatDelta(tool_calls=[DeltaToolCall(index, arguments=p)]) for p in pieces]
    message = merge_chunks(deltas)
    assert message is not None and message.tool_calls is not None
    (call,) = message.tool_calls
    assert call.function.arguments == "".join(pieces) and call.function.name == "fn"


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(0, 10**6))
def test_usage_conventions(prompt: int, completion: int, cached: int) -> None:
    openai = usage_from_openai(prompt, completion, cached)
    assert openai.total_input_tokens == prompt  # cached is inside prompt_tokens
    assert openai.cache_read_tokens == min(cached, prompt)
    anthropic = usage_from_anthropic(prompt, completion, cached, 7)
    assert anthropic.total_input_tokens == prompt + cached + 7  # outside input_tokens
    assert anthropic.input_tokens == prompt


def test_cost_tracker_accumulates_every_counter() -> None:
    tracker = CostTracker(Pricing(input=1.0, output=2.0, cache_read=0.1, cache_write=1.25))
    tracker.add(Usage(100, 10, 1000, 50, 4))
    tracker.add(Usage(1, 1, 0, 0, 0))
    assert tracker.total == Usage(101, 11, 1000, 50, 4) and tracker.calls == 2
    assert tracker.last == Usage(1, 1)
    assert tracker.cost == pytest.approx(cost(tracker.total, tracker.pricing or Pricing()))
    assert tracker.cost == pytest.approx((101 + 22 + 100 + 62.5) / 1e6)
    tracker.reset()
    assert tracker.total == Usage() and tracker.calls == 0


def test_response_summary_clips() -> None:
    response = ChatResponse(
        message=AssistantMessage(
            "x" * 900, tool_calls=[AssistantToolCall("c", FunctionCall("f", "y" * 500))]
        )
    )
    summary = response_summary(response)
    assert len(summary["text"]) == 503 and summary["tool_calls_count"] == 1
    assert len(summary["tool_calls"][0]["arguments"]) == 203


def test_a_full_request_crosses_an_actor_boundary_unchanged() -> None:
    """What strict mode does to every Chat message: a msgpack round trip."""
    request = ChatRequest(
        [
            UserMessage([TextPart("a"), ImagePart(ImageUrl("data:image/png;base64,AA=="))]),
            AssistantMessage(
                None, reasoning_content="r", tool_calls=[AssistantToolCall("c", FunctionCall("f"))]
            ),
            tool_result("c", "ok"),
        ],
        model="m",
        stop=["x", "y"],
        tools=[tool_definition("f", {"type": "object", "properties": {"n": {"type": "integer"}}})],
        tool_choice=force_tool("f"),
        response_format=ResponseFormatJsonSchema(JsonSchema("s", {"type": "object"})),
        extra_body={"enable_thinking": True, "nested": {"k": [1, 2.5, None]}},
        extra_headers={"X-A": "b"},
        logit_bias={"50256": -100.0},
    )
    copy = msgspec.msgpack.decode(msgspec.msgpack.encode(request), type=ChatRequest)
    assert copy == request


def test_no_default_provider_is_a_clear_error() -> None:
    registry = ProviderRegistry()
    registry.register(Openai(OpenAIConfig(name="a"))).register(Openai(OpenAIConfig(name="b")))
    with pytest.raises(UnknownProviderError, match="no default provider"):
        registry.resolve(None)
