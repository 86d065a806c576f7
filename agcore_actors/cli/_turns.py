"""Running one turn for a terminal: events to a view, approvals answered, Ctrl-C as cancel.

:class:`TurnRunner` submits a turn to the runtime's :class:`~agcore_actors.agent.SessionHost`
and feeds its events to a :class:`~agcore_actors.cli._render.View`, answering approvals
with its approver and MCP elicitations with its elicitor; it collects what
``--json`` prints (:class:`TurnOutcome`). :meth:`TurnRunner.interrupt` is what Ctrl-C
does: the first asks the session to cancel the turn (it ends with ``TurnCancelled``, the
turn committed, every tool call answered); a second one, if the turn has not ended yet,
leaves the event stream, which cancels the turn the same way.

:class:`LineReader` reads lines from stdin on one thread of its own (a blocking read,
so stdin and stdout keep their blocking mode), handing them to trio; a read that is
cancelled loses nothing: the line goes to the next read.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TextIO

import attrs
import msgspec
import trio

from ..agent import messages as am
from ..llm import ContentPart
from ._elicit_form import Elicitor
from ._render import View, call_line
from ._runtime import Runtime

__all__ = [
    "Approver",
    "LineReader",
    "TurnOutcome",
    "TurnRunner",
    "approve_all",
    "denied_without_terminal",
    "prompting",
]

#: Answers an approval request: (allow, reason).
Approver = Callable[[am.ApprovalRequested], Awaitable[tuple[bool, str]]]


@attrs.define
class TurnOutcome:
    """How a turn ended and what ``--json`` shows of it."""

    session: str
    result: am.TurnResult | None = None
    #: ``{"id", "name", "arguments", "status", "result"}`` per call, in call order.
    tool_calls: list[dict[str, Any]] = attrs.field(factory=list)

    @property
    def status(self) -> str:
        return self.result.status if self.result is not None else "cancelled"

    def as_json(self) -> dict[str, Any]:
        result = self.result
        out: dict[str, Any] = {
            "session": self.session,
            "text": result.text if result is not None else "",
            "tool_calls": self.tool_calls,
            "usage": msgspec.to_builtins(result.usage) if result is not None else {},
            "status": self.status,
        }
        if result is not None and result.status == "failed":
            out["error"] = {"kind": result.error_kind, "message": result.error}
        return out


class TurnRunner:
    """Runs turns of one runtime, one at a time (see the module doc)."""

    def __init__(
        self,
        runtime: Runtime,
        view: View,
        approver: Approver,
        *,
        local: bool = False,
        elicitor: Elicitor | None = None,
    ) -> None:
        self.runtime = runtime
        self.view = view
        self.approver = approver
        #: Answers an MCP server's elicitation; None declines each at once.
        self.elicitor = elicitor
        self.local = local
        self._session: str | None = None
        self._scope: trio.CancelScope | None = None
        self._approving: trio.CancelScope | None = None
        self._interrupts = 0

    @property
    def running(self) -> bool:
        return self._scope is not None

    async def run(self, session: str, text: str, parts: Sequence[ContentPart] = ()) -> TurnOutcome:
        """Run one turn (``parts``: images and files after ``text``); its outcome
        (``result`` None: left by a second interrupt)."""
        outcome = TurnOutcome(session)
        calls: dict[str, dict[str, Any]] = {}
        self._session, self._interrupts = session, 0
        self.view.begin(local=self.local)
        try:
            with trio.CancelScope() as self._scope:
                async with self.runtime.host.submit(session, text, parts=parts) as events:
                    async for event in events:
                        self.view.event(event)
                        await self._on(event, outcome, calls)
        finally:
            self._scope = None
            self._session = None
            self.view.end(outcome.result)
        return outcome

    async def _on(
        self, event: am.TurnEvent, outcome: TurnOutcome, calls: dict[str, dict[str, Any]]
    ) -> None:
        match event:
            case am.ToolCallStarted(call_id=call_id, name=name, arguments=arguments):
                call = {"id": call_id, "name": name, "arguments": arguments}
                calls[call_id] = call
                outcome.tool_calls.append(call)
            case am.ToolCallFinished(call_id=call_id, status=status, content=content):
                call = calls.setdefault(call_id, {"id": call_id, "name": event.name})
                call.update(status=status, result=content)
            case am.ApprovalRequested():
                self.view.pause()
                allow, reason = False, "the user cancelled the turn"
                with trio.CancelScope() as self._approving:  # Ctrl-C ends the question too
                    allow, reason = await self.approver(event)
                self._approving = None
                await self.runtime.host.approve(outcome.session, event.call_id, allow, reason)
            case am.ElicitationRequested(elicitation_id=elicitation_id):
                action: am.ElicitationAction = "decline"  # nobody to ask: not the timeout
                given: dict[str, object] | None = None
                if self.elicitor is not None:
                    self.view.pause()
                    action = "cancel"
                    with trio.CancelScope() as self._approving:  # Ctrl-C ends it too
                        action, given = await self.elicitor(event)
                    self._approving = None
                await self.runtime.host.answer_elicitation(
                    outcome.session, elicitation_id, action, given
                )
            case am.TurnCompleted(result=result) | am.TurnCancelled(result=result):
                outcome.result = result
            case am.TurnFailed(result=result):
                outcome.result = result
            case _:
                pass

    async def interrupt(self) -> bool:
        """Ctrl-C: cancel the running turn (see the module doc); False if none runs."""
        scope, session = self._scope, self._session
        if scope is None or session is None:
            return False
        self._interrupts += 1
        if self._approving is not None:
            self._approving.cancel()
        if self._interrupts == 1 and await self.runtime.host.cancel(session):
            return True
        scope.cancel()
        return True


def denied_without_terminal(reason: str) -> Approver:
    """An approver that denies every call, saying ``reason``."""

    async def deny(event: am.ApprovalRequested) -> tuple[bool, str]:
        return False, reason

    return deny


def approve_all() -> Approver:
    async def allow(event: am.ApprovalRequested) -> tuple[bool, str]:
        return True, ""

    return allow


def prompting(
    reader: LineReader, ask: Callable[[str], None], stream: TextIO | None = None
) -> Approver:
    """An approver that asks on the terminal (``ask`` shows the question) and reads the
    answer with ``reader``: ``y``/``yes`` allows, anything else (or end of input) denies."""

    async def prompt(event: am.ApprovalRequested) -> tuple[bool, str]:
        ask(f"allow {call_line(event.name, event.arguments)}? [y/N] ")
        line = await reader.readline()
        if line is not None and line.strip().lower() in ("y", "yes"):
            return True, ""
        return False, "the user said no"

    return prompt


class LineReader:
    """Lines of ``stream`` (stdin), read on a daemon thread (see the module doc)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdin
        self._send, self._receive = trio.open_memory_channel[str | None](16)
        self._thread: threading.Thread | None = None
        self._eof = False

    def _pump(self, token: trio.lowlevel.TrioToken) -> None:
        while True:
            try:
                line: str | None = self.stream.readline()
            except (OSError, ValueError):
                line = ""
            line = line or None  # "" is the end of input
            try:
                trio.from_thread.run(self._send.send, line, trio_token=token)
            except (trio.RunFinishedError, trio.Cancelled, trio.BrokenResourceError):
                return
            if line is None:
                return

    @property
    def at_eof(self) -> bool:
        """The end of input was read."""
        return self._eof

    async def readline(self) -> str | None:
        """The next line without its newline; None at the end of input."""
        if self._eof:
            return None
        if self._thread is None:
            token = trio.lowlevel.current_trio_token()
            self._thread = threading.Thread(
                target=self._pump, args=(token,), name="stdin", daemon=True
            )
            self._thread.start()
        line = await self._receive.receive()
        if line is None:
            self._eof = True
            return None
        return line.rstrip("\r\n")
