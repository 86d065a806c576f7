"""Human-in-the-loop approval of tool calls.

A tool with ``requires_approval`` runs only after an *approver* says yes.
An approver is either an async callback ``(ApprovalRequest) -> ApprovalDecision``
or the ref of an actor that answers the :class:`ApprovalRequest` message.
No answer within the approval timeout counts as a denial, and so does a
failing approver and a missing one. :func:`decide` is that rule, pure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ..actor import ActorRef, Request


class ApprovalDecision(msgspec.Struct, frozen=True):
    allow: bool
    reason: str = ""


class ApprovalRequest(Request[ApprovalDecision], frozen=True, tag=True):
    """Asked of an approver actor: may ``tool`` run with ``arguments``?"""

    call_id: str
    tool: str
    arguments: Any
    session_id: str = ""
    description: str = ""


ApprovalCallback = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]
Approver = ApprovalCallback | ActorRef[ApprovalRequest]

#: Seconds an approver gets before the call is denied.
DEFAULT_APPROVAL_TIMEOUT = 300.0


def decide(
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
