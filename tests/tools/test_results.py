"""Result shaping: truncation on a character boundary, rendering, cancelled results."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.tools import (
    ToolCall,
    ToolResult,
    ToolStatus,
)
from agcore_actors.tools.policy import (
    cancelled_results,
    render_value,
    truncate_tool_result,
)


def test_truncate_tool_result_short() -> None:
    assert truncate_tool_result("short text", 100) == "short text"


def test_truncate_tool_result_long() -> None:
    out = truncate_tool_result("a" * 1000, 50)
    assert len(out) < 1000 and "[... truncated, original size: 1000 bytes ...]" in out


def test_truncate_tool_result_chinese_chars() -> None:
    out = truncate_tool_result("中" * 100, 50)
    assert out.startswith("中") and out.split("\n\n")[0] == "中" * 16  # 48 bytes


@given(st.text(), st.integers(min_value=1, max_value=300))
def test_truncation_is_a_boundary_safe_prefix(text: str, cap: int) -> None:
    out = truncate_tool_result(text, cap)
    size = len(text.encode())
    if size <= cap:
        assert out == text
    else:
        head, marker = out.rsplit("\n\n[... truncated", 1)
        assert text.startswith(head)
        assert len(head.encode()) <= cap
        assert cap - len(head.encode()) < 4  # cut at most one character short
        assert marker == f", original size: {size} bytes ...]"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
)


@given(json_values)
def test_render_value_is_text_or_compact_json(value: object) -> None:
    out = render_value(value)
    if isinstance(value, str):
        assert out == value
    else:
        assert msgspec.json.decode(out) == value


@given(st.lists(st.booleans(), max_size=8))
def test_cancelled_results_answer_every_call(done_mask: list[bool]) -> None:
    calls = [ToolCall(id=f"c{i}", name="t") for i in range(len(done_mask))]
    done = [
        ToolResult(call_id=c.id, name="t", status=ToolStatus.OK, content="x") if d else None
        for c, d in zip(calls, done_mask, strict=True)
    ]
    out = cancelled_results(calls, done)
    assert [r.call_id for r in out] == [c.id for c in calls]
    for r, d in zip(out, done_mask, strict=True):
        assert r.status is (ToolStatus.OK if d else ToolStatus.CANCELLED)


@pytest.mark.parametrize("ids", [["", ""], ["A", "A"], ["A", "", "A"]])
def test_cancelled_results_match_results_by_position(ids: list[str]) -> None:
    calls = [ToolCall(id=cid, name=f"t{i}") for i, cid in enumerate(ids)]
    done = [
        ToolResult(call_id=c.id, name=c.name, status=ToolStatus.OK, content=f"r{i}")
        for i, c in enumerate(calls)
    ]
    out = cancelled_results(calls, done)
    assert [(r.name, r.content) for r in out] == [(c.name, f"r{i}") for i, c in enumerate(calls)]
    partly = cancelled_results(calls, [done[0]])
    assert partly[0] is done[0]
    assert [r.status for r in partly[1:]] == [ToolStatus.CANCELLED] * (len(ids) - 1)
    assert [r.name for r in partly] == [c.name for c in calls]


def test_cancelled_results_refuse_a_result_of_another_call() -> None:
    calls = [ToolCall(id="a", name="t"), ToolCall(id="b", name="t")]
    wrong = ToolResult(call_id="b", name="t", status=ToolStatus.OK, content="x")
    with pytest.raises(ValueError):
        cancelled_results(calls, [wrong])
