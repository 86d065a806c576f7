"""OpenTelemetry spans of served turns, with the GenAI semantic-convention attributes.

Needs the ``otel`` extra. ``agcore-actors serve`` traces when the configuration says
``[telemetry] tracing = true`` (spans go out by OTLP, set up by :func:`otlp_provider`
from the standard ``OTEL_*`` variables). Embedding a
:class:`~agcore_actors.agent.SessionHost` yourself, make a :class:`TurnTracer` and feed
it each turn's events (docs/observability.md). The spans, nested under the caller's span
(the context current where the turn was started, or the W3C ``traceparent`` a request
carried)::

    invoke_agent {agent}        gen_ai.operation.name, gen_ai.agent.name,
    │                           gen_ai.conversation.id (the session), usage totals
    ├── chat {model}            gen_ai.provider.name, gen_ai.request.model,
    │                           gen_ai.response.model / id / finish_reasons,
    │                           gen_ai.response.time_to_first_chunk (s, streamed),
    │                           server.address, server.port, gen_ai.usage.*
    └── execute_tool {name}     gen_ai.tool.name, gen_ai.tool.call.id

A model-call span runs from the step's start (the turn's start, the end of the previous
step's tool calls, or the failure it fell back from) to the usage the response reported;
its provider and model are that call's (a fallback chain's spans differ), taken from the
events. Every span is ended by the turn's final event: a failed turn's open spans and the
turn's own have status ERROR and ``error.type`` set to the error's kind; a call that fell
back has the kind it failed with; a cancelled turn's open spans have ``error.type``
``cancelled`` (no ERROR status: cancelling is not a failure).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import trio
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from .._exports import publish
from ..agent import messages as am
from ..llm import Usage

__all__ = ["Endpoint", "TurnTracer", "otlp_provider"]

_CHUNKS = (am.TextDelta, am.ThinkingDelta, am.ContentStarted)


@attrs.frozen
class Endpoint:
    """A configured provider as spans name it: ``provider`` the semantic conventions'
    ``gen_ai.provider.name`` (``openai``, ``anthropic``...), ``address``/``port`` the
    server its calls go to (empty/0: left out)."""

    provider: str
    address: str = ""
    port: int = 0


def _now() -> float:
    """trio's clock inside a trio run (virtual time in tests), else the monotonic one."""
    try:
        return trio.current_time()
    except RuntimeError:
        return time.monotonic()


def _usage(span: Span, usage: Usage) -> None:
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens)
    span.set_attribute("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens)
    span.set_attribute("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens)


def _fail(span: Span, kind: str) -> None:
    span.set_attribute("error.type", kind)
    span.set_status(Status(StatusCode.ERROR, kind))


@attrs.define
class _Spans:
    parent: otel_context.Context
    turn: Span | None = None
    model: Span | None = None
    #: When the open model span started (``clock``), and whether it saw output yet.
    model_start: float = 0.0
    chunked: bool = False
    tools: dict[str, Span] = attrs.field(factory=dict)


class TurnTracer:
    """Spans from turn events (see the module docstring).

    ``provider`` and ``model`` name what a model call is assumed to ask until its events
    say otherwise (the host's default provider and model; a call that fails before any
    usage keeps them); ``endpoints`` maps the configured provider names the events carry
    to their :class:`Endpoint`; a name without one is its own ``gen_ai.provider.name``.
    ``clock`` times the first chunk (default: trio's clock in a trio run).

    Holds state only for turns begun and not yet ended: call :meth:`forget` for a turn
    begun that never started (refused before it ran).
    """

    def __init__(
        self,
        tracer: trace.Tracer | None = None,
        *,
        provider: str = "",
        model: str = "",
        endpoints: Mapping[str, Endpoint] | None = None,
        clock: Callable[[], float] = _now,
    ) -> None:
        self.tracer = tracer or trace.get_tracer("agcore_actors.serve")
        self.provider = provider
        self.model = model
        self.endpoints = dict(endpoints or {})
        self.clock = clock
        self._turns: dict[str, _Spans] = {}

    def begin(self, turn: str, parent: otel_context.Context | None = None) -> None:
        """A turn is about to start; its spans go under ``parent`` (default: the current
        context of the caller)."""
        self._turns[turn] = _Spans(parent if parent is not None else otel_context.get_current())

    def forget(self, turn: str) -> None:
        """Drop a turn begun that will have no events (no span was started yet)."""
        spans = self._turns.get(turn)
        if spans is not None and spans.turn is None:
            del self._turns[turn]

    def _where(self, span: Span, provider: str, model: str) -> None:
        """The provider, server and requested model of a model-call span."""
        name = provider or self.provider
        endpoint = self.endpoints.get(name) or Endpoint(name or "unknown")
        span.set_attribute("gen_ai.provider.name", endpoint.provider)
        if endpoint.address:
            span.set_attribute("server.address", endpoint.address)
        if endpoint.port:
            span.set_attribute("server.port", endpoint.port)
        if model:
            span.set_attribute("gen_ai.request.model", model)
        span.update_name(f"chat {model}".rstrip())

    def _model_span(self, spans: _Spans, provider: str = "", model: str = "") -> None:
        assert spans.turn is not None
        model = model or self.model
        spans.model = span = self.tracer.start_span(
            f"chat {model}".rstrip(),
            context=trace.set_span_in_context(spans.turn, spans.parent),
            kind=SpanKind.CLIENT,
            attributes={"gen_ai.operation.name": "chat"},
        )
        self._where(span, provider, model)
        spans.model_start, spans.chunked = self.clock(), False

    def _answered(self, span: Span, event: am.UsageReported) -> None:
        self._where(span, event.provider, event.request_model or event.model or self.model)
        if event.model:
            span.set_attribute("gen_ai.response.model", event.model)
        if event.response_id:
            span.set_attribute("gen_ai.response.id", event.response_id)
        if event.finish_reason:
            span.set_attribute("gen_ai.response.finish_reasons", [event.finish_reason])
        _usage(span, event.usage)

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
            case _ if isinstance(event, _CHUNKS) and spans.model is not None:
                if not spans.chunked:
                    spans.chunked = True
                    first = max(0.0, self.clock() - spans.model_start)
                    spans.model.set_attribute("gen_ai.response.time_to_first_chunk", first)
            case am.UsageReported() if spans.model is not None:
                self._answered(spans.model, event)
                spans.model.end()
                spans.model = None
            case am.ModelFallback() if spans.model is not None:
                self._where(spans.model, event.from_provider, event.from_model)
                _fail(spans.model, event.error_kind)
                spans.model.end()
                self._model_span(spans, event.to_provider, event.to_model)
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
                        _fail(span, status)
                    span.end()
                if not spans.tools and spans.model is None and spans.turn is not None:
                    self._model_span(spans)
            case am.TurnCompleted(result=r) | am.TurnCancelled(result=r) | am.TurnFailed(result=r):
                self._end(turn, spans, r)
            case _:
                pass

    def _end(self, turn: str, spans: _Spans, result: am.TurnResult) -> None:
        del self._turns[turn]
        kind = result.error_kind or "failed"
        for span in [*spans.tools.values(), *([spans.model] if spans.model else [])]:
            if result.status == "failed":
                _fail(span, kind)
            elif result.status == "cancelled":
                span.set_attribute("error.type", "cancelled")
            span.end()  # completed: a call whose response reported no usage
        if spans.turn is None:
            return
        _usage(spans.turn, result.usage)
        if result.status == "failed":
            _fail(spans.turn, kind)
        elif result.status == "cancelled":
            spans.turn.set_attribute("error.type", "cancelled")
        spans.turn.end()


def otlp_provider(service_name: str = "agcore-actors") -> Any:
    """An SDK ``TracerProvider`` exporting spans by OTLP (HTTP/protobuf) in batches,
    configured by the standard ``OTEL_*`` variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
    ``..._TRACES_ENDPOINT``, ``..._HEADERS``, ``OTEL_SERVICE_NAME``,
    ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``, ``OTEL_SDK_DISABLED``...);
    ``service_name`` is used when ``OTEL_SERVICE_NAME`` is unset. Call its
    ``shutdown()`` when done: it sends the spans still buffered (blocking, bounded by
    the exporter's timeout)."""
    import os

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    attributes = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": service_name}
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


publish(__name__, __all__)
