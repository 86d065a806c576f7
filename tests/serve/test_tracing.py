"""OpenTelemetry spans of a served turn, read back with the SDK's in-memory exporter:
turn → model call → tool call → model call, GenAI attribute names as the semantic
conventions spell them, nested under the caller's span (its ``traceparent``)."""

from __future__ import annotations

import json

import trio
from opentelemetry import propagate
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.trace import StatusCode

from agcore_actors.agent import messages as am
from agcore_actors.llm import Usage
from agcore_actors.serve.tracing import Endpoint, TurnTracer
from tests.serve.runtime import served
from tests.serve.sse import connect_sse


def provider_and_exporter() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def test_a_turn_with_a_tool_call_makes_nested_genai_spans_under_the_caller() -> None:
    provider, exporter = provider_and_exporter()
    endpoints = {"scripted": Endpoint("openai", "api.example.com", 8443)}
    tracer = TurnTracer(provider.get_tracer("test"), endpoints=endpoints)
    caller = provider.get_tracer("caller")
    async with served(tracer=tracer) as s, s.client() as client:
        with caller.start_as_current_span("caller") as parent:
            headers = {"accept": "application/json"}
            propagate.inject(headers)
            r = await client.post("/v1/sessions/a/turns", json={"text": "add"}, headers=headers)
        assert r.json()["status"] == "completed"
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"caller", "invoke_agent bot", "chat scripted", "execute_tool add"}
    chats = [span for span in exporter.get_finished_spans() if span.name == "chat scripted"]
    assert len(chats) == 2
    turn, tool = spans["invoke_agent bot"], spans["execute_tool add"]
    assert turn.parent is not None and turn.parent.span_id == parent.get_span_context().span_id
    assert turn.context.trace_id == parent.get_span_context().trace_id
    for child in [tool, *chats]:
        assert child.parent is not None and child.parent.span_id == turn.context.span_id
    assert turn.attributes is not None and tool.attributes is not None
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.conversation.id"] == "a"
    assert turn.attributes["gen_ai.usage.input_tokens"] == 40
    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert tool.attributes["gen_ai.tool.call.id"] == "a1"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    for chat in chats:
        assert chat.attributes is not None
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == "scripted"
        assert chat.attributes["gen_ai.response.model"] == "scripted"
        assert chat.attributes["server.address"] == "api.example.com"
        assert chat.attributes["server.port"] == 8443
        assert chat.attributes["gen_ai.usage.output_tokens"] == 5
        assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 4
    assert chats[0].end_time is not None and tool.start_time is not None
    assert chats[0].end_time <= tool.start_time
    assert chats[0].attributes is not None and chats[1].attributes is not None
    assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("stop",)
    conventional(exporter)


async def test_a_cancelled_turn_ends_every_span() -> None:
    provider, exporter = provider_and_exporter()
    tracer = TurnTracer(provider.get_tracer("test"))
    async with served(tracer=tracer) as s, s.client() as client:
        events = []
        async with connect_sse(
            client, "POST", "/v1/sessions/a/turns", json={"text": "hold"}
        ) as src:
            async for event in src.aiter_sse():
                events.append(json.loads(event.data)["event"])
                if len(events) == 1:
                    await client.post("/v1/sessions/a/cancel")
        assert events[-1] == "turn_cancelled"
    spans = exporter.get_finished_spans()
    assert sorted(span.name for span in spans) == ["chat", "invoke_agent bot"]
    for span in spans:
        assert span.attributes is not None and span.attributes["error.type"] == "cancelled"
        assert span.status.status_code != StatusCode.ERROR


#: Every attribute name a span may carry, as the semantic conventions' package spells them.
CONVENTIONS = {
    value
    for module in (genai, error_attributes, server_attributes)
    for name, value in vars(module).items()
    if name.isupper() and isinstance(value, str)
}


def conventional(exporter: InMemorySpanExporter) -> None:
    """Every attribute of the turn's spans is a name of the semantic conventions."""
    for span in exporter.get_finished_spans():
        if span.name != "caller":
            assert span.attributes is not None
            assert set(span.attributes) <= CONVENTIONS, span.name


async def test_a_failed_model_call_has_error_status_and_the_errors_kind() -> None:
    provider, exporter = provider_and_exporter()
    tracer = TurnTracer(provider.get_tracer("test"), provider="scripted", model="m1")
    async with served(tracer=tracer) as s, s.client() as client:
        r = await client.post(
            "/v1/sessions/a/turns", json={"text": "fail"}, headers={"accept": "application/json"}
        )
        assert r.json()["status"] == "failed"
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"invoke_agent bot", "chat m1"}
    for span in spans.values():
        assert span.status.status_code == StatusCode.ERROR
        assert span.attributes is not None
        assert span.attributes["error.type"] == "llm_authentication"
    chat = spans["chat m1"].attributes
    assert chat is not None and chat["gen_ai.provider.name"] == "scripted"
    conventional(exporter)


async def test_a_streamed_call_reports_its_time_to_first_chunk_on_trios_clock() -> None:
    provider, exporter = provider_and_exporter()
    now = [0.0]
    clock = lambda: now.pop(0) if now else 0.25  # noqa: E731
    tracer = TurnTracer(provider.get_tracer("test"), provider="scripted", clock=clock)
    async with served(tracer=tracer) as s, s.client() as client:
        async with connect_sse(
            client, "POST", "/v1/sessions/a/turns", json={"text": "slow"}
        ) as src:
            events = [json.loads(event.data)["event"] async for event in src.aiter_sse()]
        assert events[-1] == "turn_completed"
    (chat,) = [span for span in exporter.get_finished_spans() if span.name.startswith("chat")]
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.response.time_to_first_chunk"] == 0.25
    assert chat.attributes["gen_ai.provider.name"] == "scripted"
    assert "error.type" not in chat.attributes  # a reply without usage still completed
    conventional(exporter)


async def test_many_concurrent_turns_some_cancelled_end_every_span_and_keep_no_state() -> None:
    provider, exporter = provider_and_exporter()
    tracer = TurnTracer(provider.get_tracer("test"), provider="scripted")
    texts = {f"s{i}": ["add", "hold", "fail", "slow"][i % 4] for i in range(24)}
    holding = {session for session, text in texts.items() if text == "hold"}
    async with served(tracer=tracer) as s, s.client() as client:

        async def one(session: str, text: str) -> None:
            r = await client.post(
                f"/v1/sessions/{session}/turns",
                json={"text": text},
                headers={"accept": "application/json"},
            )
            assert r.json()["status"] in {"completed", "failed", "cancelled"}
            holding.discard(session)

        async def cancel_holds() -> None:  # until each has ended (one may start late)
            while holding:
                await trio.sleep(0.05)
                for session in list(holding):
                    await client.post(f"/v1/sessions/{session}/cancel")

        async with trio.open_nursery() as nursery:
            for session, text in texts.items():
                nursery.start_soon(one, session, text)
            nursery.start_soon(cancel_holds)
    assert not tracer._turns
    spans = exporter.get_finished_spans()
    assert sum(span.name == "invoke_agent bot" for span in spans) == len(texts)
    for span in spans:
        assert span.end_time is not None
        assert span.attributes is not None
        if span.name.startswith("chat"):
            assert span.attributes["gen_ai.provider.name"] == "scripted"
    conventional(exporter)


def test_a_fallback_chain_has_one_chat_span_per_model_each_naming_its_own() -> None:
    provider, exporter = provider_and_exporter()
    endpoints = {
        "primary": Endpoint("openai", "api.openai.com", 443),
        "backup": Endpoint("anthropic", "api.anthropic.com", 443),
    }
    tracer = TurnTracer(
        provider.get_tracer("test"), provider="primary", model="gpt-x", endpoints=endpoints
    )
    usage = Usage(input_tokens=10, output_tokens=2)
    events: list[am.TurnEvent] = [
        am.TurnStarted(session="s", turn="t", agent="bot"),
        am.ModelFallback(
            from_provider="primary", from_model="gpt-x", to_provider="backup",
            to_model="claude-y", error_kind="rate_limit", error="429",
        ),
        am.UsageReported(
            usage, provider="backup", model="claude-y-2025", request_model="claude-y",
            response_id="msg_1", finish_reason="stop",
        ),
        am.TurnCompleted(am.TurnResult(session="s", turn="t", status="completed", usage=usage)),
    ]  # fmt: skip
    for event in events:
        tracer.observe("s", "t", event)
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"invoke_agent bot", "chat gpt-x", "chat claude-y"}
    failed, answered = spans["chat gpt-x"], spans["chat claude-y"]
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes is not None and answered.attributes is not None
    assert failed.attributes["error.type"] == "rate_limit"
    assert failed.attributes["gen_ai.provider.name"] == "openai"
    assert failed.attributes["server.address"] == "api.openai.com"
    assert answered.status.status_code == StatusCode.UNSET
    assert answered.attributes["gen_ai.provider.name"] == "anthropic"
    assert answered.attributes["server.address"] == "api.anthropic.com"
    assert answered.attributes["gen_ai.request.model"] == "claude-y"
    assert answered.attributes["gen_ai.response.model"] == "claude-y-2025"
    assert answered.attributes["gen_ai.response.id"] == "msg_1"
    assert answered.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    assert spans["invoke_agent bot"].status.status_code == StatusCode.UNSET
    assert not tracer._turns
    conventional(exporter)
