"""Chat requests: what one Chat Completions call asks of the model besides the messages.

:class:`ChatRequest` carries the conversation (:mod:`._types`' messages) with the tools
it offers (:class:`ToolDefinition`), how the model must use them (:data:`ToolChoice`),
the shape of the output (:data:`ResponseFormat`) and the sampling options. Like the
message types, these are frozen msgspec Structs that match the real API: encoding
omits optional fields left at their default and always writes the discriminators
(``type``), ``stop`` as a string or a list and a nested ``json_schema``; decoding
ignores unknown fields.

``extra_body`` and ``extra_headers`` of :class:`ChatRequest` never reach the
body as keys: the provider merges ``extra_body`` into the body and sends
``extra_headers`` as HTTP headers (see :func:`agcore_actors.llm.wire.openai_request_body`).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from ._types import Message

# -- tools offered ---------------------------------------------------------------------


class FunctionDefinition(msgspec.Struct, frozen=True, omit_defaults=True):
    """A function the model may call: its name, description and JSON Schema."""

    name: str
    description: str | None = None
    #: A JSON Schema object; omitted means "no parameters".
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class ToolDefinition(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    """A tool as the model sees it (``{"type": "function", "function": {...}}``).

    Not to be confused with :class:`agcore_actors.tools.Tool`, the protocol of a tool
    implementation: a tool registry produces these for a request.
    """

    function: FunctionDefinition


class FunctionName(msgspec.Struct, frozen=True):
    """A function's name (in a forced tool choice)."""

    name: str


class NamedToolChoice(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    """Force a call of one function."""

    function: FunctionName


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice


def tool_definition(
    name: str,
    parameters: dict[str, Any] | None = None,
    description: str | None = None,
    *,
    strict: bool | None = None,
) -> ToolDefinition:
    """A :class:`ToolDefinition` of one function (``parameters`` is a JSON Schema)."""
    return ToolDefinition(FunctionDefinition(name, description, parameters, strict))


def force_tool(name: str) -> NamedToolChoice:
    """A tool choice that makes the model call ``name``."""
    return NamedToolChoice(FunctionName(name))


# -- request ---------------------------------------------------------------------------


class StreamOptions(msgspec.Struct, frozen=True, omit_defaults=True):
    """``stream_options`` of a streamed request (set by the provider)."""

    include_usage: bool | None = None


class JsonSchema(msgspec.Struct, frozen=True, omit_defaults=True):
    """A named JSON Schema for structured output."""

    name: str
    schema_: dict[str, Any] | None = msgspec.field(default=None, name="schema")
    description: str | None = None
    strict: bool | None = None


class ResponseFormatText(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    """Plain text output (the default)."""


class ResponseFormatJsonObject(msgspec.Struct, frozen=True, tag_field="type", tag="json_object"):
    """Any JSON object as output."""


class ResponseFormatJsonSchema(msgspec.Struct, frozen=True, tag_field="type", tag="json_schema"):
    """Output that follows ``json_schema``."""

    json_schema: JsonSchema


ResponseFormat = ResponseFormatText | ResponseFormatJsonObject | ResponseFormatJsonSchema


class ChatRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    """One Chat Completions request.

    ``model`` may be left empty: the provider fills in its configured model.
    ``stream`` and ``stream_options`` are set by the provider for streamed
    calls. ``tool_choice`` is never sent without ``tools``. ``extra_body`` is
    merged into the top level of the body (e.g. DashScope's
    ``enable_thinking``); ``extra_headers`` are sent as HTTP headers.
    """

    messages: list[Message]
    model: str = ""
    frequency_penalty: float | None = None
    logit_bias: dict[str, float] | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    n: int | None = None
    presence_penalty: float | None = None
    response_format: ResponseFormat | None = None
    seed: int | None = None
    service_tier: str | None = None
    stop: str | list[str] | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    temperature: float | None = None
    top_p: float | None = None
    tools: list[ToolDefinition] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    reasoning_effort: str | None = None
    #: Tokens a model may spend thinking: Anthropic's ``thinking.budget_tokens``; not
    #: an OpenAI field, so an OpenAI-compatible provider does not send it.
    thinking_budget: int | None = None
    user: str | None = None
    metadata: dict[str, str] | None = None
    store: bool | None = None
    extra_body: dict[str, Any] | None = None
    extra_headers: dict[str, str] | None = None
