"""What a running turn's tool calls ask of the person behind a :class:`~._session.Session`:
approvals (an ``ApprovalRequest`` from the session's approver), MCP elicitations
(``Elicit``) and their answers (``Approve``, ``AnswerElicitation``), and progress reports
(``ReportProgress``). :class:`SessionAsks` is a base class of the Session, between the
state (``_session_control``) and suspend/resume (``_session_resume``).

Semantics: each ask is shown as an event of the running turn
(:class:`~.messages.ApprovalRequested`, :class:`~.messages.ElicitationRequested`,
:class:`~.messages.ToolCallProgress`) and waits up to the config's ``approval_timeout``
for its answer; unanswered in time, an approval is denied and an elicitation declined.
With no turn running, an approval is denied, an elicitation declined and a progress
report dropped. A resumed turn's approval is the answer it was resumed with. With
``approvals="suspend"`` (``elicitations="suspend"`` for an elicitation with a call id)
the ask does not wait: it is recorded for the turn to suspend on (see
``_session_resume``). An ``Approve`` or ``AnswerElicitation`` answers True when its ask
was waiting, else False and changes nothing.

Cancellation: cancelling the asker of an approval or elicitation (the tool call) withdraws
it: it no longer waits, and a later answer to it is False.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import msgspec
import trio

from .._ids import new_id
from ..tools import ApprovalDecision, ApprovalRequest
from . import messages as am
from ._session_control import SessionControl, _Running


class SessionAsks(SessionControl):
    """The asks of a :class:`~._session.Session`'s running turn (see the module doc)."""

    __slots__ = ()

    if TYPE_CHECKING:  # SessionResume's (declared for the checker, not defined here)

        async def _suspend_elicitation(
            self, running: _Running, msg: am.Elicit
        ) -> am.ElicitationAnswer: ...

    async def _on_approval_request(self, request: ApprovalRequest) -> ApprovalDecision:
        running = self._running()
        if running is None:
            return ApprovalDecision(False, "no turn is running in this session")
        given = running.turn.answers.get(request.call_id)
        if given is not None:  # a resumed turn: the answer it was resumed with
            return ApprovalDecision(given.allow, given.reason or ("" if given.allow else "denied"))
        arguments = json.dumps(request.arguments, ensure_ascii=False)
        if self.settings.config.approvals == "suspend":
            # Not run now: the turn suspends after this round and waits for AnswerTurn.
            running.turn.suspended[request.call_id] = am.AwaitingCall(
                call_id=request.call_id, name=request.tool, arguments=arguments
            )
            await running.emit(
                am.ApprovalRequested(
                    call_id=request.call_id,
                    name=request.tool,
                    arguments=arguments,
                    timeout=0.0,
                    suspends=True,
                )
            )
            return ApprovalDecision(False, "suspended until answered")
        event = trio.Event()
        answer: list[ApprovalDecision] = []
        running.approvals[request.call_id] = (event, answer)
        try:
            await running.emit(
                am.ApprovalRequested(
                    call_id=request.call_id,
                    name=request.tool,
                    arguments=arguments,
                    timeout=self.settings.config.approval_timeout,
                )
            )
            with trio.move_on_after(self.settings.config.approval_timeout):
                await event.wait()
        finally:
            running.approvals.pop(request.call_id, None)
        return answer[0] if answer else ApprovalDecision(False, "approval timed out")

    def _on_approve(self, msg: am.Approve) -> bool:
        running = self._running()
        pending = running.approvals.get(msg.call_id) if running is not None else None
        if pending is None:
            return False
        event, answer = pending
        answer.append(ApprovalDecision(msg.allow, msg.reason or ("" if msg.allow else "denied")))
        event.set()
        return True

    async def _on_elicit(self, msg: am.Elicit) -> am.ElicitationAnswer:
        running = self._running()
        if running is None:
            return am.ElicitationAnswer(action="decline")
        if msg.call_id and self.settings.config.elicitations == "suspend":
            return await self._suspend_elicitation(running, msg)
        event = trio.Event()
        answer: list[am.ElicitationAnswer] = []
        elicitation_id = new_id()
        running.elicitations[elicitation_id] = (event, answer)
        timeout = self.settings.config.approval_timeout
        try:
            await running.emit(
                am.ElicitationRequested(
                    elicitation_id=elicitation_id,
                    server=msg.server,
                    message=msg.message,
                    schema=json.dumps(msg.schema, ensure_ascii=False),
                    timeout=timeout,
                )
            )
            with trio.move_on_after(timeout):
                await event.wait()
        finally:
            running.elicitations.pop(elicitation_id, None)
        return answer[0] if answer else am.ElicitationAnswer(action="decline")

    async def _on_report_progress(self, msg: am.ReportProgress) -> None:
        running = self._running()
        if running is None:
            return
        fields = msgspec.structs.asdict(msg)
        await running.emit(am.ToolCallProgress(**fields))

    def _on_answer_elicitation(self, msg: am.AnswerElicitation) -> bool:
        running = self._running()
        pending = running.elicitations.get(msg.elicitation_id) if running is not None else None
        if pending is None:
            return False
        event, answer = pending
        content = msg.content if msg.action == "accept" else None
        answer.append(am.ElicitationAnswer(action=msg.action, content=content))
        event.set()
        return True
