"""Hypothesis strategies for well-formed conversations, and invariant checks."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from agcore_actors.context.policy import system_prefix_len
from agcore_actors.llm import (
    AssistantMessage,
    ContentPart,
    DeveloperMessage,
    FunctionCall,
    ImagePart,
    ImageUrl,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)

# English, CJK, symbols, emoji, empty: the estimate must hold for all of them.
texts = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "",
            "ok",
            "[pruned]",
            "你好\uff0c世界\u3002今天天气很好\u3002",
            "x" * 300,
            "a b c\n\n    d",
        ]
    ),
    st.text(alphabet='abc 中文{}":,', min_size=20, max_size=200),
)


@st.composite
def contents(draw: st.DrawFn) -> str | list[ContentPart]:
    if draw(st.booleans()):
        return draw(texts)
    parts: list[ContentPart] = [TextPart(draw(texts))]
    if draw(st.booleans()):
        parts.append(ImagePart(ImageUrl("data:image/png;base64,AAAA", detail="low")))
    return parts


@st.composite
def blocks(draw: st.DrawFn, block: int) -> list[Message]:
    kind = draw(st.sampled_from(["user", "assistant", "tools", "tools"]))
    if kind == "user":
        return [UserMessage(draw(contents()))]
    if kind == "assistant":
        return [AssistantMessage(draw(texts))]
    n = draw(st.integers(1, 3))
    call_ids = [f"call_{block}_{k}" for k in range(n)]
    calls = [ToolCall(cid, FunctionCall("lookup", draw(texts))) for cid in call_ids]
    order = draw(st.permutations(call_ids))
    results: list[Message] = [ToolMessage(draw(contents()), cid) for cid in order]
    text = draw(st.sampled_from(["", "Let me check."]))
    return [AssistantMessage(text, tool_calls=calls), *results]


@st.composite
def conversations(draw: st.DrawFn, max_blocks: int = 14) -> list[Message]:
    prefix: list[Message] = []
    if draw(st.booleans()):
        prefix.append(SystemMessage(draw(texts)))
    if draw(st.booleans()):
        prefix.append(DeveloperMessage("Be brief."))
    body: list[Message] = []
    for block in range(draw(st.integers(0, max_blocks))):
        body.extend(draw(blocks(block)))
    return prefix + body


def pairing_errors(messages: Sequence[Message]) -> list[str]:
    """Every tool result directly follows (through tool messages) the assistant
    message that made its call, once; every call is answered."""
    errors: list[str] = []
    open_ids: set[str] = set()
    answered: set[str] = set()
    for i, msg in enumerate(messages):
        if isinstance(msg, ToolMessage):
            if msg.tool_call_id not in open_ids:
                errors.append(f"[{i}] result {msg.tool_call_id} without its call")
            elif msg.tool_call_id in answered:
                errors.append(f"[{i}] result {msg.tool_call_id} twice")
            answered.add(msg.tool_call_id)
            continue
        if open_ids - answered:
            errors.append(f"[{i}] calls {sorted(open_ids - answered)} unanswered")
        open_ids, answered = set(), set()
        if isinstance(msg, AssistantMessage) and msg.tool_calls:
            open_ids = {c.id for c in msg.tool_calls}
    if open_ids - answered:
        errors.append(f"calls {sorted(open_ids - answered)} unanswered at the end")
    return errors


def system_prefix(messages: Sequence[Message]) -> list[Message]:
    return list(messages[: system_prefix_len(messages)])
