"""PromptComposer: build a message list for every role, and validate it.

Builder style (each method returns the composer). Text goes in as a plain
string; parts (text, images, audio, files) as lists of content parts;
templates are rendered with their context first (their errors propagate).
Tool results are keyed by the real call id of the assistant message that
made the call.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from ..llm import (
    AssistantMessage,
    AudioPart,
    ChatRequest,
    ContentPart,
    DeveloperMessage,
    FilePart,
    FunctionCall,
    FunctionMessage,
    ImagePart,
    ImageUrl,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from ._errors import InvalidSequence
from ._template import PromptTemplate

TemplateLike = PromptTemplate | str


def text_part(text: str) -> TextPart:
    return TextPart(text)


def image_part(url: str, detail: Literal["auto", "low", "high"] | None = None) -> ImagePart:
    """An image by URL or ``data:`` URI (OpenAI's ``image_url`` part)."""
    return ImagePart(ImageUrl(url, detail))


def audio_part(data: str, format: str) -> AudioPart:
    """Base64 audio (``wav``, ``mp3``, ...)."""
    return msgspec.convert(
        {"type": "input_audio", "input_audio": {"data": data, "format": format}}, AudioPart
    )


def file_part(
    *, file_data: str | None = None, file_id: str | None = None, filename: str | None = None
) -> FilePart:
    """A file by base64 data or uploaded id."""
    if file_data is None and file_id is None:
        raise ValueError("a file part needs file_data or file_id")
    file = {"file_data": file_data, "file_id": file_id, "filename": filename}
    return msgspec.convert(
        {"type": "file", "file": {k: v for k, v in file.items() if v is not None}}, FilePart
    )


def tool_call(id: str, name: str, arguments: str | Mapping[str, Any] = "{}") -> ToolCall:
    """A tool call; mapping arguments are JSON-encoded."""
    if not isinstance(arguments, str):
        arguments = msgspec.json.encode(dict(arguments)).decode()
    return ToolCall(id, FunctionCall(name, arguments))


@functools.lru_cache(maxsize=128)
def _compiled(source: str) -> PromptTemplate:
    """A template given as text, compiled once (the composer never changes it)."""
    return PromptTemplate(source)


def _render(template: TemplateLike, context: Mapping[str, Any] | None) -> str:
    if isinstance(template, str):
        template = _compiled(template)
    return template.render(context)


class PromptComposer:
    """Builds a message list; see the module doc."""

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.messages: list[Message] = list(messages)

    @classmethod
    def from_messages(cls, messages: Iterable[Message]) -> PromptComposer:
        return cls(messages)

    def add(self, message: Message) -> PromptComposer:
        self.messages.append(message)
        return self

    # -- plain text --

    def system(self, text: str) -> PromptComposer:
        return self.add(SystemMessage(text))

    def developer(self, text: str) -> PromptComposer:
        return self.add(DeveloperMessage(text))

    def user(self, text: str) -> PromptComposer:
        return self.add(UserMessage(text))

    def assistant(
        self, text: str | None = "", *, tool_calls: Sequence[ToolCall] | None = None
    ) -> PromptComposer:
        """An assistant message; with ``tool_calls``, the calls it made.

        ``text`` defaults to ``""`` rather than None: some servers (llama.cpp)
        reject ``content: null`` next to tool calls.
        """
        calls = list(tool_calls) if tool_calls else None
        return self.add(AssistantMessage(text, tool_calls=calls))

    def tool(self, tool_call_id: str, content: str | Sequence[ContentPart]) -> PromptComposer:
        """The result of the call ``tool_call_id``."""
        body = content if isinstance(content, str) else list(content)
        return self.add(ToolMessage(body, tool_call_id))

    # -- templates --

    def system_template(
        self, template: TemplateLike, context: Mapping[str, Any] | None = None
    ) -> PromptComposer:
        return self.system(_render(template, context))

    def developer_template(
        self, template: TemplateLike, context: Mapping[str, Any] | None = None
    ) -> PromptComposer:
        return self.developer(_render(template, context))

    def user_template(
        self, template: TemplateLike, context: Mapping[str, Any] | None = None
    ) -> PromptComposer:
        return self.user(_render(template, context))

    def assistant_template(
        self, template: TemplateLike, context: Mapping[str, Any] | None = None
    ) -> PromptComposer:
        return self.assistant(_render(template, context))

    # -- content parts --

    def system_content(self, *parts: ContentPart) -> PromptComposer:
        return self.add(SystemMessage(list(parts)))

    def developer_content(self, *parts: ContentPart) -> PromptComposer:
        return self.add(DeveloperMessage(list(parts)))

    def user_content(self, *parts: ContentPart) -> PromptComposer:
        return self.add(UserMessage(list(parts)))

    def assistant_content(self, *parts: ContentPart) -> PromptComposer:
        return self.add(AssistantMessage(list(parts)))

    def tool_content(self, tool_call_id: str, *parts: ContentPart) -> PromptComposer:
        return self.add(ToolMessage(list(parts), tool_call_id))

    # -- finishing --

    def with_name(self, name: str) -> PromptComposer:
        """Set the author name of the last message (not of tool or function
        messages, which have none to set; then, and when empty, a no-op)."""
        if self.messages and not isinstance(self.messages[-1], ToolMessage | FunctionMessage):
            self.messages[-1] = msgspec.structs.replace(self.messages[-1], name=name)
        return self

    def validate(self, **rules: bool) -> PromptComposer:
        validate_messages(self.messages, **rules)
        return self

    def build(self) -> list[Message]:
        return list(self.messages)

    def build_request(self, model: str = "", **fields: Any) -> ChatRequest:
        """A :class:`ChatRequest` of these messages; ``fields`` set the others."""
        return ChatRequest(self.build(), model=model, **fields)

    def __len__(self) -> int:
        return len(self.messages)


def validate_messages(
    messages: Sequence[Message],
    *,
    allow_pending_calls: bool = False,
    strict_alternation: bool = False,
) -> None:
    """Check a message list before it is sent; :class:`InvalidSequence` names the
    first offending message.

    The rules: the list is not empty; a tool message follows (through
    other tool messages) an assistant message with tool calls, and its
    ``tool_call_id`` is one of those calls. Added (what every OpenAI-style
    API enforces): call ids of one assistant message are unique; each call is
    answered once; every call is answered before the next non-tool message,
    and by the end unless ``allow_pending_calls`` (a turn waiting for its tool
    results). ``strict_alternation`` adds one more: no two
    consecutive non-tool messages of the same role, except system/developer.
    """
    if not messages:
        raise InvalidSequence("the message list must not be empty")
    open_ids: set[str] = set()
    answered: set[str] = set()
    caller = -1
    previous: Message | None = None
    for i, msg in enumerate(messages):
        if isinstance(msg, ToolMessage):
            if not open_ids:
                raise InvalidSequence(
                    "a tool message must follow an assistant message with tool_calls", i
                )
            if msg.tool_call_id not in open_ids:
                raise InvalidSequence(
                    f"tool_call_id {msg.tool_call_id!r} matches no tool call of message[{caller}]",
                    i,
                )
            if msg.tool_call_id in answered:
                raise InvalidSequence(f"tool call {msg.tool_call_id!r} is answered twice", i)
            answered.add(msg.tool_call_id)
            previous = msg
            continue
        pending = open_ids - answered
        if pending:
            raise InvalidSequence(
                f"tool calls {sorted(pending)} of message[{caller}] have no result before it", i
            )
        if (
            strict_alternation
            and previous is not None
            and type(previous) is type(msg)
            and not isinstance(msg, SystemMessage | DeveloperMessage)
        ):
            raise InvalidSequence(f"two {msg.__struct_config__.tag} messages in a row", i)
        open_ids, answered = set(), set()
        if isinstance(msg, AssistantMessage) and msg.tool_calls:
            ids = [c.id for c in msg.tool_calls]
            if len(set(ids)) != len(ids):
                raise InvalidSequence("tool call ids repeat within one message", i)
            if any(not c for c in ids):
                raise InvalidSequence("a tool call has an empty id", i)
            open_ids, caller = set(ids), i
        previous = msg
    pending = open_ids - answered
    if pending and not allow_pending_calls:
        raise InvalidSequence(
            f"tool calls {sorted(pending)} of message[{caller}] have no result", len(messages)
        )
