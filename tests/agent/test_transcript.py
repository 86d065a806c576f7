"""Transcript rules: a transcript built by the rules is valid; every way of breaking
them is reported; synthetic results close whatever a turn left open."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.agent._transcript import synthetic_results, transcript_errors, unanswered_calls
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from agcore_actors.store import InvalidTranscript
from agcore_actors.store.policy import closed, pending_after

Message = UserMessage | AssistantMessage | ToolMessage | SystemMessage


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
    twice = AssistantMessage(None, tool_calls=[_call("a"), _call("a")])
    errors = transcript_errors([twice, ToolMessage("x", "a"), ToolMessage("x", "a")])
    assert any("used twice" in e for e in errors)


def test_a_call_id_may_come_back_in_a_later_assistant_message() -> None:
    # Chat Completions binds results to the assistant message right before them; some
    # servers number calls per response (call_0 in every reply).
    ask = AssistantMessage(None, tool_calls=[_call("call_0")])
    answer = ToolMessage("x", "call_0")
    reused: list[Message] = [UserMessage("u"), ask, answer, ask, answer, AssistantMessage("a")]
    assert transcript_errors(reused) == []
    assert transcript_errors([*reused, UserMessage("v"), ask, answer]) == []


def test_synthetic_results_name_the_status() -> None:
    ask = AssistantMessage(None, tool_calls=[_call("a"), _call("b")])
    results = synthetic_results([ask, ToolMessage("x", "b")], "interrupted")
    assert results == [ToolMessage("Error: tool call interrupted", "a")]


# -- one rule: the agent's check and the store's agree, with a model of the rule -------------

_IDS = st.sampled_from(["a", "b", "c", ""])


@st.composite
def any_messages(draw: st.DrawFn) -> list[Message]:
    """Any sequence of messages over a few call ids: mostly calls answered as the rule
    wants (ids reused across replies included), sometimes broken in one of its ways."""
    out: list[Message] = []
    for _ in range(draw(st.integers(0, 8))):
        match draw(st.sampled_from(["user", "system", "text", "calls", "calls", "tool"])):
            case "user":
                out.append(UserMessage("u"))
            case "system":
                out.append(SystemMessage("s"))
            case "text":
                out.append(AssistantMessage("a"))
            case "calls":
                ids = draw(st.lists(_IDS, min_size=1, max_size=3))
                out.append(AssistantMessage(None, tool_calls=[_call(i) for i in ids]))
                if draw(st.booleans()):
                    answered = draw(st.permutations(ids))
                else:
                    answered = draw(st.lists(_IDS, max_size=4))
                out.extend(ToolMessage("r", i) for i in answered)
            case _:
                out.append(ToolMessage("r", draw(_IDS)))
    return out


def model_valid(messages: list[Message]) -> bool:
    """The rule, written out: within one assistant message call ids are distinct; its
    calls are answered once each by the tool messages right after it, before any other
    message and before the end; no other tool message exists. Ids may repeat across
    assistant messages."""
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if isinstance(message, ToolMessage):
            return False  # a result no call of the message before it is waiting for
        if not isinstance(message, AssistantMessage) or not message.tool_calls:
            continue
        ids = [call.id for call in message.tool_calls]
        if len(ids) != len(set(ids)):
            return False
        answers = []
        while i < len(messages) and isinstance(messages[i], ToolMessage):
            answers.append(messages[i].tool_call_id)  # type: ignore[union-attr]
            i += 1
        if sorted(answers) != sorted(ids):
            return False
    return True


def store_valid(messages: list[Message]) -> bool:
    try:
        closed(pending_after([], messages), "the log")
    except InvalidTranscript:
        return False
    return True


@given(any_messages())
def test_the_agent_and_the_store_apply_one_transcript_rule(messages: list[Message]) -> None:
    expected = model_valid(messages)
    assert (transcript_errors(messages) == []) == expected
    assert store_valid(messages) == expected
