"""Human-in-the-loop approval of tool calls, as a pure rule.

A tool with ``requires_approval`` runs only after an *approver* says yes. An approver is
either an async callback ``(ApprovalRequest) -> ApprovalDecision`` or the ref of an actor
that answers the :class:`~agcore_actors.tools.messages.ApprovalRequest` message. No answer
within the approval timeout counts as a denial, and so does a failing approver and a
missing one: :func:`decide_approval` is that rule.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..actor import ActorRef
from .messages import ApprovalDecision, ApprovalRequest

ApprovalCallback = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
Approver = ApprovalCallback | ActorRef[ApprovalRequest]

#: Seconds an approver gets before the call is denied.
DEFAULT_APPROVAL_TIMEOUT = 300.0


def decide_approval(
    decision: ApprovalDecision | None, *, timed_out: bool, failed: str | None = None
) -> ApprovalDecision:
    """The effective decision: an explicit answer, else a denial saying why."""
    if timed_out:
        return ApprovalDecision(False, "approval timed out")
    if failed is not None:
        return ApprovalDecision(False, f"approval failed: {failed}")
    if decision is None:
        return ApprovalDecision(False, "no approver is configured")
    return decision
