"""ToolExecutor: the actor that runs a batch of tool calls in parallel.

Contract (see :mod:`.messages` for the protocol):

- every call of an ``ExecuteTools`` gets exactly one :class:`ToolResult`,
  in call order, whatever happens: unknown tool, invalid arguments,
  permission or approval denied, failure, timeout, cancellation;
- each call runs under its own timeout (the tool's ``timeout``, else the
  configured default, the seed's 60 s); approval, when a tool needs it,
  is waited for first under its own timeout and is not counted in the
  tool's;
- ``CancelBatch`` cancels the running calls of a batch, and the batch still
  replies (unfinished calls ``cancelled``);
- if the asker itself is cancelled, the handler is cancelled with it:
  every running call is cancelled, sync tools' worker threads are abandoned
  (their ``ctx.cancelled`` turns true), and when the cancellation has
  finished unwinding no task of the batch is left. The results (finished
  calls keep theirs) are recorded for ``FetchResults``; the most recent
  ``max_recorded_batches`` batches are kept.
"""

from __future__ import annotations

import contextlib
import math
from collections import OrderedDict
from typing import Any, ClassVar

import attrs
import trio

from ..actor import Actor, ActorRef, ActorStopped, MailboxFull
from ._approval import (
    DEFAULT_APPROVAL_TIMEOUT,
    ApprovalDecision,
    ApprovalRequest,
    Approver,
    decide,
)
from ._errors import (
    BatchInProgress,
    ExecutionFailed,
    PermissionDenied,
    ToolError,
    ToolNotFound,
    ToolTimeout,
)
from ._permission import PermissionChecker
from ._registry import ToolRegistry
from ._results import (
    DEFAULT_MAX_RESULT_BYTES,
    DEFAULT_TOOL_TIMEOUT,
    cancelled_result,
    error_result,
    ok_result,
    parse_arguments,
)
from ._tool import CancelToken, Tool, ToolContext
from .messages import (
    CancelBatch,
    ExecuteTools,
    FetchResults,
    ToolCall,
    ToolExecutorMsg,
    ToolProgress,
    ToolResult,
    ToolResults,
)


@attrs.frozen
class ExecutorConfig:
    #: Per-call timeout when the tool sets none; None or 0 = no timeout.
    default_timeout: float | None = DEFAULT_TOOL_TIMEOUT
    max_result_bytes: int = attrs.field(
        default=DEFAULT_MAX_RESULT_BYTES, validator=attrs.validators.ge(1)
    )
    approval_timeout: float = DEFAULT_APPROVAL_TIMEOUT
    max_recorded_batches: int = attrs.field(default=256, validator=attrs.validators.ge(1))


def effective_timeout(tool_timeout: float | None, default: float | None) -> float:
    """Seconds a call may run (``inf``: unbounded); a tool's own value wins."""
    value = tool_timeout if tool_timeout is not None else default
    if value is None or value <= 0:
        return math.inf
    return value


class ToolExecutor(Actor[ToolExecutorMsg]):
    """Runs tools from ``registry``; see the module docstring for the contract.

    ``checker`` (None: no permission checks, as in the seed) and ``approver``
    gate calls; ``events`` receives :class:`ToolProgress` (told without
    waiting; dropped when its mailbox is full).
    """

    max_concurrency: ClassVar[int] = 64
    expected_errors = (BatchInProgress,)

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        checker: PermissionChecker | None = None,
        approver: Approver | None = None,
        events: ActorRef[ToolProgress] | None = None,
        config: ExecutorConfig | None = None,
    ) -> None:
        self.registry = registry
        self.checker = checker
        self.approver = approver
        self.events = events
        self.config = config or ExecutorConfig()
        self._running: dict[str, trio.CancelScope] = {}
        self._recorded: OrderedDict[str, ToolResults] = OrderedDict()

    async def handle(self, msg: ToolExecutorMsg) -> ToolResults | None:
        match msg:
            case ExecuteTools():
                return await self._execute_batch(msg)
            case CancelBatch(batch_id=batch_id):
                scope = self._running.get(batch_id)
                if scope is not None:
                    scope.cancel()
                return None
            case FetchResults(batch_id=batch_id):
                return self._recorded.get(batch_id)

    async def _execute_batch(self, msg: ExecuteTools) -> ToolResults:
        if msg.batch_id in self._running:
            raise BatchInProgress(msg.batch_id)
        results: list[ToolResult | None] = [None] * len(msg.calls)
        try:
            with trio.CancelScope() as batch_scope:
                self._running[msg.batch_id] = batch_scope
                async with trio.open_nursery() as nursery:
                    for index, call in enumerate(msg.calls):
                        nursery.start_soon(self._run_call, msg, index, call, results)
        finally:
            # Runs on cancellation of the asker too: no await here.
            self._running.pop(msg.batch_id, None)
            final = ToolResults(
                msg.batch_id,
                [
                    r if r is not None else cancelled_result(c)
                    for r, c in zip(results, msg.calls, strict=True)
                ],
            )
            self._recorded[msg.batch_id] = final
            self._recorded.move_to_end(msg.batch_id)
            while len(self._recorded) > self.config.max_recorded_batches:
                self._recorded.popitem(last=False)
        return final

    async def _run_call(
        self, msg: ExecuteTools, index: int, call: ToolCall, results: list[ToolResult | None]
    ) -> None:
        cap = self.config.max_result_bytes
        token = CancelToken()
        ctx = ToolContext(
            session_id=msg.session_id,
            trace_id=msg.trace_id,
            call_id=call.id,
            cancel_token=token,
            report=self._reporter(msg.batch_id, call),
        )
        try:
            tool, args = await self._admit(msg, call)
            timeout = effective_timeout(tool.timeout, self.config.default_timeout)
            with trio.move_on_after(timeout) as scope:
                try:
                    value = await tool.call(args, ctx)
                finally:
                    if scope.cancel_called:
                        token.cancel()
            if scope.cancel_called and trio.current_time() >= scope.deadline:
                raise ToolTimeout(call.name, timeout)
            results[index] = ok_result(call, value, cap)
        except ToolError as exc:
            results[index] = error_result(call, exc, cap)
        except trio.Cancelled:
            token.cancel()
            results[index] = cancelled_result(call)
            raise
        except Exception as exc:
            failure = ExecutionFailed(call.name, f"{type(exc).__name__}: {exc}")
            results[index] = error_result(call, failure, cap)

    async def _admit(self, msg: ExecuteTools, call: ToolCall) -> tuple[Tool, Any]:
        """The tool and decoded arguments, or the ToolError that refuses the call."""
        tool = self.registry.get(call.name)
        if tool is None:
            raise ToolNotFound(call.name)
        args = parse_arguments(call)
        if self.checker is not None:
            self.checker.check(call.name, tool.required_permissions)
        if tool.requires_approval:
            request = ApprovalRequest(call.id, call.name, args, msg.session_id, tool.description)
            decision = await self._approve(request)
            if not decision.allow:
                raise PermissionDenied(
                    call.name, "Approval", f"was not approved: {decision.reason}"
                )
        return tool, args

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        if self.approver is None:
            return decide(None, timed_out=False)
        answer: ApprovalDecision | None = None
        failed: str | None = None
        with trio.move_on_after(self.config.approval_timeout) as scope:
            try:
                if isinstance(self.approver, ActorRef):
                    answer = await self.approver.ask(request)
                else:
                    answer = await self.approver(request)
            except Exception as exc:
                failed = f"{type(exc).__name__}: {exc}"
        return decide(answer, timed_out=scope.cancelled_caught, failed=failed)

    def _reporter(self, batch_id: str, call: ToolCall) -> Any:
        events = self.events

        def report(progress: float, total: float | None, message: str | None) -> None:
            if events is None:
                return
            # Progress is advisory: never block or fail a tool over it.
            with contextlib.suppress(MailboxFull, ActorStopped):
                events.tell_nowait(
                    ToolProgress(batch_id, call.id, call.name, progress, total, message)
                )

        return report
