"""Transcript rules: a transcript built by the rules is valid; every way of breaking
them is reported; synthetic results close whatever a turn left open."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.agent._transcript import synthetic_results, transcript_errors, unanswered_calls
from agcore_actors.llm import AssistantMessage, FunctionCall, ToolCall, ToolMessage, UserMessage

Message = UserMessage | AssistantMessage | ToolMessage


def _call(call_id: str) -> ToolCall:
    return ToolCall(call_id, FunctionCall("t", "{}"))


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[list[Message], bool]:
    """A transcript of turns; the last assistant block may be left open (flag True)."""
    messages: list[Message] = []
    next_id = 0
    open_left = False
    for turn in range(draw(st.integers(0, 4))):
        messages.append(UserMessage(f"u{turn}"))
        for _ in range(draw(st.integers(0, 3))):
            ids = [f"c{next_id + i}" for i in range(draw(st.integers(1, 3)))]
            next_id += len(ids)
            messages.append(AssistantMessage(None, tool_calls=[_call(i) for i in ids]))
            answered = draw(st.permutations(ids))
            messages.extend(ToolMessage("ok", i) for i in answered)
        messages.append(AssistantMessage(f"a{turn}"))
    if len(messages) > 0 and draw(st.booleans()):
        ids = [f"c{next_id + i}" for i in range(draw(st.integers(1, 3)))]
        messages.append(AssistantMessage(None, tool_calls=[_call(i) for i in ids]))
        messages.extend(ToolMessage("ok", i) for i in ids[: draw(st.integers(0, len(ids) - 1))])
        open_left = True
    return messages, open_left


@given(transcripts())
def test_a_closed_transcript_is_valid_and_an_open_one_is_not(
    case: tuple[list[Message], bool],
) -> None:
    messages, open_left = case
    assert bool(transcript_errors(messages)) == open_left
    assert bool(unanswered_calls(messages)) == open_left


@given(transcripts())
def test_synthetic_results_make_any_transcript_valid(case: tuple[list[Message], bool]) -> None:
    messages, _ = case
    closed = messages + synthetic_results(messages, "cancelled")
    assert transcript_errors(closed) == []
    assert synthetic_results(closed, "cancelled") == []


def test_each_broken_rule_is_reported() -> None:
    ask = AssistantMessage(None, tool_calls=[_call("a"), _call("b")])
    assert transcript_errors([ask, ToolMessage("x", "a")])  # b unanswered
    assert transcript_errors(
        [ask, ToolMessage("x", "a"), ToolMessage("x", "a"), ToolMessage("x", "b")]
    )
    assert transcript_errors([ToolMessage("x", "z")])  # result without a call
    late: list[Message] = [ask, ToolMessage("x", "a"), UserMessage("hi"), ToolMessage("x", "b")]
    assert transcript_errors(late)
    reused: list[Message] = [ask, ToolMessage("x", "a"), ToolMessage("x", "b"), ask]
    assert any("used twice" in e for e in transcript_errors(reused))


def test_synthetic_results_name_the_status() -> None:
    ask = AssistantMessage(None, tool_calls=[_call("a"), _call("b")])
    results = synthetic_results([ask, ToolMessage("x", "b")], "interrupted")
    assert results == [ToolMessage("Error: tool call interrupted", "a")]
