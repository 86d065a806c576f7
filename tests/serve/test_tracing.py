"""OpenTelemetry spans of a served turn, read back with the SDK's in-memory exporter:
turn → model call → tool call → model call, GenAI attribute names as the semantic
conventions spell them, nested under the caller's span (its ``traceparent``)."""

from __future__ import annotations

import json

from opentelemetry import propagate
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from agcore_actors.serve.tracing import TurnTracer
from tests.serve.runtime import served
from tests.serve.sse import connect_sse


def provider_and_exporter() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


async def test_a_turn_with_a_tool_call_makes_nested_genai_spans_under_the_caller() -> None:
    provider, exporter = provider_and_exporter()
    tracer = TurnTracer(provider.get_tracer("test"), provider="openai", model="fake-model")
    caller = provider.get_tracer("caller")
    async with served(tracer=tracer) as s, s.client() as client:
        with caller.start_as_current_span("caller") as parent:
            headers = {"accept": "application/json"}
            propagate.inject(headers)
            r = await client.post("/v1/sessions/a/turns", json={"text": "add"}, headers=headers)
        assert r.json()["status"] == "completed"
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"caller", "invoke_agent bot", "chat fake-model", "execute_tool add"}
    chats = [span for span in exporter.get_finished_spans() if span.name == "chat fake-model"]
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
        assert chat.attributes["gen_ai.request.model"] == "fake-model"
        assert chat.attributes["gen_ai.usage.output_tokens"] == 5
        assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 4
    assert chats[0].end_time is not None and tool.start_time is not None
    assert chats[0].end_time <= tool.start_time


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
