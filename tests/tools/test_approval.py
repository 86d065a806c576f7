"""Approval: only an explicit yes, in time, lets a call run."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agcore_actors.tools import ApprovalDecision
from agcore_actors.tools.policy import decide_approval


@given(st.one_of(st.none(), st.builds(ApprovalDecision, st.booleans(), st.text())), st.booleans())
def test_approval_only_an_explicit_yes_allows(
    decision: ApprovalDecision | None, timed_out: bool
) -> None:
    effective = decide_approval(decision, timed_out=timed_out)
    assert effective.allow == (decision is not None and decision.allow and not timed_out)
    assert not decide_approval(decision, timed_out=False, failed="boom").allow
