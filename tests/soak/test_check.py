"""The soak's transcript check (benchmarks/soak_check.py) rejects every kind of invalid
transcript it claims to, and accepts the shapes a turn may validly end in."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from agcore_actors.llm import (
    AssistantMessage,
    AssistantToolCall,
    FunctionCall,
    Message,
    ToolMessage,
    UserMessage,
)
from agcore_actors.store.messages import LogEntry


@pytest.fixture
def check(load_benchmark: Callable[[str], ModuleType]) -> ModuleType:
    return load_benchmark("soak_check")


def log(*turns: tuple[str, list[Message]]) -> list[LogEntry]:
    entries: list[LogEntry] = []
    for turn, messages in turns:
        for message in messages:
            entries.append(LogEntry(index=len(entries), turn=turn, created_at=0.0, message=message))
    return entries


def calls(*ids: str) -> AssistantMessage:
    return AssistantMessage(
        tool_calls=[AssistantToolCall(i, FunctionCall("add", "{}")) for i in ids]
    )


def result(call: str) -> ToolMessage:
    return ToolMessage("5", call)


ASK, ANSWER = UserMessage("q"), AssistantMessage("5")


def test_completed_failed_and_bare_turns_are_valid(check: Any) -> None:
    entries = log(
        ("t1", [ASK, calls("a", "b"), result("b"), result("a"), ANSWER]),
        ("t2", [ASK, calls("c"), result("c")]),  # failed after its tools
        ("t3", [ASK]),  # failed before the model answered
        ("t4", [ASK, ANSWER]),
    )
    assert check.entry_errors(entries) == []


@pytest.mark.parametrize(
    ("why", "turns"),
    [
        ("unanswered call", [("t1", [ASK, calls("a", "b"), result("a"), ANSWER])]),
        ("second result", [("t1", [ASK, calls("a"), result("a"), result("a"), ANSWER])]),
        ("stray result", [("t1", [ASK, calls("a"), result("a"), result("z")])]),
        ("no user first", [("t1", [calls("a"), result("a"), ANSWER])]),
        ("two users", [("t1", [ASK, ASK, ANSWER])]),
        ("answer not last", [("t1", [ASK, ANSWER, calls("a"), result("a")])]),
        ("turns interleave", [("t1", [ASK]), ("t2", [ASK]), ("t1", [ANSWER])]),
        (
            "call id reused",
            [("t1", [ASK, calls("a"), result("a")]), ("t2", [ASK, calls("a"), result("a")])],
        ),
        ("result after answer", [("t1", [ASK, calls("a"), ANSWER, result("a")])]),
    ],
)
def test_an_invalid_transcript_is_caught(
    check: Any, why: str, turns: list[tuple[str, list[Message]]]
) -> None:
    assert check.entry_errors(log(*turns)), why


def test_an_acknowledged_turn_is_present_only_as_acknowledged(check: Any) -> None:
    ask = UserMessage(check.turn_text("s1", 3))
    entries = log(("t", [ask, calls("a"), result("a"), AssistantMessage("Done.")]))
    ack = {"session": "s1", "turn": "t", "k": 3, "status": "completed", "text": "Done."}
    assert check._present(ack, entries)
    assert not check._present({**ack, "text": "Other."}, entries)
    assert not check._present({**ack, "k": 4}, entries)
    assert not check._present({**ack, "turn": "u"}, entries)
    cut = log(("t", [ask, calls("a"), result("a")]))
    assert not check._present(ack, cut)
    assert check._present({**ack, "status": "failed"}, cut)
