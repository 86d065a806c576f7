"""The data model: a chat message keeps every field of the LLM layer's messages."""

from __future__ import annotations

import msgspec
import pytest

from agcore_actors.llm import (
    AssistantMessage,
    DeveloperMessage,
    FunctionCall,
    FunctionMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_actors.memory import StoredMessage

FULL: list[Message] = [
    SystemMessage("be brief", name="sys"),
    DeveloperMessage("dev notes", name="dev"),
    UserMessage([TextPart("hi")], name="ann"),
    AssistantMessage(
        "",
        reasoning_content="thinking",
        refusal="I cannot help with that.",
        name="bot",
        tool_calls=[ToolCall("call_1", FunctionCall("add", '{"a": 1}'))],
    ),
    ToolMessage("2", "call_1"),
    FunctionMessage("3", "legacy"),
]


@pytest.mark.parametrize("message", FULL, ids=lambda m: type(m).__name__)
def test_a_message_round_trips_through_chat_message_with_every_field(message: Message) -> None:
    stored = msgspec.json.decode(msgspec.json.encode(message), type=StoredMessage)
    back = msgspec.json.decode(msgspec.json.encode(stored), type=Message)
    assert back == message
