"""PromptComposer and validate_messages: the seed's tests (§14.2) and the added rules."""

from __future__ import annotations

import msgspec
import pytest

from agcore_actors.llm import (
    AssistantMessage,
    AudioPart,
    ChatRequest,
    DeveloperMessage,
    FilePart,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
    content_text,
)
from agcore_actors.prompt import (
    InvalidSequence,
    PromptComposer,
    PromptTemplate,
    VariableNotFound,
    audio_part,
    file_part,
    image_part,
    text_part,
    tool_call,
    validate_messages,
)


def test_composer_basic() -> None:
    msgs = PromptComposer().system("You are helpful").user("Hello").assistant("Hi there!").build()
    assert len(msgs) == 3
    assert msgs == [
        SystemMessage("You are helpful"),
        UserMessage("Hello"),
        AssistantMessage("Hi there!"),
    ]


def test_composer_tool() -> None:
    msgs = (
        PromptComposer()
        .system("You are helpful")
        .user("Weather?")
        .assistant("Let me check", tool_calls=[tool_call("call_123", "weather", {"city": "Paris"})])
        .tool("call_123", "Sunny, 25°C")
        .build()
    )
    assert len(msgs) == 4
    tool = msgs[3]
    assert isinstance(tool, ToolMessage)
    assert tool.tool_call_id == "call_123"
    assert content_text(tool.content) == "Sunny, 25°C"
    call = msgs[2]
    assert isinstance(call, AssistantMessage) and call.tool_calls is not None
    assert call.tool_calls[0].function.arguments == '{"city":"Paris"}'
    validate_messages(msgs)


def test_validate_messages_ok() -> None:
    validate_messages(PromptComposer().system("s").user("u").build())


def test_validate_messages_empty() -> None:
    with pytest.raises(InvalidSequence, match="must not be empty"):
        validate_messages([])


def test_templates_for_every_role_and_errors_propagate() -> None:
    greeting = PromptTemplate("Hello {{ name }}", name="greeting")
    c = (
        PromptComposer()
        .system_template("You are {{ role }}.", {"role": "a tutor"})
        .developer_template("Answer in {{ lang }}.", {"lang": "中文"})
        .user_template(greeting, {"name": "Ann"})
        .assistant_template("{% for x in xs %}{{ x }}{% endfor %}", {"xs": [1, 2]})
    )
    assert c.build() == [
        SystemMessage("You are a tutor."),
        DeveloperMessage("Answer in 中文."),
        UserMessage("Hello Ann"),
        AssistantMessage("12"),
    ]
    with pytest.raises(VariableNotFound) as info:
        PromptComposer().user_template(greeting, {})
    assert info.value.template == "greeting"


def test_multimodal_parts_and_tool_content() -> None:
    msgs = (
        PromptComposer()
        .user_content(
            text_part("What is in this picture and this recording?"),
            image_part("data:image/png;base64,iVBOR", detail="low"),
            audio_part("UklGRg==", "wav"),
            file_part(file_id="file-1", filename="a.pdf"),
        )
        .assistant("", tool_calls=[tool_call("c1", "ocr")])
        .tool_content("c1", text_part("text found"), image_part("https://x/y.png"))
        .system_content(text_part("sys"))
        .developer_content(text_part("dev"))
        .assistant_content(text_part("done"))
        .build()
    )
    first = msgs[0]
    assert isinstance(first, UserMessage) and isinstance(first.content, list)
    kinds = [type(p) for p in first.content]
    assert kinds == [TextPart, ImagePart, AudioPart, FilePart]
    wire = msgspec.to_builtins(first)
    assert wire["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBOR", "detail": "low"},
    }
    assert wire["content"][2] == {
        "type": "input_audio",
        "input_audio": {"data": "UklGRg==", "format": "wav"},
    }
    assert wire["content"][3] == {
        "type": "file",
        "file": {"file_id": "file-1", "filename": "a.pdf"},
    }
    tool = msgs[2]
    assert isinstance(tool, ToolMessage) and tool.tool_call_id == "c1"
    assert isinstance(tool.content, list) and len(tool.content) == 2
    with pytest.raises(ValueError):
        file_part()


def test_with_name_and_request() -> None:
    c = PromptComposer().with_name("nobody")  # empty: no-op
    c.user("hi").with_name("alice")
    assert c.build() == [UserMessage("hi", name="alice")]
    c.assistant("", tool_calls=[tool_call("c", "f")]).tool("c", "r").with_name("ignored")
    assert c.build()[-1] == ToolMessage("r", "c")
    request = c.build_request("gpt-x", temperature=0.2)
    assert isinstance(request, ChatRequest)
    assert request.model == "gpt-x" and request.temperature == 0.2 and len(request.messages) == 3
    assert len(c) == 3
    assert PromptComposer.from_messages(c.build()).build() == c.build()


def seq(*msgs: Message) -> list[Message]:
    return list(msgs)


def call(*ids: str) -> AssistantMessage:
    return AssistantMessage("", tool_calls=[tool_call(i, "f") for i in ids])


@pytest.mark.parametrize(
    ("messages", "index", "fragment"),
    [
        (seq(UserMessage("u"), ToolMessage("r", "c1")), 1, "must follow an assistant"),
        (seq(call("c1"), ToolMessage("r", "zz")), 1, "matches no tool call of message[0]"),
        (seq(call("c1"), ToolMessage("r", "c1"), ToolMessage("r", "c1")), 2, "answered twice"),
        (seq(call("c1", "c2"), ToolMessage("r", "c1"), UserMessage("u")), 2, "['c2']"),
        (seq(call("c1"), UserMessage("u"), ToolMessage("r", "c1")), 1, "no result before"),
        (seq(UserMessage("u"), call("c1")), 2, "have no result"),
        (seq(call("c1", "c1")), 0, "repeat"),
        # A tool message answers only the assistant right before it.
        (
            seq(call("c1"), ToolMessage("r", "c1"), AssistantMessage("x"), ToolMessage("r", "c1")),
            3,
            "must follow",
        ),
    ],
)
def test_validate_messages_rules(messages: list[Message], index: int, fragment: str) -> None:
    with pytest.raises(InvalidSequence) as info:
        validate_messages(messages)
    assert info.value.index == index
    assert fragment in str(info.value)
    assert str(info.value).startswith(f"message[{index}]")


def test_validate_messages_accepts_parallel_results_in_any_order() -> None:
    validate_messages(
        seq(
            SystemMessage("s"),
            UserMessage("u"),
            call("a", "b"),
            ToolMessage("rb", "b"),
            ToolMessage("ra", "a"),
            AssistantMessage("done"),
        )
    )
    validate_messages(seq(UserMessage("u"), call("a")), allow_pending_calls=True)


def test_strict_alternation_is_optional() -> None:
    doubled = seq(SystemMessage("a"), SystemMessage("b"), UserMessage("u"), UserMessage("v"))
    validate_messages(doubled)
    with pytest.raises(InvalidSequence, match="two user messages in a row") as info:
        validate_messages(doubled, strict_alternation=True)
    assert info.value.index == 3
    PromptComposer(doubled[:3]).validate(strict_alternation=True)
