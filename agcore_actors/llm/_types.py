"""Chat types: the OpenAI Chat Completions shapes, used as the common language.

Every provider speaks these types; the OpenAI-compatible provider sends them
as they are, the Anthropic provider converts at its boundary. Here are the
messages of a conversation (their content parts, tool calls and reasoning),
the normalised finish reason and one message's JSON line; the request that
carries them is :mod:`._request`'s. They are msgspec Structs that match the
real API:

- decoding is lenient: unknown fields are ignored, ``content`` may be a
  string, a list of parts, ``null`` or missing;
- encoding is exact: optional fields left at their default are omitted (no
  ``null`` noise), discriminators (``role``, ``type``) are always written,
  ``image_url`` parts as the API nests them.

All types are frozen and plain data, so they cross actor boundaries in strict
mode unchanged.
"""

from __future__ import annotations

from typing import Literal

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


# -- tool calls ------------------------------------------------------------------------


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
