"""Compaction steps as pure functions: property tests and the seed's examples."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.context.policy import (
    OMITTED,
    PRUNED,
    apply_summary,
    cut_before,
    estimate_tokens,
    keep_tool_results,
    microcompact,
    plan_summary,
    render_transcript,
    summary_step,
)
from agcore_actors.llm import (
    AssistantMessage,
    FunctionCall,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
    content_text,
)
from tests.context.conversations import conversations, pairing_errors, system_prefix

keeps = st.integers(0, 8)


def check_invariants(before: list[Message], after: list[Message], keep_recent: int) -> None:
    assert pairing_errors(after) == []
    assert system_prefix(after) == system_prefix(before)
    k = min(keep_recent, len(before))
    assert after[len(after) - k :] == before[len(before) - k :]
    assert estimate_tokens(after) <= estimate_tokens(before)


@given(conversations(), keeps)
def test_microcompact_invariants(conv: list[Message], keep_recent: int) -> None:
    assert pairing_errors(conv) == []
    out = microcompact(conv, keep_recent)
    check_invariants(conv, out.messages, keep_recent)
    assert len(out.messages) == len(conv)
    assert out.tokens_before == estimate_tokens(conv)
    assert out.tokens_after == estimate_tokens(out.messages)
    # Only old tool results changed, and only into the placeholder.
    for i, (a, b) in enumerate(zip(conv, out.messages, strict=True)):
        if a != b:
            assert isinstance(a, ToolMessage) and i < len(conv) - keep_recent
            assert b == ToolMessage(PRUNED, a.tool_call_id)
    # Idempotent: a second pass changes nothing (the seed counted them again).
    assert microcompact(out.messages, keep_recent).changed == 0


@given(conversations(), st.integers(-1, 5), keeps, st.booleans())
def test_keep_tool_results_invariants(
    conv: list[Message], keep: int, keep_recent: int, include_user: bool
) -> None:
    out = keep_tool_results(conv, keep, keep_recent=keep_recent, include_user=include_user)
    check_invariants(conv, out.messages, keep_recent)
    if keep == -1:
        assert out.messages == conv and out.changed == 0
    candidates = [
        i
        for i, m in enumerate(conv)
        if isinstance(m, ToolMessage) or (include_user and isinstance(m, UserMessage))
    ]
    if keep >= 0:
        for i in candidates[len(candidates) - keep :] if keep else []:
            assert out.messages[i] == conv[i]
    if include_user and candidates:
        assert out.messages[candidates[0]] == conv[candidates[0]]


@given(conversations(), keeps, st.integers(0, 3), st.text(max_size=300))
def test_summary_step_invariants(
    conv: list[Message], keep_recent: int, protect_head: int, summary: str
) -> None:
    out = summary_step(conv, summary, keep_recent=keep_recent, protect_head=protect_head)
    check_invariants(conv, out.messages, keep_recent)
    if out.changed:
        assert estimate_tokens(out.messages) < estimate_tokens(conv)
        assert any(summary.strip() in content_text(m.content) for m in out.messages)


@given(conversations(), keeps)
def test_safe_cuts_never_split_a_pair(conv: list[Message], keep_recent: int) -> None:
    cut = cut_before(conv, len(conv) - keep_recent)
    assert pairing_errors(conv[cut:]) == []
    assert pairing_errors(conv[:cut]) == []


def tool_round(n: int, result: str) -> list[Message]:
    call = ToolCall(f"call_{n}", FunctionCall("add", '{"a": 1, "b": 2}'))
    return [AssistantMessage("", tool_calls=[call]), ToolMessage(result, f"call_{n}")]


def test_microcompact_seed_examples() -> None:
    conv: list[Message] = [UserMessage("hi"), *tool_round(1, "result " * 50)]
    # len <= keep: nothing to do.
    assert microcompact(conv, 6).changed == 0
    long = [UserMessage("task"), *tool_round(1, "r" * 400), *tool_round(2, "s" * 400)]
    long += [UserMessage("more")] * 6
    out = microcompact(long, 6)
    assert out.changed == 2
    pruned = [m for m in out.messages if isinstance(m, ToolMessage)]
    assert [(content_text(m.content), m.tool_call_id) for m in pruned] == [
        (PRUNED, "call_1"),
        (PRUNED, "call_2"),
    ]
    assert out.messages[0] == UserMessage("task")


def test_microcompact_keeps_short_results_that_would_grow() -> None:
    conv: list[Message] = [UserMessage("q"), *tool_round(1, "ok"), *[UserMessage("x")] * 6]
    out = microcompact(conv, 6)
    assert out.changed == 0 and out.messages == conv


def test_keep_tool_result_seed_002() -> None:
    """MiroFlow's convention: first user (the task) kept, the last N candidates kept."""
    conv: list[Message] = [SystemMessage("sys"), UserMessage("the task " * 20)]
    for n in range(5):
        conv.append(AssistantMessage(f"step {n}"))
        conv.append(UserMessage(f"tool feedback number {n} " * 20))
    out = keep_tool_results(conv, 2, include_user=True)
    texts = [content_text(m.content) for m in out.messages if isinstance(m, UserMessage)]
    assert texts[0].startswith("the task")
    assert texts[1:4] == [OMITTED] * 3
    assert texts[4].startswith("tool feedback number 3")
    assert texts[5].startswith("tool feedback number 4")
    assert keep_tool_results(conv, -1, include_user=True).messages == conv
    only_task = keep_tool_results(conv, 0, include_user=True).messages
    assert [content_text(m.content) for m in only_task if isinstance(m, UserMessage)][1:] == [
        OMITTED
    ] * 5


def test_keep_tool_result_placeholder_in_parts_content() -> None:
    conv: list[Message] = [UserMessage("task")]
    conv += [AssistantMessage("", tool_calls=[ToolCall("c1", FunctionCall("f", "{}"))])]
    conv += [ToolMessage([TextPart("big " * 100)], "c1"), *tool_round(2, "y " * 100)]
    out = keep_tool_results(conv, 1)
    assert out.messages[2] == ToolMessage(OMITTED, "c1")
    assert out.messages[4] == conv[4]


def test_summary_plan_widens_to_whole_blocks() -> None:
    conv: list[Message] = [SystemMessage("sys"), UserMessage("task")]
    for n in range(4):
        conv += tool_round(n, f"result {n} " * 30)
    conv.append(UserMessage("and now?"))
    # keep_recent=2 would start the tail at the last tool result: widened to its call.
    plan = plan_summary(conv, keep_recent=2, protect_head=1)
    assert plan is not None
    assert (plan.head_end, plan.tail_start) == (2, len(conv) - 3)
    out = apply_summary(conv, plan, "Goal: add numbers.")
    assert out[:2] == conv[:2]
    assert content_text(out[2].content).startswith("Summary of the earlier conversation (6")
    assert out[3:] == conv[-3:]
    assert pairing_errors(out) == []


def test_render_transcript_is_bounded() -> None:
    conv: list[Message] = []
    for n in range(200):
        conv += tool_round(n, f"value {n} " + "z" * 3000)
    text = render_transcript(conv, max_tokens=2000, message_chars=500)
    assert estimate_tokens([UserMessage(text)]) <= 2100
    assert "messages omitted" in text
    assert "tool result [id call_0]" in text  # the start
    assert "tool result [id call_199]" in text  # the end
    assert "characters cut" in text
