"""Hypothesis properties of the pure tool policy: permissions, approval,
truncation, result rendering, cancelled results."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.tools import (
    UNSPECIFIED,
    ApprovalDecision,
    PermissionConfig,
    ToolCall,
    ToolResult,
    ToolStatus,
    cancelled_results,
    check_permissions,
    decide,
    render_value,
    truncate_tool_result,
)

perms = st.sampled_from(["Read", "Write", "Delete", "Network", "Shell", "FileSystem", "db:read"])
configs = st.builds(
    PermissionConfig, st.lists(perms, max_size=4), st.lists(perms, max_size=3), st.booleans()
)


@given(configs, st.lists(perms, max_size=4))
def test_permission_decision_matches_the_rules(
    config: PermissionConfig, declared: list[str]
) -> None:
    refused = check_permissions(config, declared)
    if any(p in config.denied for p in declared):
        assert refused == next(p for p in declared if p in config.denied)  # denied wins, first one
    elif not declared or not config.allowed:
        assert refused == (None if config.allow_unspecified else UNSPECIFIED)
    else:
        missing = [p for p in declared if p not in config.allowed]
        assert refused == (missing[0] if missing else None)


@given(configs, st.lists(perms, max_size=4), perms)
def test_denying_more_never_allows_more(
    config: PermissionConfig, declared: list[str], extra: str
) -> None:
    stricter = PermissionConfig(config.allowed, (*config.denied, extra), config.allow_unspecified)
    if check_permissions(config, declared) is not None:
        assert check_permissions(stricter, declared) is not None


@given(st.one_of(st.none(), st.builds(ApprovalDecision, st.booleans(), st.text())), st.booleans())
def test_approval_only_an_explicit_yes_allows(
    decision: ApprovalDecision | None, timed_out: bool
) -> None:
    effective = decide(decision, timed_out=timed_out)
    assert effective.allow == (decision is not None and decision.allow and not timed_out)
    assert not decide(decision, timed_out=False, failed="boom").allow


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
    calls = [ToolCall(f"c{i}", "t") for i in range(len(done_mask))]
    done = [
        ToolResult(c.id, "t", ToolStatus.OK, "x")
        for c, d in zip(calls, done_mask, strict=True)
        if d
    ]
    out = cancelled_results(calls, done)
    assert [r.call_id for r in out] == [c.id for c in calls]
    for r, d in zip(out, done_mask, strict=True):
        assert r.status is (ToolStatus.OK if d else ToolStatus.CANCELLED)
