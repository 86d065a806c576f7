"""Chat types: the OpenAI Chat Completions shapes, used as the common language.

Every provider speaks these types; the OpenAI-compatible provider sends them
as they are, the Anthropic provider converts at its boundary. They are
msgspec Structs that match the real API:

- decoding is lenient: unknown fields are ignored, ``content`` may be a
  string, a list of parts, ``null`` or missing;
- encoding is exact: optional fields left at their default are omitted (no
  ``null`` noise), discriminators (``role``, ``type``) are always written,
  ``image_url`` parts, ``stop`` as a string or a list, nested ``json_schema``.

``extra_body`` and ``extra_headers`` of :class:`ChatRequest` never reach the
body as keys: the provider merges ``extra_body`` into the body and sends
``extra_headers`` as HTTP headers (see :func:`agcore_actors.llm.wire.openai_request_body`).

All types are frozen and plain data, so they cross actor boundaries in strict
mode unchanged.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

# -- content parts ---------------------------------------------------------------------


class TextPart(msgspec.Struct, frozen=True, tag_field="type", tag="text"):
    """A piece of text content."""

    text: str


class ImageUrl(msgspec.Struct, frozen=True, omit_defaults=True):
    """An image by URL or ``data:`` URL."""

    url: str
    detail: Literal["auto", "low", "high"] | None = None


class ImagePart(msgspec.Struct, frozen=True, tag_field="type", tag="image_url"):
    """An image in user content."""

    image_url: ImageUrl


class InputAudio(msgspec.Struct, frozen=True):
    """Base64 audio data and its format."""

    data: str
    format: Literal["wav", "mp3", "aac", "flac", "opus", "pcm16"]


class AudioPart(msgspec.Struct, frozen=True, tag_field="type", tag="input_audio"):
    """Audio in user content."""

    input_audio: InputAudio


class FileData(msgspec.Struct, frozen=True, omit_defaults=True):
    """A file inline (``file_data``) or by id."""

    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None


class FilePart(msgspec.Struct, frozen=True, tag_field="type", tag="file"):
    """A file in user content."""

    file: FileData


class RefusalPart(msgspec.Struct, frozen=True, tag_field="type", tag="refusal"):
    """The model's refusal, as a content part."""

    refusal: str


ContentPart = TextPart | ImagePart | AudioPart | FilePart | RefusalPart
Content = str | list[ContentPart]


def content_text(content: Content | None) -> str:
    """The text of a message's content: a string as is, text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.text for p in content if isinstance(p, TextPart))


# -- tools -----------------------------------------------------------------------------


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


class FunctionCall(msgspec.Struct, frozen=True):
    """The function part of a tool call: the name and the raw argument text."""

    name: str
    #: The arguments as the model wrote them: a JSON-encoded string (maybe invalid).
    arguments: str = ""


class AssistantToolCall(msgspec.Struct, frozen=True, tag_field="type", tag="function"):
    """A tool call the model made, as it sits in an assistant message; ``id`` is the
    key its result (a :class:`ToolMessage`) must carry."""

    id: str
    function: FunctionCall


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


# -- reasoning -------------------------------------------------------------------------


class ThinkingBlock(
    msgspec.Struct, frozen=True, omit_defaults=True, tag_field="type", tag="thinking"
):
    """A block of the model's reasoning with the provider's ``signature`` of it.

    Anthropic requires the blocks of an assistant turn that called tools to be sent
    back unchanged, signature included; other providers never receive them.
    """

    thinking: str = ""
    signature: str | None = None


class RedactedThinkingBlock(msgspec.Struct, frozen=True, tag_field="type", tag="redacted_thinking"):
    """A block of reasoning the provider encrypted: only its opaque ``data`` travels."""

    data: str


ReasoningBlock = ThinkingBlock | RedactedThinkingBlock


# -- messages --------------------------------------------------------------------------


class SystemMessage(
    msgspec.Struct, frozen=True, omit_defaults=True, tag_field="role", tag="system"
):
    """The system prompt."""

    content: Content
    name: str | None = None


class DeveloperMessage(
    msgspec.Struct, frozen=True, omit_defaults=True, tag_field="role", tag="developer"
):
    """Developer instructions (OpenAI's successor of the system role)."""

    content: Content
    name: str | None = None


class UserMessage(msgspec.Struct, frozen=True, omit_defaults=True, tag_field="role", tag="user"):
    """What the user said: text or parts (images, audio, files)."""

    content: Content
    name: str | None = None


class AssistantMessage(
    msgspec.Struct, frozen=True, omit_defaults=True, tag_field="role", tag="assistant"
):
    """The model's reply. ``content`` is None when it only called tools.

    ``reasoning_content`` is the model's thinking as text (DeepSeek, Qwen, llama.cpp
    reasoning models, Anthropic thinking blocks); OpenAI-compatible providers send it
    back only as their config's ``send_reasoning`` says. ``reasoning_blocks`` keeps
    the provider's signed reasoning blocks in order (Anthropic's ``thinking`` and
    ``redacted_thinking``): the Anthropic provider sends them back first in the turn,
    no other provider sends them at all.
    """

    content: Content | None = None
    reasoning_content: str | None = None
    refusal: str | None = None
    name: str | None = None
    tool_calls: list[AssistantToolCall] | None = None
    reasoning_blocks: list[ReasoningBlock] | None = None

    @property
    def text(self) -> str:
        return content_text(self.content)


class ToolMessage(msgspec.Struct, frozen=True, omit_defaults=True, tag_field="role", tag="tool"):
    """The result of one tool call, keyed by the call's real id."""

    content: Content
    tool_call_id: str


class FunctionMessage(
    msgspec.Struct, frozen=True, omit_defaults=True, tag_field="role", tag="function"
):
    """Deprecated by OpenAI; accepted for old transcripts."""

    content: Content | None
    name: str


Message = (
    SystemMessage
    | DeveloperMessage
    | UserMessage
    | AssistantMessage
    | ToolMessage
    | FunctionMessage
)


def system(text: str) -> SystemMessage:
    """A system message of ``text``."""
    return SystemMessage(text)


def user(text: str) -> UserMessage:
    """A user message of ``text``."""
    return UserMessage(text)


def assistant(text: str) -> AssistantMessage:
    """An assistant message of ``text``."""
    return AssistantMessage(text)


def tool_result(tool_call_id: str, text: str) -> ToolMessage:
    """The result ``text`` of the tool call ``tool_call_id``."""
    return ToolMessage(text, tool_call_id)


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


# -- the common reply ------------------------------------------------------------------

FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "function_call", "other"]

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "function_call": "function_call",
    # Anthropic stop reasons
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "pause_turn": "other",
}


def finish_reason(raw: str | None) -> FinishReason | None:
    """Normalise a provider's finish/stop reason; unknown strings become ``other``."""
    if raw is None:
        return None
    return _FINISH.get(raw, "other")


# -- persistence ----------------------------------------------------------------------

_message_decoder: msgspec.json.Decoder[Message] = msgspec.json.Decoder(Message)
_message_encoder = msgspec.json.Encoder()


def message_to_json(message: Message) -> str:
    """One compact JSON line (a JSON-lines transcript keeps one message per line)."""
    return _message_encoder.encode(message).decode()


def message_from_json(line: str | bytes) -> Message:
    """Parse one line written by :func:`message_to_json` (or any OpenAI message);
    raises ``ValueError`` with the reason on bad input."""
    try:
        return _message_decoder.decode(line)
    except msgspec.DecodeError as exc:
        raise ValueError(f"not a chat message: {exc}") from None
