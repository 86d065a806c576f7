"""The transcript rules against the independent checker of ``tests/store/helpers.py``."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from agcore_actors.llm import AssistantMessage, Message, SystemMessage, ToolMessage
from agcore_actors.store import InvalidTranscript
from agcore_actors.store.policy import pending_after, repaired, synthetic_results
from tests.store.helpers import calls, problems, result, unanswered, user


@st.composite
def transcripts(draw: st.DrawFn) -> list[Message]:
    """Messages of every kind; call ids unique per transcript unless ``twin``."""
    out: list[Message] = []
    fresh = iter(range(1000))
    made: list[str] = []
    for kind in draw(st.lists(st.sampled_from(["user", "sys", "text", "calls", "result", "twin"]))):
        if kind == "user":
            out.append(user())
        elif kind == "sys":
            out.append(SystemMessage("s"))
        elif kind == "text":
            out.append(AssistantMessage("a"))
        elif kind in ("calls", "twin"):
            ids = [f"k{next(fresh)}" for _ in range(draw(st.integers(1, 3)))]
            if kind == "twin":
                ids.append(ids[0])
            made.extend(ids)
            out.append(calls(*ids))
        else:
            stray: bool = draw(st.booleans())
            if made or stray:
                out.append(result(draw(st.sampled_from(made or ["stray"]))))
    return out


@given(transcripts())
def test_repaired_is_always_a_valid_transcript(messages: list[Message]) -> None:
    assert problems(repaired(messages, "interrupted")) == []


@given(transcripts())
def test_a_valid_transcript_is_repaired_into_itself(messages: list[Message]) -> None:
    if not problems(messages):
        assert repaired(messages, "interrupted") == messages


@given(transcripts())
def test_pending_after_accepts_exactly_the_valid_transcripts(messages: list[Message]) -> None:
    if problems(messages, open_end=True):
        with pytest.raises(InvalidTranscript):
            pending_after([], messages)
    else:
        assert pending_after([], messages) == unanswered(messages)


@given(transcripts(), st.integers(0, 10))
def test_pending_after_is_the_same_in_one_run_or_in_two(messages: list[Message], cut: int) -> None:
    if problems(messages, open_end=True):
        return
    cut = min(cut, len(messages))
    assert pending_after(pending_after([], messages[:cut]), messages[cut:]) == pending_after(
        [], messages
    )


def test_synthetic_results_answer_in_call_order_with_the_status() -> None:
    out = synthetic_results(["x", "y"], "interrupted")
    assert all(isinstance(m, ToolMessage) for m in out)
    assert [(m.tool_call_id, m.content) for m in out if isinstance(m, ToolMessage)] == [
        ("x", "Error: tool call interrupted"),
        ("y", "Error: tool call interrupted"),
    ]
    assert problems([calls("y", "x"), *out]) == []
