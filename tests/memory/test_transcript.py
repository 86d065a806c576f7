"""Transcripts as JSON Lines: what is exported imports back unchanged, and an
import that would corrupt a transcript is refused with nothing written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agcore_actors.memory import NotFound, SerializationError, StoredMessage
from agcore_actors.memory.lowlevel import (
    ConversationMemory,
    MemoryBackend,
    messages_from_jsonl,
    messages_to_jsonl,
)
from tests.memory.helpers import FakeClock, make_store

SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryBackend]:
    s = make_store(str(request.param), tmp_path, FakeClock())
    yield s
    s.close()


def calls(call_id: str) -> list[StoredMessage]:
    return [
        StoredMessage(
            role="assistant",
            content="",
            tool_calls=[
                {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        ),
        StoredMessage(role="tool", content="ok", tool_call_id=call_id),
    ]


@pytest.mark.parametrize("separator", SEPARATORS, ids=lambda s: f"U+{ord(s):04X}")
def test_an_export_imports_back_whatever_line_separators_the_content_holds(
    separator: str,
) -> None:
    messages = [
        StoredMessage(role="user", content=f"one{separator}two"),
        StoredMessage(role="assistant", content=[{"type": "text", "text": f"a{separator}b"}]),
    ]
    assert messages_from_jsonl(messages_to_jsonl(messages)) == messages


def test_an_unknown_role_is_refused_naming_its_line() -> None:
    text = '{"role":"user","content":"hi"}\n{"role":"wizard","content":"boo"}\n'
    with pytest.raises(SerializationError, match="line 2"):
        messages_from_jsonl(text)


def test_importing_the_same_transcript_twice_is_refused_and_writes_nothing(
    store: MemoryBackend,
) -> None:
    conversation = ConversationMemory(store, "s1")
    jsonl = messages_to_jsonl([StoredMessage(role="user", content="go"), *calls("call_1")])
    assert conversation.import_jsonl(jsonl) == 3
    with pytest.raises(SerializationError, match="call_1"):
        conversation.import_jsonl(jsonl)
    assert len(conversation.history()) == 3
    # Replacing is fine: the old transcript goes.
    assert conversation.import_jsonl(jsonl, replace=True) == 3


def test_a_transcript_that_repeats_a_tool_call_id_is_refused(store: MemoryBackend) -> None:
    jsonl = messages_to_jsonl([*calls("call_1"), *calls("call_1")])
    conversation = ConversationMemory(store, "s1")
    with pytest.raises(SerializationError, match="call_1"):
        conversation.import_jsonl(jsonl, replace=True)
    assert conversation.history() == []


def test_exporting_a_session_without_a_transcript_is_not_found(store: MemoryBackend) -> None:
    with pytest.raises(NotFound, match="s1"):
        ConversationMemory(store, "s1").export_jsonl()
    ConversationMemory(store, "s1").extend([StoredMessage(role="user", content="hi")])
    assert ConversationMemory(store, "s1").export_jsonl() == '{"role":"user","content":"hi"}\n'
