"""OpenTelemetry spans of served turns, with the GenAI semantic-convention attributes.

Needs ``opentelemetry-api`` (the ``otel`` extra). :class:`TurnTracer` turns the event
stream of each turn into spans, nested under the caller's span (the context current
where the turn was started, or the W3C ``traceparent`` a request carried)::

    invoke_agent {agent}        gen_ai.operation.name, gen_ai.agent.name,
    │                           gen_ai.conversation.id (the session), usage totals
    ├── chat {model}            gen_ai.provider.name, gen_ai.request.model,
    │                           gen_ai.usage.input_tokens / output_tokens /
    │                           cache_read.input_tokens / cache_creation.input_tokens /
    │                           reasoning.output_tokens
    └── execute_tool {name}     gen_ai.tool.name, gen_ai.tool.call.id

A model-call span runs from the step's start (the turn's start, or the end of the
previous step's tool calls) to the usage the response reported. Every span is ended
by the turn's final event; a failed turn's span has status ERROR and ``error.type``
set to the error's kind, a cancelled one ``error.type`` ``cancelled``.
"""

from __future__ import annotations

from typing import Any

import attrs
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .._exports import publish
from ..agent import messages as am
from ..llm import Usage

__all__ = ["TurnTracer"]


def _usage(span: Span, usage: Usage) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
    span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
    span.set_attribute("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens)


@attrs.define
class _Spans:
    parent: otel_context.Context
    turn: Span | None = None
    model: Span | None = None
    tools: dict[str, Span] = attrs.field(factory=dict)


class TurnTracer:
    """Spans from turn events (see the module docstring); ``provider`` and ``model``
    name what the model-call spans call (empty: the attribute is left out)."""

    def __init__(
        self, tracer: trace.Tracer | None = None, *, provider: str = "", model: str = ""
    ) -> None:
        self.tracer = tracer or trace.get_tracer("agcore_actors.serve")
        self.provider = provider
        self.model = model
        self._turns: dict[str, _Spans] = {}

    def begin(self, turn: str, parent: otel_context.Context | None = None) -> None:
        """A turn is about to start; its spans go under ``parent`` (default: the current
        context of the caller)."""
        self._turns[turn] = _Spans(parent if parent is not None else otel_context.get_current())

    def _model_span(self, spans: _Spans) -> None:
        assert spans.turn is not None
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
        if self.provider:
            attributes["gen_ai.provider.name"] = self.provider
        if self.model:
            attributes["gen_ai.request.model"] = self.model
        spans.model = self.tracer.start_span(
            f"chat {self.model}".rstrip(),
            context=trace.set_span_in_context(spans.turn, spans.parent),
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )

    def observe(self, session: str, turn: str, event: am.TurnEvent) -> None:
        """Advance ``turn``'s spans by ``event``."""
        spans = self._turns.get(turn)
        if spans is None:
            spans = self._turns[turn] = _Spans(otel_context.get_current())
        match event:
            case am.TurnStarted(agent=agent):
                spans.turn = self.tracer.start_span(
                    f"invoke_agent {agent}",
                    context=spans.parent,
                    kind=SpanKind.INTERNAL,
                    attributes={
                        "gen_ai.operation.name": "invoke_agent",
                        "gen_ai.agent.name": agent,
                        "gen_ai.conversation.id": session,
                    },
                )
                self._model_span(spans)
            case am.UsageReported(usage=usage) if spans.model is not None:
                _usage(spans.model, usage)
                spans.model.end()
                spans.model = None
            case am.ToolCallStarted(call_id=call_id, name=name) if spans.turn is not None:
                spans.tools[call_id] = self.tracer.start_span(
                    f"execute_tool {name}",
                    context=trace.set_span_in_context(spans.turn, spans.parent),
                    kind=SpanKind.INTERNAL,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.id": call_id,
                    },
                )
            case am.ToolCallFinished(call_id=call_id, status=status):
                span = spans.tools.pop(call_id, None)
                if span is not None:
                    if status != "ok":
                        span.set_attribute("error.type", status)
                        span.set_status(Status(StatusCode.ERROR, status))
                    span.end()
                if not spans.tools and spans.model is None and spans.turn is not None:
                    self._model_span(spans)
            case am.TurnCompleted(result=r) | am.TurnCancelled(result=r) | am.TurnFailed(result=r):
                self._end(turn, spans, r)
            case _:
                pass

    def _end(self, turn: str, spans: _Spans, result: am.TurnResult) -> None:
        del self._turns[turn]
        for span in [*spans.tools.values(), *([spans.model] if spans.model else [])]:
            span.set_attribute("error.type", "cancelled")
            span.end()
        if spans.turn is None:
            return
        _usage(spans.turn, result.usage)
        if result.status == "failed":
            spans.turn.set_attribute("error.type", result.error_kind or "failed")
            spans.turn.set_status(Status(StatusCode.ERROR, result.error_kind))
        elif result.status == "cancelled":
            spans.turn.set_attribute("error.type", "cancelled")
        spans.turn.end()


publish(__name__, __all__)
